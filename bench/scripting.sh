#!/usr/bin/env bash
# Throughput of scripting: one INCR from a script, called three ways
#
#   EVAL "return redis.call('incr', KEYS[1])" 1 k
#   EVALSHA <its sha1> 1 k            (after SCRIPT LOAD)
#   FCALL incr 1 k                    (after FUNCTION LOAD of the same body)
#
# against Keel with the Lua module (build/release/modules/lua.so), Redis
# (Debian's redis-server) and optionally a Valkey build, in one run. Servers
# take turns within each round, each pinned to CPU 0 and redis-benchmark to
# CPU 1 (lib.sh); the medians of the rounds are reported with Keel/peer
# ratios, and each server's CPU per request (user + system time over the
# requests), which the load generator does not limit. Writes a markdown
# table to bench/results/scripting.md and the medians to scripting.csv.
#
#   bench/scripting.sh [--valkey /path/to/valkey-server] [--reps N] [--quick]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --module PATH   the Lua module (default: build/release/modules/lua.so)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --reps N        rounds, median taken (default 3)
#   --pipelines L   comma-separated pipeline depths (default 1,16)
#   --quick         request counts / 10 (smoke run)
#   --out FILE      markdown output (default: bench/results/scripting.md)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
MODULE="$ROOT/build/release/modules/lua.so"
REDIS=/usr/bin/redis-server
VALKEY=""
REPS=3
QUICK=0
PIPES_ARG="1,16"
OUT="$BENCH_DIR/results/scripting.md"

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?}; shift 2 ;;
        --keel) KEEL=${2:?}; shift 2 ;;
        --module) MODULE=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?}; shift 2 ;;
        --reps) REPS=${2:?}; shift 2 ;;
        --pipelines) PIPES_ARG=${2:?}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
[ -f "$MODULE" ] || die "$MODULE not found; build it first with: bash .ci/setup"
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
IFS=, read -r -a PIPES <<<"$PIPES_ARG"
TESTS=(eval evalsha fcall)

BODY="return redis.call('incr', KEYS[1])"
LIBRARY="#!lua name=benchlib
redis.register_function('incr', function(keys, args) return redis.call('incr', keys[1]) end)"
SHA=$(printf '%s' "$BODY" | sha1sum | cut -d' ' -f1)

requests() { # pipeline
    local n=200000
    [ "$1" -gt 1 ] && n=1000000
    [ "$QUICK" = 1 ] && n=$((n / 10))
    echo "$n"
}

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: load average at start: $(load_avg) ($(nproc) CPUs); $(pinning_desc)"

PORTS=()
SPIDS=()
for i in "${!NAMES[@]}"; do
    # Only Keel takes the module; the peers have Lua built in.
    EXTRA_SERVER_ARGS=()
    [ "${NAMES[$i]}" = keel ] && EXTRA_SERVER_ARGS=(--loadmodule "$MODULE")
    start_server "${NAMES[$i]}" "$BENCH_TMP/${NAMES[$i]}" -- "${BINS[$i]}" || die "could not start ${NAMES[$i]}"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "bench: ${TITLES[$i]} on port $SERVER_PORT: $(server_version "${BINS[$i]}")"
done
EXTRA_SERVER_ARGS=()

# Loads the script and the library into server i and checks that each of
# the three calls answers an integer, so a broken server fails the run
# instead of being timed answering errors.
prepare() { # i
    local port=${PORTS[$1]} got
    got=$(redis-cli -h 127.0.0.1 -p "$port" script load "$BODY")
    [ "$got" = "$SHA" ] || die "${NAMES[$1]}: SCRIPT LOAD answered '$got', not $SHA"
    got=$(redis-cli -h 127.0.0.1 -p "$port" function load replace "$LIBRARY")
    [ "$got" = benchlib ] || die "${NAMES[$1]}: FUNCTION LOAD answered '$got'"
    for cmd in "eval \"$BODY\" 1 k" "evalsha $SHA 1 k" "fcall incr 1 k"; do
        got=$(eval "redis-cli -h 127.0.0.1 -p $port $cmd")
        [[ "$got" =~ ^[0-9]+$ ]] || die "${NAMES[$1]}: '$cmd' answered '$got'"
    done
}
for i in "${!NAMES[@]}"; do prepare "$i"; done

