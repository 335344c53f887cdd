#!/usr/bin/env bash
# Throughput of Keel against Redis (Debian's redis-server) and, optionally, a
# Valkey build, measured with redis-benchmark. Prints a markdown table and
# writes it to bench/results/latest.md (medians also to latest.csv).
#
#   bench/run.sh [--valkey /path/to/valkey-server] [--quick] [--io-threads 1,2]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server (see bench/README.md)
#   --baseline PATH also benchmark this Keel build (e.g. one built from the
#                   commit before a change, outside the repository), in the
#                   same rounds, as the column "Keel baseline"
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --keel-desc S   how to describe that binary in the output (e.g. a commit)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --quick         request counts / 10 (smoke run, under ~2 minutes)
#   --reps N        runs per row and server, median taken (default 3)
#   --keyspace K    pass -r K to redis-benchmark (default: none, i.e. the
#                   stock one-key-per-test workload)
#   --out FILE      markdown output (default: bench/results/latest.md)
#   --tests LIST    comma-separated subset of set,get,incr,mget (default: all
#                   four; always run in that order: GET and MGET read the
#                   key SET wrote, a missing key without set)
#   --sizes LIST    comma-separated value sizes, redis-benchmark -d (default
#                   3,1024); each is run at -P 1 and -P 16
#   --io-threads LIST  comma-separated io-threads settings (default 1): every
#                   server is started once per value, with the same flags
#                   (> 1 adds --io-threads-do-reads yes); ratios compare
#                   servers at the same value
#
# Nothing is built here; build Keel first with `bash .ci/setup`.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
BASELINE=""
KEEL_DESC=""
QUICK=0
REPS=3
KEYSPACE=""
OUT="$BENCH_DIR/results/latest.md"
TESTS_ARG="set,get,incr,mget"
SIZES_ARG="3,1024"
IO_ARG=1

usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --baseline) BASELINE=${2:?--baseline needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --keel-desc) KEEL_DESC=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --reps) REPS=${2:?--reps needs a number}; shift 2 ;;
        --keyspace) KEYSPACE=${2:?--keyspace needs a number}; shift 2 ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --tests) TESTS_ARG=${2:?--tests needs a list}; shift 2 ;;
        --sizes) SIZES_ARG=${2:?--sizes needs a list}; shift 2 ;;
        --io-threads) IO_ARG=${2:?--io-threads needs a list}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

if [ ! -x "$KEEL" ]; then
    die "$KEEL not found; build it first with: bash .ci/setup"
fi
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || die "$BASELINE is not an executable"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
parse_io_threads "$IO_ARG"

# The servers (one column each in the tables).
NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then
    NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY")
fi
if [ -n "$BASELINE" ]; then
    NAMES+=(keelbase); TITLES+=("Keel baseline"); BINS+=("$BASELINE")
fi
# The instances: every server once per io-threads value (lib.sh); INST is
# the key in the raw data, ITITLE the label.
build_instances

# Request counts, chosen for roughly 2-3 s per test on a loaded 2-core
# machine (1-2 s when idle), which keeps a full three-server run under ten
# minutes. MGET (10 keys) moves ten values per request, so it gets fewer.
div=1
[ "$QUICK" = 1 ] && div=10
requests() { # pipeline size test
    local n
    if [ "$1" -gt 1 ]; then n=1000000; else n=100000; fi
    if [ "$3" = mget ]; then
        if [ "$1" -gt 1 ] && [ "$2" -gt 100 ]; then n=$((n / 10)); else n=$((n / 2)); fi
    fi
    echo $((n / div))
}

# pipeline size (3 = redis-benchmark's default size): for each size, -P 1
# then -P 16.
CONFIGS=()
IFS=, read -r -a sizes <<<"$SIZES_ARG"
for d in "${sizes[@]}"; do
    d=${d// /}
    [ -n "$d" ] || continue
    [[ "$d" =~ ^[1-9][0-9]*$ ]] || die "--sizes: '$d' is not a positive integer"
    CONFIGS+=("1 $d" "16 $d")
done
[ ${#CONFIGS[@]} -gt 0 ] || die "--sizes needs at least one value"
TESTS=()
for t in set get incr mget; do
    case ",${TESTS_ARG// /}," in *",$t,"*) TESTS+=("$t") ;; esac
done
IFS=, read -r -a wanted <<<"${TESTS_ARG// /}"
for t in "${wanted[@]}"; do
    case " ${TESTS[*]} " in *" $t "*) ;; *) die "--tests: unknown test '$t' (set, get, incr, mget)" ;; esac
