#!/usr/bin/env bash
# Throughput of the aggregate-type commands: redis-benchmark's own tests
# (LPUSH RPUSH LPOP RPOP SADD HSET SPOP ZADD ZPOPMIN LRANGE_100/300/500/600
# MSET) against Keel, Redis (Debian's redis-server) and optionally a Valkey
# build, in one run. Servers take turns within each round (Keel, Redis,
# Valkey, then again), each server pinned to CPU 0 and redis-benchmark to CPU
# 1 (lib.sh), and the medians of the rounds are reported with Keel/peer
# ratios. Writes a markdown table to bench/results/types.md and the medians
# to bench/results/types.csv.
#
#   bench/types.sh [--valkey /path/to/valkey-server] [--reps N] [--quick]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --reps N        rounds, median taken (default 3)
#   --pipelines L   comma-separated pipeline depths (default 1,16)
#   --quick         request counts / 10 (smoke run)
#   --out FILE      markdown output (default: bench/results/types.md)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
REPS=3
QUICK=0
PIPES_ARG="1,16"
OUT="$BENCH_DIR/results/types.md"
TESTS="lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,lrange_500,lrange_600,mset"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?}; shift 2 ;;
        --keel) KEEL=${2:?}; shift 2 ;;
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
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
IFS=, read -r -a PIPES <<<"$PIPES_ARG"