# Server CPU time (user + system, clock ticks) from /proc/PID/stat.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
TICK_HZ=$(getconf CLK_TCK)
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
run_one() { # i p rep test
    local i=$1 p=$2 rep=$3 t=$4 port=${PORTS[$1]} n rps c0 c1 cpu log="$BENCH_TMP/benchmark.log"
    local cmd=()
    case "$t" in
        eval) cmd=(eval "$BODY" 1 k) ;;
        evalsha) cmd=(evalsha "$SHA" 1 k) ;;
        fcall) cmd=(fcall incr 1 k) ;;
    esac
    n=$(requests "$p")
    kill -0 "${SPIDS[$i]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
    c0=$(cpu_ticks "${SPIDS[$i]}")
    if ! run_client 900 "$BENCH_TMP/out.csv" "$log" redis-benchmark -h 127.0.0.1 -p "$port" \
        -c 50 -P "$p" -n "$n" --threads 1 --csv "${cmd[@]}"; then
        tail -n 5 "$log" >&2
        die "redis-benchmark failed against ${NAMES[$i]} ($t, -P $p)"
    fi
    c1=$(cpu_ticks "${SPIDS[$i]}")
    cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$TICK_HZ" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }')
    rps=$(awk -F'","' 'NF > 1 && $1 !~ /"test/ { gsub(/"/, "", $2); r = $2 } END { print r }' "$BENCH_TMP/out.csv")
    [ -n "$rps" ] || die "no result for $t in: $(cat "$BENCH_TMP/out.csv")"
    echo "${NAMES[$i]},$p,$t,$rep,$rps,$cpu" >>"$RAW"
    printf '%s %.0f/s  ' "$t" "$rps"
}

for p in "${PIPES[@]}"; do
    for rep in $(seq 1 "$REPS"); do
        for i in "${!NAMES[@]}"; do
            printf 'bench: -P %-2s round %d/%d %-6s ' "$p" "$rep" "$REPS" "${NAMES[$i]}"
            for t in "${TESTS[@]}"; do run_one "$i" "$p" "$rep" "$t"; done
            echo
        done
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { awk -F, -v n="$1" -v p="$2" -v t="$3" -v col="$4" '$1 == n && $2 == p && $3 == t { print $col }' "$RAW" | median; }

{
    echo "# Scripting: one INCR from EVAL, EVALSHA and FCALL"
    echo
    echo "$started_at; $(nproc) CPUs; $(pinning_desc); -c 50 --threads 1; median of $REPS rounds, servers alternating."
    echo "Keel: $(server_version "$KEEL") with $(basename "$MODULE"); Redis: $(server_version "$REDIS")${VALKEY:+; Valkey: $(server_version "$VALKEY")}."
    echo "Load average at the end: $(load_avg)."
    echo
    head="| test | pipeline |"
    rule="| --- | ---: |"
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} req/s |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" Keel / ${TITLES[$i]} |"; rule+=" ---: |"; }; done
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} CPU us/req |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" CPU ${TITLES[$i]} / Keel |"; rule+=" ---: |"; }; done
    echo "$head"
    echo "$rule"
} >"$OUT"
csv="$(dirname "$OUT")/$(basename "$OUT" .md).csv"
echo "test,pipeline,$(IFS=,; echo "${NAMES[*]}"),$(for n in "${NAMES[@]}"; do printf '%s_cpu_us,' "$n"; done | sed 's/,$//')" >"$csv"
for p in "${PIPES[@]}"; do
    for t in "${TESTS[@]}"; do
        row="| ${t^^} | $p |"
        vals=()
        cpus=()
        for i in "${!NAMES[@]}"; do vals+=("$(med "${NAMES[$i]}" "$p" "$t" 5)"); row+=" $(printf '%.0f' "${vals[$i]}") |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || row+=" $(awk -v a="${vals[0]}" -v b="${vals[$i]}" 'BEGIN { printf "%.2fx", a / b }') |"
        done
        for i in "${!NAMES[@]}"; do cpus+=("$(med "${NAMES[$i]}" "$p" "$t" 6)"); row+=" ${cpus[$i]} |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || row+=" $(awk -v a="${cpus[0]}" -v b="${cpus[$i]}" 'BEGIN { printf "%.2fx", b / a }') |"
        done
        echo "$row" >>"$OUT"
        echo "$t,$p,$(IFS=,; echo "${vals[*]}"),$(IFS=,; echo "${cpus[*]}")" >>"$csv"
    done
done
cat "$OUT"