done
[ ${#TESTS[@]} -gt 0 ] || die "--tests needs at least one of set, get, incr, mget"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"

load_start=$(load_avg)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: load average at start: $load_start ($(nproc) CPUs); $(pinning_desc)"
if awk -v l="${load_start%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    echo "bench: warning: the machine is not idle; numbers will be noisy" >&2
fi

PORTS=()
SPIDS=()
for k in "${!INST[@]}"; do
    BENCH_IO_THREADS=${IIO[$k]}
    start_server "${INST[$k]}" "$BENCH_TMP/${INST[$k]}" -- "${BINS[${ISRV[$k]}]}" ||
        die "could not start ${INST[$k]} (--io-threads ${IIO[$k]})"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "bench: ${ITITLE[$k]} on port $SERVER_PORT (--io-threads ${IIO[$k]}): $(server_version "${BINS[${ISRV[$k]}]}")"
done
BENCH_IO_THREADS=1

# Server CPU time (user + system, clock ticks) from /proc/PID/stat; fields
# counted after the ")" that closes the command name.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
TICK_HZ=$(getconf CLK_TCK)

# run_one IDX PIPELINE SIZE REP: one pass of the tests against instance
# IDX; appends "instance,pipeline,size,test,rep,rps,cpu_us_per_request"
# lines to $RAW.
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
run_one() {
    local i=$1 p=$2 d=$3 rep=$4 port=${PORTS[$1]} name=${INST[$1]}
    local common=(-h 127.0.0.1 -p "$port" -c 50 -P "$p" -d "$d" --threads 1 --csv)
    [ -n "$KEYSPACE" ] && common+=(-r "$KEYSPACE")
    local t out rps c0 c1 cpu log="$BENCH_TMP/benchmark.log" pid=${SPIDS[$1]}
    [ "$(redis-cli -h 127.0.0.1 -p "$port" flushall 2>&1)" = OK ] || die "FLUSHALL failed on $name"
    for t in "${TESTS[@]}"; do
        local n cmd=(-t "$t")
        n=$(requests "$p" "$d" "$t")
        if [ "$t" = mget ]; then
            # redis-benchmark 7.0 has no built-in MGET test: the same shape as
            # its "MSET (10 keys)", reading the key the SET test wrote.
            cmd=(mget key:__rand_int__ key:__rand_int__ key:__rand_int__ key:__rand_int__
                 key:__rand_int__ key:__rand_int__ key:__rand_int__ key:__rand_int__
                 key:__rand_int__ key:__rand_int__)
        fi
        # redis-benchmark retries a refused connection forever: check first.
        kill -0 "$pid" 2>/dev/null || die "$name is no longer running"
        c0=$(cpu_ticks "$pid")
        if ! run_client 180 "$BENCH_TMP/out.csv" "$log" redis-benchmark "${common[@]}" -n "$n" "${cmd[@]}"; then
            tail -n 5 "$log" >&2
            die "redis-benchmark failed against $name ($t, -P $p -d $d)"
        fi
        c1=$(cpu_ticks "$pid")
        out=$(cat "$BENCH_TMP/out.csv")
        cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$TICK_HZ" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }')
        # CSV: header line, then "TEST","rps",... ; take the last data row.
        rps=$(printf '%s\n' "$out" | awk -F'","' 'NF > 1 && $1 !~ /"test/ { gsub(/"/, "", $2); r = $2 } END { print r }')
        [ -n "$rps" ] || die "could not parse redis-benchmark output: $out"
        echo "$name,$p,$d,$t,$rep,$rps,$cpu" >>"$RAW"
    done
    kill -0 "$pid" 2>/dev/null || die "$name died during the benchmark"
}

# A hard bound on the run time: a heavily loaded machine can stretch the
# run a lot, and numbers from such a run are not worth waiting for.
MAX_S=1200
[ "$QUICK" = 1 ] && MAX_S=300
MAX_S=$((MAX_S * ${#IO_THREADS_LIST[@]}))
SECONDS=0
for cfg in "${CONFIGS[@]}"; do
    read -r p d <<<"$cfg"
    for rep in $(seq 1 "$REPS"); do
        for i in "${!INST[@]}"; do
            [ "$SECONDS" -lt "$MAX_S" ] ||
                die "over the ${MAX_S}s time budget (load average $(load_avg)); try again on a quieter machine"
            printf 'bench: -P %-2s -d %-4s run %d/%d %-6s ... ' "$p" "$d" "$rep" "$REPS" "${INST[$i]}"
            run_one "$i" "$p" "$d" "$rep"
            awk -F, -v n="${INST[$i]}" -v p="$p" -v d="$d" -v r="$rep" \
                '$1 == n && $2 == p && $3 == d && $5 == r { printf "%s %.0f/s %.2fus  ", $4, $6, $7 } END { print "" }' "$RAW"
        done
    done
done
elapsed=$SECONDS
load_end=$(load_avg)

# Medians and the tables.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { # column name pipeline size test
    awk -F, -v c="$1" -v n="$2" -v p="$3" -v d="$4" -v t="$5" \
        '$1 == n && $2 == p && $3 == d && $4 == t { print $c }' "$RAW" | median
}

# inst_key SERVER_IDX IO: the instance key of server SERVER_IDX at IO.
inst_key() {
    local sfx
    sfx=$(io_suffix "$2")
    echo "${NAMES[$1]}${sfx:+-io$2}"
}
# With io-threads values other than just 1, the markdown tables get an
# io-threads column (one row per value); the CSVs always have one.
MULTI_IO=0
[ "${IO_THREADS_LIST[*]}" = 1 ] || MULTI_IO=1

# table COLUMN UNIT FORMAT: a markdown table of the medians of RAW's COLUMN,
# one row per test, configuration and io-threads value, one column per
# server, with Keel/peer ratios (both at the row's io-threads value); also
# fills CSVROWS (test,pipeline,size,io_threads,values,ratios).
table() {
    local col=$1 unit=$2 fmt=$3 cfg p d t i v io label ratio row csvrow vals
    row="| test | pipeline | value size |"
    local rule="| --- | ---: | ---: |" csvhead="test,pipeline,size,io_threads"
    if [ "$MULTI_IO" = 1 ]; then row+=" io-threads |"; rule+=" ---: |"; fi
    for i in "${!NAMES[@]}"; do row+=" ${TITLES[$i]} $unit |"; rule+=" ---: |"; csvhead+=",${NAMES[$i]}"; done
    for i in "${!NAMES[@]}"; do
        [ "$i" -eq 0 ] && continue
        row+=" Keel/${TITLES[$i]} |"; rule+=" ---: |"; csvhead+=",Keel/${TITLES[$i]}"
    done
    echo "$row"; echo "$rule"
    CSVROWS=("$csvhead")
    for cfg in "${CONFIGS[@]}"; do
        read -r p d <<<"$cfg"
        for t in "${TESTS[@]}"; do
            label=$(echo "$t" | tr "[:lower:]" "[:upper:]")
            [ "$t" = mget ] && label="MGET (10 keys)"
            for io in "${IO_THREADS_LIST[@]}"; do
                vals=()
                for i in "${!NAMES[@]}"; do vals+=("$(med "$col" "$(inst_key "$i" "$io")" "$p" "$d" "$t")"); done
                row="| $label | $p | $d |"
                [ "$MULTI_IO" = 1 ] && row+=" $io |"
                csvrow="$label,$p,$d,$io"
                for v in "${vals[@]}"; do
                    # shellcheck disable=SC2059 # the format is ours
                    v=$(printf "$fmt" "$v"); row+=" $v |"; csvrow+=",$v"
                done
                for i in "${!vals[@]}"; do
                    [ "$i" -eq 0 ] && continue
                    ratio=$(awk -v a="${vals[0]}" -v b="${vals[$i]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
                    row+=" ${ratio}x |"; csvrow+=",$ratio"
                done
                echo "$row"
                CSVROWS+=("$csvrow")
            done
        done
    done
}

CSV="${OUT%.md}.csv"
CPUCSV="${OUT%.md}-cpu.csv"
table 7 "µs" '%.2f' >"$BENCH_TMP/cpu.md"
printf '%s\n' "${CSVROWS[@]}" >"$CPUCSV"
table 6 rps '%.0f' >"$BENCH_TMP/rps.md"
printf '%s\n' "${CSVROWS[@]}" >"$CSV"

if [ "$KEEL" = "$ROOT/build/release/keel-server" ]; then
    keel_rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [ -n "$(git -C "$ROOT" status --porcelain -- core 2>/dev/null)" ]; then keel_rev+=" (+ uncommitted core/ changes)"; fi
else
    keel_rev="binary $KEEL"
fi
[ -z "$KEEL_DESC" ] || keel_rev=$KEEL_DESC
nbase=$(requests 1 3 set)
{
    echo "## Throughput (redis-benchmark, requests per second, median of $REPS)"
    echo
    echo "- date: $started_at, run time ${elapsed}s$([ "$QUICK" = 1 ] && echo ', --quick')"
    echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), Linux $(uname -r)"
    echo "- load average (1/5/15 min): $load_start at start, $load_end at end"
    echo "- placement: $(pinning_desc); servers alternate within each round, medians over rounds"
    for i in "${!NAMES[@]}"; do
        v=$(server_version "${BINS[$i]}")
        [ "${NAMES[$i]}" = keel ] && v+=", $keel_rev"
        [ "${NAMES[$i]}" = keelbase ] && v+=", binary $BASELINE"
        echo "- ${TITLES[$i]}: $v"
    done
    echo "- client: redis-benchmark -c 50 --threads 1 -n $nbase at -P 1, $((nbase * 10)) at -P 16 (MGET: half that, a tenth at -P 16 with -d over 100)$([ -n "$KEYSPACE" ] && echo ", -r $KEYSPACE")"
    if [ "$MULTI_IO" = 1 ]; then
        echo "- io-threads: ${IO_THREADS_LIST[*]} (every server started once per value, same flags; > 1 adds --io-threads-do-reads yes; Keel/peer ratios at the same value)"
    fi
    echo
    cat "$BENCH_TMP/rps.md"
    echo
    echo "### Server CPU time per request (µs, user + system, median of $REPS; lower is better)"
    echo
    echo "Read from /proc/PID/stat around each test. Less sensitive to other load"
    echo "on the machine than requests per second, though not immune to it."
    echo
    cat "$BENCH_TMP/cpu.md"
} >"$OUT"

echo
cat "$OUT"
echo
echo "bench: wrote $OUT, $CSV and $CPUCSV"