# Requests per test: 1-3 s each on a 2-core machine. The LRANGE tests
# move 100-600 elements per request, so they get fewer.
requests() { # pipeline group
    local n=200000
    [ "$1" -gt 1 ] && n=1000000
    [ "$2" = lrange ] && n=$((n / 10))
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
    start_server "${NAMES[$i]}" "$BENCH_TMP/${NAMES[$i]}" -- "${BINS[$i]}" || die "could not start ${NAMES[$i]}"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "bench: ${TITLES[$i]} on port $SERVER_PORT: $(server_version "${BINS[$i]}")"
done

# One round against server i at pipeline p, on an empty database: the
# tests in redis-benchmark's own order and in one run, as `redis-benchmark
# -t ...` runs them (the pops pop what the pushes left), then the LRANGE
# tests in a second run with fewer requests (each moves 100-600 elements;
# redis-benchmark fills the list first). Appends "server,pipeline,test,rep,
# rps" lines to RAW.
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
MAIN_TESTS=$(echo "$TESTS" | tr , '\n' | grep -v '^lrange' | paste -sd, -)
RANGE_TESTS=$(echo "$TESTS" | tr , '\n' | grep '^lrange' | paste -sd, - || true)
# Server CPU time (user + system, clock ticks) from /proc/PID/stat.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
TICK_HZ=$(getconf CLK_TCK)
run_group() { # i p rep tests n
    local i=$1 p=$2 rep=$3 tests=$4 n=$5 port=${PORTS[$1]} t rps c0 c1 cpu log="$BENCH_TMP/benchmark.log"
    [ -n "$tests" ] || return 0
    kill -0 "${SPIDS[$i]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
    c0=$(cpu_ticks "${SPIDS[$i]}")
    if ! run_client 900 "$BENCH_TMP/out.csv" "$log" redis-benchmark -h 127.0.0.1 -p "$port" \
        -c 50 -P "$p" -n "$n" --threads 1 --csv -t "$tests"; then
        tail -n 5 "$log" >&2
        die "redis-benchmark failed against ${NAMES[$i]} ($tests, -P $p)"
    fi
    c1=$(cpu_ticks "${SPIDS[$i]}")
    # The server's CPU per request, for a run of one test (an LRANGE run
    # also fills its list first: run_range_cpu measures those).
    cpu=NA
    case "$tests" in *,* | lrange*) ;; *)
        cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$TICK_HZ" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }') ;;
    esac
    IFS=, read -r -a tl <<<"$tests"
    for t in "${tl[@]}"; do
        # Rows are named "LPUSH", "LRANGE_100 (first 100 elements)", and
        # "LPUSH (needed to benchmark LRANGE)", which is not a result.
        rps=$(awk -F'","' -v want="$t" 'NF > 1 && $1 !~ /"test/ && $1 !~ /needed/ {
                  name = tolower($1); gsub(/"/, "", name); sub(/ .*/, "", name)
                  gsub(/"/, "", $2); if (name == want) r = $2 } END { print r }' "$BENCH_TMP/out.csv")
        [ -n "$rps" ] || die "no result for $t in: $(cat "$BENCH_TMP/out.csv")"
        echo "${NAMES[$i]},$p,$t,$rep,$rps,$cpu" >>"$RAW"
        printf '%s %.0f/s  ' "$t" "$rps"
    done
}
# The LRANGE runs above also fill their list, so their server CPU is not
# theirs: measure it on a run of the same command alone, on the list the
# run left (it holds at least 600 elements). Appends "server,pipeline,
# test,rep,cpu" lines to RAWCPU.
RAWCPU="$BENCH_TMP/rawcpu.csv"
: >"$RAWCPU"
run_range_cpu() { # i p rep n
    local i=$1 p=$2 rep=$3 n=$4 port=${PORTS[$1]} t c0 c1 log="$BENCH_TMP/benchmark.log"
    IFS=, read -r -a rl <<<"$RANGE_TESTS"
    for t in "${rl[@]}"; do
        [ -n "$t" ] || continue
        c0=$(cpu_ticks "${SPIDS[$i]}")
        run_client 900 "$BENCH_TMP/out.csv" "$log" redis-benchmark -h 127.0.0.1 -p "$port" \
            -c 50 -P "$p" -n "$n" --threads 1 --csv lrange mylist 0 $((${t#lrange_} - 1)) ||
            die "redis-benchmark failed against ${NAMES[$i]} (LRANGE alone, -P $p)"
        c1=$(cpu_ticks "${SPIDS[$i]}")
        awk -v a="$c0" -v b="$c1" -v hz="$TICK_HZ" -v n="$n" -v pre="${NAMES[$i]},$p,$t,$rep" \
            'BEGIN { printf "%s,%.3f\n", pre, (b - a) * 1e6 / hz / n }' >>"$RAWCPU"
    done
}
run_round() { # i p rep
    [ "$(redis-cli -h 127.0.0.1 -p "${PORTS[$1]}" flushall 2>&1)" = OK ] || die "FLUSHALL failed on ${NAMES[$1]}"
    # One run per test, in order and without a flush in between, so each
    # test's server CPU is its own and the pops still pop the pushes.
    local t
    IFS=, read -r -a mt <<<"$MAIN_TESTS"
    for t in "${mt[@]}"; do run_group "$1" "$2" "$3" "$t" "$(requests "$2" main)"; done
    run_group "$1" "$2" "$3" "$RANGE_TESTS" "$(requests "$2" lrange)"
    run_range_cpu "$1" "$2" "$3" "$(requests "$2" lrange)"
    echo
}

for p in "${PIPES[@]}"; do
    for rep in $(seq 1 "$REPS"); do
        for i in "${!NAMES[@]}"; do
            printf 'bench: -P %-2s round %d/%d %-6s ' "$p" "$rep" "$REPS" "${NAMES[$i]}"
            run_round "$i" "$p" "$rep"
        done
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { awk -F, -v n="$1" -v p="$2" -v t="$3" '$1 == n && $2 == p && $3 == t { print $5 }' "$RAW" | median; }
medcpu() {
    { awk -F, -v n="$1" -v p="$2" -v t="$3" '$1 == n && $2 == p && $3 == t && $6 != "NA" { print $6 }' "$RAW"
      awk -F, -v n="$1" -v p="$2" -v t="$3" '$1 == n && $2 == p && $3 == t { print $5 }' "$RAWCPU"; } | median
}

{
    echo "# Aggregate-type commands: redis-benchmark's tests"
    echo
    echo "$started_at; $(nproc) CPUs; $(pinning_desc); -c 50 --threads 1; median of $REPS rounds, servers alternating."
    echo "Keel: $(server_version "$KEEL"); Redis: $(server_version "$REDIS")${VALKEY:+; Valkey: $(server_version "$VALKEY")}."
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
IFS=, read -r -a tests <<<"$TESTS"
for p in "${PIPES[@]}"; do
    for t in "${tests[@]}"; do
        row="| ${t^^} | $p |"
        vals=()
        for i in "${!NAMES[@]}"; do vals+=("$(med "${NAMES[$i]}" "$p" "$t")"); row+=" $(printf '%.0f' "${vals[$i]}") |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || row+=" $(awk -v a="${vals[0]}" -v b="${vals[$i]}" 'BEGIN { printf "%.2fx", a / b }') |"
        done
        # Server CPU per request: what a server spends whatever the client
        # can send (the ratio reads "how many times Keel's CPU").
        cpus=()
        for i in "${!NAMES[@]}"; do cpus+=("$(medcpu "${NAMES[$i]}" "$p" "$t")"); row+=" ${cpus[$i]:--} |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] && continue
            if [ -n "${cpus[0]}" ] && [ -n "${cpus[$i]}" ]; then
                row+=" $(awk -v a="${cpus[0]}" -v b="${cpus[$i]}" 'BEGIN { printf "%.2fx", b / a }') |"
            else
                row+=" - |"
            fi
        done
        echo "$row" >>"$OUT"
        echo "$t,$p,$(IFS=,; echo "${vals[*]}"),$(IFS=,; echo "${cpus[*]}")" >>"$csv"
    done
done
cat "$OUT"
