#!/usr/bin/env bash
# Large values: GET and SET throughput of 256 KB ... 64 MB values over 8
# connections, Keel against Redis (Debian's redis-server) and, optionally, a
# Valkey build, each reported as a fraction of the stand-in: a server that
# answers every request with one pre-built reply (bench/standin.c), i.e.
# what this machine's loopback and the load generator can move.
#
#   bench/large_values.sh [--valkey /path/to/valkey-server] [--quick] [--io-threads 1,2]
#
# Options:
#   --valkey PATH   also measure this valkey-server (see bench/README.md)
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --sizes "LIST"  value sizes, spaces or commas (default: "256k 1m 4m 8m 16m 64m")
#   --secs S        measured seconds per run (default 5; --quick: 1.5)
#   --warmup S      warm-up seconds per run (default 1; --quick: 0.5)
#   --conns N       load connections (default 8)
#   --reps N        runs per size, op and server; tables show the median
#                   (default 1; each rep multiplies the run time)
#   --quick         short runs, about 1.5 minutes in all
#   --out FILE      markdown output (default: bench/results/large_values.md)
#   --io-threads LIST  comma-separated io-threads settings (default 1): every
#                   server is started once per value, with the same flags
#                   (> 1 adds --io-threads-do-reads yes); ratios compare
#                   servers at the same value
#
# Every run is bench/loadgen (closed loop, one request in flight per
# connection, replies read whole into a fixed scratch buffer):
#   loadgen -c 8 -o get|set -s SIZE -t SECS -w WARMUP [--prepare]
# The stand-in is measured for GET only; SET results are reported against
# the stand-in's GET of the same size (the same bytes cross the loopback).
# Around each run the server's CPU time (user + system) and minor page
# faults are read from /proc/PID/stat: CPU % and faults per request are in
# the detail table. Servers get bench/lib.sh's common arguments (no
# persistence, quiet log, --io-threads as asked); protocol limits stay at their
# defaults (proto-max-bulk-len 512mb, client-query-buffer-limit 1gb), which
# fit 64 MB. The Keel binary is copied first, so a rebuild during the run
# does not change what is measured. loadgen and standin are compiled here
# with `cc -O2` into a temporary directory.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
SIZES="256k 1m 4m 8m 16m 64m"
SECS=""
WARMUP=""
CONNS=8
REPS=1
QUICK=0
OUT="$BENCH_DIR/results/large_values.md"
IO_ARG=1

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --sizes) SIZES=${2:?--sizes needs a list}; SIZES=${SIZES//,/ }; shift 2 ;;
        --secs) SECS=${2:?--secs needs a number}; shift 2 ;;
        --warmup) WARMUP=${2:?--warmup needs a number}; shift 2 ;;
        --conns) CONNS=${2:?--conns needs a number}; shift 2 ;;
        --reps) REPS=${2:?--reps needs a number}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --io-threads) IO_ARG=${2:?--io-threads needs a list}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
if [ "$QUICK" = 1 ]; then SECS=${SECS:-1.5}; WARMUP=${WARMUP:-0.5}; else SECS=${SECS:-5}; WARMUP=${WARMUP:-1}; fi

