#!/usr/bin/env bash
# Noisy neighbour: what a small client gets while other clients move large
# values. For Keel, Redis (Debian's redis-server) and, optionally, a Valkey
# build:
#   idle:   one probe client alone, GET of a 64-byte value, one request at a
#           time, for SECS seconds;
#   loaded: the same probe while 8 other connections GET 8 MB values (closed
#           loop, one request in flight each).
# Reports the probe's requests/s, p50, p99, p99.9 and max latency in both
# conditions, and the load's Gbit/s, as a markdown table.
#
#   bench/noisy_neighbour.sh [--valkey /path/to/valkey-server] [--quick] [--io-threads 1,2]
#
# Options:
#   --valkey PATH   also measure this valkey-server (see bench/README.md)
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --size SIZE     large value size (default 8m)
#   --conns N       large-value connections (default 8)
#   --secs S        measured seconds per condition (default 5; --quick: 2)
#   --reps N        repeat both conditions N times per server (default 1)
#   --quick         short runs (under a minute)
#   --out FILE      markdown output (default: bench/results/noisy_neighbour.md)
#   --io-threads LIST  comma-separated io-threads settings (default 1): every
#                   server is started once per value, with the same flags
#                   (> 1 adds --io-threads-do-reads yes)
#
# Both conditions are one bench/loadgen run each (the probe runs in its own
# thread with a blocking socket, so its latency is not the load loop's):
#   loadgen -c 0 --probe --prepare -t SECS -w 1
#   loadgen -c 8 -s 8m --probe --prepare -t SECS -w 1
# Targets (issue 4): loaded rps at least half the idle rps, max under 10 ms.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
SIZE=8m
CONNS=8
SECS=""
REPS=1
QUICK=0
OUT="$BENCH_DIR/results/noisy_neighbour.md"
IO_ARG=1

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --size) SIZE=${2:?--size needs a size}; shift 2 ;;
        --conns) CONNS=${2:?--conns needs a number}; shift 2 ;;
        --secs) SECS=${2:?--secs needs a number}; shift 2 ;;
        --reps) REPS=${2:?--reps needs a number}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --io-threads) IO_ARG=${2:?--io-threads needs a list}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
if [ "$QUICK" = 1 ]; then SECS=${SECS:-2}; WARMUP=0.5; else SECS=${SECS:-5}; WARMUP=1; fi
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
parse_io_threads "$IO_ARG"

[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
command -v cc >/dev/null || die "cc not found (apt-get install build-essential)"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"

cc -O2 -Wall -Wextra -Werror -std=c11 -pthread -o "$BENCH_TMP/loadgen" "$BENCH_DIR/loadgen.c" ||
    die "loadgen did not build"
LOADGEN="$BENCH_TMP/loadgen"
cp "$KEEL" "$BENCH_TMP/keel-server"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$BENCH_TMP/keel-server" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
# The instances: every server once per io-threads value (lib.sh); INST is
# the key, ITITLE the label.
build_instances

load_start=$(load_avg)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "noisy_neighbour: load average at start: $load_start ($(nproc) CPUs)"

PORTS=()
SPIDS=()
for k in "${!INST[@]}"; do
    BENCH_IO_THREADS=${IIO[$k]}
    start_server "${INST[$k]}" "$BENCH_TMP/${INST[$k]}" -- "${BINS[${ISRV[$k]}]}" ||
        die "could not start ${INST[$k]} (--io-threads ${IIO[$k]})"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "noisy_neighbour: ${ITITLE[$k]} on port $SERVER_PORT (--io-threads ${IIO[$k]}): $(server_version "${BINS[${ISRV[$k]}]}")"
done
BENCH_IO_THREADS=1

kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
LIMIT=$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 90 }')

