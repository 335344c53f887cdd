#!/usr/bin/env bash
# What a module costs on the small-value benchmark: Keel with no module
# against Keel with the module loaded, measured with redis-benchmark.
#
#   bench/module_cost.sh [--module PATH] [--config "name value"]... [--quick]
#
# For -P 16 and -P 1, each of SET and GET runs as
#   redis-benchmark -c 50 -d 64 -P <p> --threads 1 -t <test> -n <n>
# against both servers, alternating (none, module, module, none, ...) --reps
# times; the median requests/s and the median server CPU time per request
# (the main thread's time on a CPU, user + system, from /proc/PID/schedstat:
# less sensitive to other load than requests/s) are compared. The module's
# cost is printed as a percentage: requests/s lost, and CPU time per request
# added. Target for payload-metrics: at most 2%.
#
# Options:
#   --keel PATH     keel-server (default: build/release/keel-server)
#   --module PATH   the module (default: <keel dir>/modules/payload-metrics.so)
#   --config "N V"  a config line for the module's server (repeatable), e.g.
#                   --config "payload-metrics.prometheus-port 9121"
#   --reps N        runs per server and row, median taken (default 3)
#   --quick         a tenth of the requests (smoke run)
#   --out FILE      also write the markdown table to FILE
#   --callgrind     instead: instructions per request under callgrind
#                   (deterministic, immune to load; see bench/callgrind.sh):
#                   redis-benchmark -P 16 -c 1 -d 64 -t set|get, for N1 and
#                   N2 requests, (Ir(N2) - Ir(N1)) / (N2 - N1), no module vs
#                   module; --n1/--n2 set N1 and N2 (default 20000, 120000)
#   --collect FN    with --callgrind: count only inside FN (callgrind
#                   --toggle-collect), e.g. client_execute: a command's path
#                   from lookup to observers, without the event loop, the
#                   cron and the allocator's background work, whose share of
#                   a run varies with its duration (a few tens of Ir/request)
#
# Both servers get bench/lib.sh's common arguments (no persistence, one I/O
# thread, quiet log) and stay up for the whole run. Nothing is built here.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
MODULE=""
CONFIGS=()
REPS=3
QUICK=0
OUT=""
CALLGRIND=0
COLLECT=""
N1=20000
N2=120000

usage() { sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --module) MODULE=${2:?--module needs a path}; shift 2 ;;
        --config) CONFIGS+=("${2:?--config needs \"name value\"}"); shift 2 ;;
        --reps) REPS=${2:?--reps needs a number}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --callgrind) CALLGRIND=1; shift ;;
        --n1) N1=${2:?}; shift 2 ;;
        --n2) N2=${2:?}; shift 2 ;;
        --collect) COLLECT=${2:?--collect needs a function name}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

[ -n "$MODULE" ] || MODULE="$(dirname "$KEEL")/modules/payload-metrics.so"
[ -x "$KEEL" ] || die "$KEEL not found; build it first (cmake --build <dir> --target keel-server)"
[ -f "$MODULE" ] || die "$MODULE not found; build the module first"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir

# start_keel NAME [extra args...]: like lib.sh's start_server, with extra
# arguments after the common ones; sets SERVER_PID and SERVER_PORT.
start_keel() {
    local name=$1 dir="$BENCH_TMP/$1" args=() _; shift
    mkdir -p "$dir"
    for _ in 1 2 3; do
        pick_port
        mapfile -d '' args < <(common_server_args "$PORT" "$dir")
        "$KEEL" "${args[@]}" "$@" >"$dir/stdout.log" 2>&1 </dev/null &
        SERVER_PID=$!
        SERVER_PORT=$PORT
        BENCH_PIDS+=("$SERVER_PID")
        wait_ready "$SERVER_PID" "$SERVER_PORT" 15 && return 0
        stop_pid "$SERVER_PID" 5
        forget_pid "$SERVER_PID"
        grep -qi 'address already in use' "$dir/stdout.log" "$dir/server.log" 2>/dev/null || break
    done
    tail -n 20 "$dir/stdout.log" "$dir/server.log" >&2 2>/dev/null || true
    die "$name did not come up"
}