[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
parse_io_threads "$IO_ARG"
NIO=${#IO_THREADS_LIST[@]}
MULTI_IO=0
[ "${IO_THREADS_LIST[*]}" = 1 ] || MULTI_IO=1
[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
command -v cc >/dev/null || die "cc not found (apt-get install build-essential)"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"

CFLAGS=(-O2 -Wall -Wextra -Werror -std=c11)
cc "${CFLAGS[@]}" -pthread -o "$BENCH_TMP/loadgen" "$BENCH_DIR/loadgen.c" || die "loadgen did not build"
cc "${CFLAGS[@]}" -o "$BENCH_TMP/standin" "$BENCH_DIR/standin.c" || die "standin did not build"
LOADGEN="$BENCH_TMP/loadgen"
cp "$KEEL" "$BENCH_TMP/keel-server"
KEEL_COPY="$BENCH_TMP/keel-server"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL_COPY" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
# The instances: every server once per io-threads value (lib.sh); IDIR is
# its directory under BENCH_TMP, ILABEL its name in the detail table.
build_instances
IDIR=("${INST[@]}")

load_start=$(load_avg)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "large_values: load average at start: $load_start ($(nproc) CPUs)"
if awk -v l="${load_start%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    echo "large_values: warning: the machine is not idle; numbers will be noisy" >&2
fi

PORTS=()
SPIDS=()
for k in "${!IDIR[@]}"; do
    BENCH_IO_THREADS=${IIO[$k]}
    start_server "${IDIR[$k]}" "$BENCH_TMP/${IDIR[$k]}" -- "${BINS[${ISRV[$k]}]}" ||
        die "could not start ${IDIR[$k]} (--io-threads ${IIO[$k]})"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "large_values: ${TITLES[${ISRV[$k]}]}$(io_suffix "${IIO[$k]}") on port $SERVER_PORT (--io-threads ${IIO[$k]}): $(server_version "${BINS[${ISRV[$k]}]}")"
done
BENCH_IO_THREADS=1

# start_standin SIZE: sets STANDIN_PID, STANDIN_PORT.
STANDIN_PID=""
start_standin() {
    local _ t
    for _ in 1 2 3; do
        # shellcheck disable=SC2153  # PORT is set by pick_port (lib.sh)
        pick_port
        "$BENCH_TMP/standin" -p "$PORT" -s "$1" >"$BENCH_TMP/standin.log" 2>&1 </dev/null &
        STANDIN_PID=$!
        STANDIN_PORT=$PORT
        BENCH_PIDS+=("$STANDIN_PID")
        for ((t = 0; t < 50; t++)); do
            grep -q '^ready' "$BENCH_TMP/standin.log" 2>/dev/null && return 0
            kill -0 "$STANDIN_PID" 2>/dev/null || break
            sleep 0.1
        done
        stop_pid "$STANDIN_PID" 2
        forget_pid "$STANDIN_PID"
    done
    cat "$BENCH_TMP/standin.log" >&2
    die "the stand-in did not start"
}
stop_standin() {
    [ -n "$STANDIN_PID" ] || return 0
    stop_pid "$STANDIN_PID" 5
    forget_pid "$STANDIN_PID"
    STANDIN_PID=""
}

# "minflt ticks" of a process (fields 10, 14 and 15 of /proc/PID/stat).
proc_counters() {
    local st
    st=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "0 0"; return 0; }
    awk '{ print $8, $12 + $13 }' <<<"${st##*) }"
}
# died NAME DIR: the server stopped during a run; show why and stop.
died() {
    local n=$1 dir=${2:-$1}
    echo "large_values: $n exited during a run; loadgen said:" >&2
    tail -n 5 "$BENCH_TMP/lg.err" "$BENCH_TMP/lg.out" >&2 2>/dev/null || true
    if [ -d "$BENCH_TMP/$dir" ]; then tail -n 30 "$BENCH_TMP/$dir/server.log" "$BENCH_TMP/$dir/stdout.log" >&2 2>/dev/null || true; fi
    [ "$n" = standin ] && tail -n 5 "$BENCH_TMP/standin.log" >&2
    die "$n died"
}
TICK_HZ=$(getconf CLK_TCK)
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

# A hard bound on the whole run.
MAX_S=$((720 * REPS * NIO))
[ "$QUICK" = 1 ] && MAX_S=$((240 * REPS * NIO))
RUN_LIMIT=$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 90 }')

# measure NAME IO PID PORT OP SIZE REP: one loadgen run against server NAME
# started with --io-threads IO ("-" for the stand-in); appends a CSV row to
# RAW: name,size,op,gbps,rps,p50_us,p99_us,max_us,cpu_pct,faults_per_req,errors,rep,io_threads
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
measure() {
    local name=$1 io=$2 pid=$3 port=$4 op=$5 size=$6 rep=$7 args=() out f0 t0 f1 t1 rc=0
    local label="$name" dir="$name"
    if [ "$io" != - ]; then label="$name$(io_suffix "$io")"; dir="${label/ /-}"; fi
    args=(-p "$port" -c "$CONNS" -o "$op" -s "$size" -t "$SECS" -w "$WARMUP" -T 60 -q -k "lv:$size")
    [ "$name" != standin ] && [ "$op" = get ] && args+=(--prepare)
    kill -0 "$pid" 2>/dev/null || die "$label is no longer running"
    read -r f0 t0 < <(proc_counters "$pid")
    local s0=$SECONDS
    run_client "$RUN_LIMIT" "$BENCH_TMP/lg.out" "$BENCH_TMP/lg.err" "$LOADGEN" "${args[@]}" || rc=$?
    read -r f1 t1 < <(proc_counters "$pid")
    kill -0 "$pid" 2>/dev/null || died "$label" "$dir"
    local wall=$((SECONDS - s0))
    out=$(grep '^LOAD' "$BENCH_TMP/lg.out" || true)
    if [ -z "$out" ]; then
        tail -n 5 "$BENCH_TMP/lg.err" >&2
        die "loadgen failed against $label ($op $size, exit $rc)"
    fi
    [ "$rc" -eq 0 ] || echo "large_values: $label $op $size: errors or timeouts (see the table)" >&2
    local req gbps rps p50 p99 mx err
    req=$(kv requests <<<"$out"); gbps=$(kv gbps <<<"$out"); rps=$(kv rps <<<"$out")
    p50=$(kv p50_us <<<"$out"); p99=$(kv p99_us <<<"$out"); mx=$(kv max_us <<<"$out")
    err=$(($(kv errors <<<"$out") + $(kv timeouts <<<"$out")))
    # CPU over the whole loadgen run (warm-up included), wall clock rounded
    # to whole seconds: a rough figure, good enough to tell busy from idle.
    awk -v n="$name" -v s="$size" -v o="$op" -v g="$gbps" -v r="$rps" -v a="$p50" -v b="$p99" -v m="$mx" \
        -v t="$((t1 - t0))" -v hz="$TICK_HZ" -v w="$wall" -v sw="$SECS" -v ww="$WARMUP" -v f="$((f1 - f0))" \
        -v q="$req" -v e="$err" -v rp="$rep" -v io="$io" 'BEGIN {
            wall = sw + ww; if (w > wall) wall = w
            fr = q > 0 ? f / (q * (sw + ww) / sw) : f
            printf "%s,%s,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%s,%s,%s\n", n, s, o, g, r, a, b, m, t * 100 / hz / wall, fr, e, rp, io }' >>"$RAW"
    printf '%s %s %s: %s Gbit/s, %s req/s\n' "$label" "$op" "$size" "$gbps" "$rps"
}