# run_cond I COND REP: one run against instance I; appends
# "server,cond,rep,rps,p50,p99,p999,max,errors,load_gbps,io_threads"
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
run_cond() {
    local i=$1 cond=$2 rep=$3 args=() rc=0 probe load
    args=(-p "${PORTS[$i]}" --probe --prepare -t "$SECS" -w "$WARMUP" -T 30 -q -k "nn:$SIZE")
    if [ "$cond" = idle ]; then args+=(-c 0); else args+=(-c "$CONNS" -s "$SIZE"); fi
    kill -0 "${SPIDS[$i]}" 2>/dev/null || die "${INST[$i]} is no longer running"
    run_client "$LIMIT" "$BENCH_TMP/lg.out" "$BENCH_TMP/lg.err" "$LOADGEN" "${args[@]}" || rc=$?
    kill -0 "${SPIDS[$i]}" 2>/dev/null || {
        tail -n 20 "$BENCH_TMP/${INST[$i]}/server.log" "$BENCH_TMP/${INST[$i]}/stdout.log" >&2 2>/dev/null || true
        die "${INST[$i]} died during the $cond run"
    }
    probe=$(grep '^PROBE' "$BENCH_TMP/lg.out" || true)
    load=$(grep '^LOAD' "$BENCH_TMP/lg.out" || true)
    if [ -z "$probe" ]; then
        tail -n 5 "$BENCH_TMP/lg.err" >&2
        die "loadgen failed against ${INST[$i]} ($cond, exit $rc)"
    fi
    local err gbps="-"
    err=$(($(kv errors <<<"$probe") + $(kv timeouts <<<"$probe")))
    [ -n "$load" ] && gbps=$(kv gbps <<<"$load")
    echo "${NAMES[${ISRV[$i]}]},$cond,$rep,$(kv rps <<<"$probe"),$(kv p50_us <<<"$probe"),$(kv p99_us <<<"$probe"),$(kv p999_us <<<"$probe"),$(kv max_us <<<"$probe"),$err,$gbps,${IIO[$i]}" >>"$RAW"
    printf '%s %s: probe %s req/s, max %s us; load %s Gbit/s\n' "${INST[$i]}" "$cond" \
        "$(kv rps <<<"$probe")" "$(kv max_us <<<"$probe")" "$gbps"
}

SECONDS=0
for rep in $(seq 1 "$REPS"); do
    for i in "${!INST[@]}"; do
        run_cond "$i" idle "$rep"
        run_cond "$i" loaded "$rep"
    done
done
elapsed=$SECONDS
load_end=$(load_avg)

{
    echo "Noisy neighbour: $(date -u '+%Y-%m-%d') ($started_at), $(nproc) CPUs, load average $load_start at start, $load_end at end; ${elapsed}s."
    echo "Probe: GET of a 64-byte value, one at a time, ${SECS}s after ${WARMUP}s warm-up; loaded: while $CONNS connections GET $SIZE values."
    for i in "${!NAMES[@]}"; do echo "${TITLES[$i]}: $(server_version "${BINS[$i]}")"; done
    if [ "${IO_THREADS_LIST[*]}" != 1 ]; then
        echo "io-threads: ${IO_THREADS_LIST[*]} (every server started once per value, same flags; > 1 adds --io-threads-do-reads yes)."
    fi
    echo
    echo "| server | run | condition | probe req/s | p50 ms | p99 ms | p99.9 ms | max ms | loaded/idle req/s | probe errors | load Gbit/s |"
    echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for i in "${!INST[@]}"; do
        awk -F, -v n="${NAMES[${ISRV[$i]}]}" -v io="${IIO[$i]}" -v t="${ITITLE[$i]}" '$1 == n && $11 == io {
            if ($2 == "idle") idle[$3] = $4
            r = ($2 == "loaded" && idle[$3] > 0) ? sprintf("%.3f", $4 / idle[$3]) : "-"
            printf "| %s | %s | %s | %.1f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s |\n",
                t, $3, $2, $4, $5 / 1000, $6 / 1000, $7 / 1000, $8 / 1000, r, $9, $10 }' "$RAW"
    done
} >"$OUT"
{ echo "server,condition,rep,rps,p50_us,p99_us,p999_us,max_us,errors,load_gbps,io_threads"; cat "$RAW"; } >"${OUT%.md}.csv"
echo
cat "$OUT"
echo
echo "noisy_neighbour: written to $OUT and ${OUT%.md}.csv (${elapsed}s)"