module_args=(--loadmodule "$MODULE")
for c in "${CONFIGS[@]}"; do
    read -r cname cvalue <<<"$c"
    module_args+=("--$cname" "$cvalue")
done

# ---- --callgrind: instructions per request ----

# measure_ir NAME TEST N [server args...]: sets IR to the total Ir of one
# server life (under callgrind) serving N pipelined requests.
measure_ir() {
    local name=$1 t=$2 n=$3 pid port dir cgout; shift 3
    dir="$BENCH_TMP/$name-$t-$n"
    cgout="$dir/callgrind.out"
    mkdir -p "$dir"
    pick_port
    port=$PORT
    mapfile -d '' args < <(common_server_args "$port" "$dir")
    # jemalloc's time-based purging runs at different points of a slowed-down
    # run: turned off, so both servers count the same allocator work.
    MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
        valgrind --tool=callgrind --callgrind-out-file="$cgout" ${COLLECT:+--toggle-collect="$COLLECT"} \
        -- "$KEEL" "${args[@]}" "$@" \
        >"$dir/stdout.log" 2>&1 </dev/null &
    pid=$!
    BENCH_PIDS+=("$pid")
    wait_ready "$pid" "$port" 120 || die "$name did not start under valgrind"
    [ "$(head -c 64 /dev/zero | tr '\0' x | redis-cli -p "$port" -x set key:__rand_int__)" = OK ] ||
        die "could not SET the test key on $name"
    run_client 600 "$dir/benchmark.csv" "$dir/benchmark.err" \
        redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -c 1 -t "$t" -n "$n" -d 64 --threads 1 --csv ||
        die "redis-benchmark failed against $name under valgrind"
    redis-cli -p "$port" shutdown >/dev/null 2>&1 || true
    callgrind_total "$name" "$pid" "$cgout"
}

if [ "$CALLGRIND" = 1 ]; then
    command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
    declare -A PER
    for t in set get; do
        for name in none module; do
            extra=()
            [ "$name" = module ] && extra=("${module_args[@]}")
            printf 'callgrind: %-6s %-3s ... ' "$name" "$t"
            measure_ir "$name" "$t" "$N1" "${extra[@]}"; ir1=$IR
            measure_ir "$name" "$t" "$N2" "${extra[@]}"; ir2=$IR
            PER["$name,$t"]=$(awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" \
                'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')
            echo "${PER["$name,$t"]} Ir/request"
        done
    done
    {
        echo
        echo "Module cost in instructions: $(basename "$MODULE") ${CONFIGS[*]:+(${CONFIGS[*]})};" \
            "callgrind${COLLECT:+ (only inside $COLLECT)}, redis-benchmark -P 16 -c 1 -d 64," \
            "N1 = $N1, N2 = $N2"
        echo
        echo "| test | Ir/request none | Ir/request module | change |"
        echo "| --- | ---: | ---: | ---: |"
        for t in set get; do
            awk -v t="$t" -v a="${PER["none,$t"]}" -v b="${PER["module,$t"]}" \
                'BEGIN { printf "| %s | %.1f | %.1f | %+.1f%% |\n", toupper(t), a, b, (b - a) * 100 / a }'
        done
    } | tee "${OUT:-/dev/null}"
    exit 0
fi

# ---- requests/s and CPU time per request ----

NAMES=(none module)
start_keel none
PORTS=("$SERVER_PORT"); SPIDS=("$SERVER_PID")
start_keel module "${module_args[@]}"
PORTS+=("$SERVER_PORT"); SPIDS+=("$SERVER_PID")
# --loadmodule failing stops the server, so being up means it loaded.
kill -0 "${SPIDS[1]}" 2>/dev/null || die "the module server stopped"

# CPU time of the server's main thread in ns (/proc/PID/schedstat: time on
# a CPU, user and system, at nanosecond resolution; /proc/PID/stat's clock
# ticks are 10 ms, too coarse for a 2% difference).
cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }
div=1
[ "$QUICK" = 1 ] && div=10
requests() { if [ "$1" -gt 1 ]; then echo $((1000000 / div)); else echo $((100000 / div)); fi; }

RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
# run_one IDX PIPELINE REP: SET then GET against server IDX.
run_one() {
    local i=$1 p=$2 rep=$3 port=${PORTS[$1]} pid=${SPIDS[$1]} t n c0 c1 out rps cpu
    n=$(requests "$p")
    for t in set get; do
        kill -0 "$pid" 2>/dev/null || die "${NAMES[$i]} is no longer running"
        c0=$(cpu_ns "$pid")
        run_client 180 "$BENCH_TMP/out.csv" "$BENCH_TMP/benchmark.log" redis-benchmark \
            -h 127.0.0.1 -p "$port" -c 50 -d 64 -P "$p" --threads 1 --csv -t "$t" -n "$n" ||
            die "redis-benchmark failed against ${NAMES[$i]}"
        c1=$(cpu_ns "$pid")
        out=$(cat "$BENCH_TMP/out.csv")
        rps=$(printf '%s\n' "$out" | awk -F'","' 'NF > 1 && $1 !~ /"test/ { gsub(/"/, "", $2); r = $2 } END { print r }')
        [ -n "$rps" ] || die "could not parse redis-benchmark output: $out"
        cpu=$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { printf "%.4f", (b - a) / 1000 / n }')
        echo "${NAMES[$i]},$p,$t,$rep,$rps,$cpu" >>"$RAW"
        printf '%s %.0f/s %.3fus  ' "$t" "$rps" "$cpu"
    done
}

echo "bench: load average at start: $(load_avg) ($(nproc) CPUs)"
echo "bench: keel $KEEL; module $MODULE ${CONFIGS[*]:+(${CONFIGS[*]})}"
for p in 16 1; do
    for rep in $(seq 1 "$REPS"); do
        order=(0 1)
        [ $((rep % 2)) -eq 0 ] && order=(1 0)
        for i in "${order[@]}"; do
            printf 'bench: -P %-2s run %d/%d %-6s ... ' "$p" "$rep" "$REPS" "${NAMES[$i]}"
            run_one "$i" "$p" "$rep"
            echo
        done
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { # column name pipeline test
    awk -F, -v c="$1" -v n="$2" -v p="$3" -v t="$4" '$1 == n && $2 == p && $3 == t { print $c }' "$RAW" | median
}

{
    echo
    echo "Module cost: $(basename "$MODULE") ${CONFIGS[*]:+(${CONFIGS[*]})}; $REPS runs each, medians;" \
        "load average at end: $(load_avg)"
    echo
    echo "| test | pipeline | rps none | rps module | rps change | CPU us/req none | CPU us/req module | CPU change |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for p in 16 1; do
        for t in set get; do
            r0=$(med 5 none "$p" "$t"); r1=$(med 5 module "$p" "$t")
            c0=$(med 6 none "$p" "$t"); c1=$(med 6 module "$p" "$t")
            awk -v t="$t" -v p="$p" -v r0="$r0" -v r1="$r1" -v c0="$c0" -v c1="$c1" 'BEGIN {
                printf "| %s | %d | %.0f | %.0f | %+.1f%% | %.3f | %.3f | %+.1f%% |\n",
                    toupper(t), p, r0, r1, (r1 - r0) * 100 / r0, c0, c1, (c0 > 0 ? (c1 - c0) * 100 / c0 : 0)
            }'
        done
    done
} | tee "${OUT:-/dev/null}"