SECONDS=0
for size in $SIZES; do
    for rep in $(seq 1 "$REPS"); do
        [ "$SECONDS" -lt "$MAX_S" ] || die "over the ${MAX_S}s time budget (load average $(load_avg))"
        start_standin "$size"
        measure standin - "$STANDIN_PID" "$STANDIN_PORT" get "$size" "$rep"
        stop_standin
        for op in get set; do
            for k in "${!IDIR[@]}"; do
                measure "${NAMES[${ISRV[$k]}]}" "${IIO[$k]}" "${SPIDS[$k]}" "${PORTS[$k]}" "$op" "$size" "$rep"
            done
        done
    done
    # free the values before the next size
    for i in "${!PORTS[@]}"; do
        redis-cli -h 127.0.0.1 -p "${PORTS[$i]}" flushall >/dev/null 2>&1 || true
    done
done
elapsed=$SECONDS
load_end=$(load_avg)

# ---- tables ----
col() { # field name size op io: the median over the reps (io "-": the stand-in)
    awk -F, -v c="$1" -v n="$2" -v s="$3" -v o="$4" -v io="$5" '$1 == n && $2 == s && $3 == o && $13 == io { print $c }' "$RAW" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
label() { # 256k -> 256 KB
    local s=$1
    case "$s" in
        *k|*K) echo "${s%?} KB" ;;
        *m|*M) echo "${s%?} MB" ;;
        *) echo "$s B" ;;
    esac
}

{
    echo "Large values: $(date -u '+%Y-%m-%d') ($started_at), $(nproc) CPUs, load average $load_start at start, $load_end at end; ${elapsed}s."
    echo "loadgen -c $CONNS, ${SECS}s measured after ${WARMUP}s warm-up per run; $REPS run(s) per cell, median shown."
    for i in "${!NAMES[@]}"; do
        if [ "${NAMES[$i]}" = keel ]; then
            echo "Keel: $KEEL ($(server_version "$KEEL_COPY"))"
        else
            echo "${TITLES[$i]}: ${BINS[$i]} ($(server_version "${BINS[$i]}"))"
        fi
    done
    if [ "$MULTI_IO" = 1 ]; then
        echo "io-threads: ${IO_THREADS_LIST[*]} (every server started once per value, same flags; > 1 adds --io-threads-do-reads yes); Keel / peer ratios at the same value."
    fi
    echo
    echo "Payload Gbit/s (8 connections, one request in flight each); \"/ stand-in\" is the fraction of the stand-in's GET of the same size."
    echo
    row="| size | op |"; rule="| ---: | --- |"
    if [ "$MULTI_IO" = 1 ]; then row+=" io-threads |"; rule+=" ---: |"; fi
    row+=" stand-in |"; rule+=" ---: |"
    for i in "${!NAMES[@]}"; do row+=" ${TITLES[$i]} |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do row+=" ${TITLES[$i]} / stand-in |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do
        [ "$i" -eq 0 ] && continue
        row+=" Keel / ${TITLES[$i]} |"; rule+=" ---: |"
    done
    echo "$row"; echo "$rule"
    for op in get set; do
        for size in $SIZES; do
            lim=$(col 4 standin "$size" get -)
            for io in "${IO_THREADS_LIST[@]}"; do
                row="| $(label "$size") | ${op^^} |"
                [ "$MULTI_IO" = 1 ] && row+=" $io |"
                if [ "$op" = get ]; then row+=" $lim |"; else row+=" ($lim) |"; fi
                vals=()
                for i in "${!NAMES[@]}"; do vals+=("$(col 4 "${NAMES[$i]}" "$size" "$op" "$io")"); row+=" ${vals[$i]} |"; done
                for i in "${!NAMES[@]}"; do row+=" $(ratio "${vals[$i]}" "$lim") |"; done
                for i in "${!NAMES[@]}"; do
                    [ "$i" -eq 0 ] && continue
                    row+=" $(ratio "${vals[0]}" "${vals[$i]}")x |"
                done
                echo "$row"
            done
        done
    done
    echo
    echo "Cliffs: a size whose throughput is under half that of the size before."
    echo
    any=0
    for n in standin "${NAMES[@]}"; do
        ios=("${IO_THREADS_LIST[@]}")
        [ "$n" = standin ] && ios=(-)
        for io in "${ios[@]}"; do
            nl=$n
            [ "$io" = - ] || nl+=$(io_suffix "$io")
            for op in get set; do
                [ "$n" = standin ] && [ "$op" = set ] && continue
                prev=""; prevs=""
                for size in $SIZES; do
                    v=$(col 4 "$n" "$size" "$op" "$io")
                    if [ -n "$prev" ] && awk -v a="$v" -v b="$prev" 'BEGIN { exit !(a < b / 2) }'; then
                        echo "- $nl $op: $(label "$prevs") $prev -> $(label "$size") $v Gbit/s ($(ratio "$v" "$prev")x)"
                        any=1
                    fi
                    prev=$v; prevs=$size
                done
            done
        done
    done
    [ "$any" = 1 ] || echo "- none"
    echo
    echo "Detail: per run, latency per request (ms) and the server's CPU (user + system, % of one core, warm-up included) and minor page faults per request."
    echo
    echo "| size | op | server | run | Gbit/s | req/s | p50 ms | p99 ms | max ms | server CPU % | faults/req | errors |"
    echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for size in $SIZES; do
        for op in get set; do
            for n in standin "${NAMES[@]}"; do
                [ "$n" = standin ] && [ "$op" = set ] && continue
                # one row per run, in the order run (io-threads values in turn)
                awk -F, -v n="$n" -v s="$size" -v o="$op" -v L="$(label "$size")" -v m="$MULTI_IO" '$1 == n && $2 == s && $3 == o {
                    sv = (m == 1 && $13 != "-") ? n " io" $13 : n
                    printf "| %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s |\n",
                        L, toupper(o), sv, $12, $4, $5, $6 / 1000, $7 / 1000, $8 / 1000, $9, $10, $11 }' "$RAW"
            done
        done
    done
} >"$OUT"
{ echo "server,size,op,gbps,rps,p50_us,p99_us,max_us,cpu_pct,faults_per_req,errors,rep,io_threads"; cat "$RAW"; } >"${OUT%.md}.csv"
echo
cat "$OUT"
echo
echo "large_values: written to $OUT and ${OUT%.md}.csv (${elapsed}s)"
