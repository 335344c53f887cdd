#!/usr/bin/env bash
# Throughput of the stream, bitmap, HyperLogLog and geo commands (issue 16)
# against Redis (Debian's redis-server) and optionally a Valkey build, in one
# run. Each row is one redis-benchmark run of one command (its arguments
# randomised with __rand_int__ where that makes sense) on data the row's set-up
# put in place; servers take turns within each round (Keel, Redis, Valkey,
# then again), each server pinned to CPU 0 and redis-benchmark to CPU 1
# (lib.sh), and the tables show the medians of the rounds with Keel/peer
# ratios, plus each server's CPU per request (user + system from /proc),
# which does not depend on how fast the client can send.
#
# The rows:
#   XADD            XADD bench:x * f v (one stream that grows)
#   XREAD_10        XREAD COUNT 10 STREAMS bench:r 0-0 (1000 entries)
#   XREADGROUP_10   XREADGROUP GROUP g c COUNT 10 STREAMS bench:g > (each
#                   request delivers 10 new entries of a prefilled stream)
#   XACK            XACK bench:g g <random delivered id> (after XREADGROUP)
#   SETBIT / GETBIT bit 8191 of one of 10000 random keys (redis-benchmark's
#                   __rand_int__ has leading zeros, which a bit offset
#                   refuses, so the keys vary rather than the offset)
#   BITCOUNT        of that 128 KB bitmap
#   PFADD / PFCOUNT one key; PFCOUNT_3 the union of three 10k-element keys
#   GEOADD          random points in a 1-degree square
#   GEOSEARCH       FROMLONLAT BYRADIUS 1 km ASC COUNT 10 in that square
# and, apart, BITCOUNT of a 64 MB string (-c 1 -P 1): milliseconds per call.
# With --callgrind, also each row's instructions per request (callgrind Ir,
# -c 1 -P 16, (Ir(N2) - Ir(N1)) / (N2 - N1) over two server lives with the
# same set-up, as bench/callgrind.sh does): deterministic, and the measure
# that still compares the servers where the load generator is the limit
# (rows near 1M req/s, where every server waits for redis-benchmark).
#
#   bench/families.sh [--valkey /path/to/valkey-server] [--reps N] [--quick]
#                     [--callgrind] [--no-throughput]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --reps N        rounds, median taken (default 3)
#   --pipelines L   comma-separated pipeline depths (default 16)
#   --rows LIST     comma-separated subset of the rows (lower case)
#   --quick         request counts / 10 (smoke run)
#   --callgrind     add the instructions-per-request table (valgrind)
#   --no-throughput only that table (with --callgrind)
#   --out FILE      markdown output (default: bench/results/families.md)
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
PIPES_ARG="16"
OUT="$BENCH_DIR/results/families.md"
CALLGRIND=0
THROUGHPUT=1
ROWS_ARG="xadd,xread_10,xreadgroup_10,xack,setbit,getbit,bitcount,pfadd,pfcount,pfcount_3,geoadd,geosearch"
CMDLINE="bench/families.sh $*"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?}; shift 2 ;;
        --keel) KEEL=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?}; shift 2 ;;
        --reps) REPS=${2:?}; shift 2 ;;
        --pipelines) PIPES_ARG=${2:?}; shift 2 ;;
        --rows) ROWS_ARG=${2:?}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --callgrind) CALLGRIND=1; shift ;;
        --no-throughput) THROUGHPUT=0; shift ;;
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
[ "$CALLGRIND" = 0 ] || command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
[ "$THROUGHPUT" = 1 ] || [ "$CALLGRIND" = 1 ] || die "--no-throughput needs --callgrind"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
IFS=, read -r -a PIPES <<<"$PIPES_ARG"
IFS=, read -r -a ROWS <<<"$ROWS_ARG"

# Requests per row: 1-3 s each on a 2-core machine.
N=500000
[ "$QUICK" = 1 ] && N=$((N / 10))
# XREADGROUP_10 delivers 10 entries a request from a stream filled first.
NGROUP=$((N / 10))

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

cli() { redis-cli -h 127.0.0.1 -p "$PORT_NOW" "$@"; }
# Writes `count` commands made by the awk program `gen` (one per line, its
# arguments separated by spaces) as RESP to the server, in one pipe.
pipe_in() { # count awk-program
    awk -v n="$1" "BEGIN { $2 }" | awk '{ printf "*%d\r\n", NF; for (i = 1; i <= NF; i++) printf "$%d\r\n%s\r\n", length($i), $i }' |
        redis-cli -h 127.0.0.1 -p "$PORT_NOW" --pipe >/dev/null
}

# Set-up of a row on the server at PORT_NOW (after FLUSHALL), and the
# benchmark's command and -r range. XACK follows XREADGROUP_10 on the same
# data, so the two share the group's set-up and run in that order.
row_setup() { # row
    case "$1" in
        xread_10) pipe_in 1000 'for (i = 1; i <= n; i++) print "XADD bench:r " i "-1 f v"' ;;
        xreadgroup_10)
            pipe_in $((NGROUP * 10 + 100)) 'for (i = 1; i <= n; i++) print "XADD bench:g " i "-1 f v"'
            cli xgroup create bench:g g 0 >/dev/null ;;
        getbit) pipe_in 10000 'for (i = 0; i < n; i++) print "SETBIT bench:b:" sprintf("%012d", i) " 8191 1"' ;;
        bitcount) pipe_in 20000 'srand(1); for (i = 0; i < n; i++) print "SETBIT bench:b " int(rand() * 1048576) " 1"' ;;
        pfcount) pipe_in 10000 'for (i = 0; i < n; i++) print "PFADD bench:h e" i' ;;
        pfcount_3) pipe_in 10000 'for (i = 0; i < n; i++) print "PFADD bench:h1 a" i "\nPFADD bench:h2 b" i "\nPFADD bench:h3 c" i' ;;
        geosearch) pipe_in 100000 'srand(2); for (i = 0; i < n; i++) printf "GEOADD bench:geo %.6f %.6f m%d\n", 13 + rand(), 38 + rand(), i' ;;
    esac
}
row_cmd() { # row -> sets CMD (array) and RANGE
    RANGE=1000000
    case "$1" in
        xadd) CMD=(XADD bench:x '*' f v) ;;
        xread_10) CMD=(XREAD COUNT 10 STREAMS bench:r 0-0) ;;
        xreadgroup_10) CMD=(XREADGROUP GROUP g c COUNT 10 STREAMS bench:g '>') ;;
        xack) CMD=(XACK bench:g g __rand_int__-1); RANGE=$((NGROUP * 10)) ;;
        setbit) CMD=(SETBIT bench:b:__rand_int__ 8191 1); RANGE=10000 ;;
        getbit) CMD=(GETBIT bench:b:__rand_int__ 8191); RANGE=10000 ;;
        bitcount) CMD=(BITCOUNT bench:b) ;;
        pfadd) CMD=(PFADD bench:h __rand_int__); RANGE=100000000 ;;
        pfcount) CMD=(PFCOUNT bench:h) ;;
        pfcount_3) CMD=(PFCOUNT bench:h1 bench:h2 bench:h3) ;;
        geoadd) CMD=(GEOADD bench:geo 13.__rand_int__ 38.__rand_int__ m__rand_int__) ;;
        geosearch) CMD=(GEOSEARCH bench:geo FROMLONLAT 13.5 38.5 BYRADIUS 1 km ASC COUNT 10) ;;
        *) die "unknown row: $1" ;;
    esac
}
row_requests() { # row
    case "$1" in
        xreadgroup_10) echo "$NGROUP" ;;
        bitcount | pfcount_3 | geosearch) echo $((N / 5)) ;;
        *) echo "$N" ;;
    esac
}

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
TICK_HZ=$(getconf CLK_TCK)
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
run_row() { # i p rep row
    local i=$1 p=$2 rep=$3 row=$4 n c0 c1 rps cpu log="$BENCH_TMP/benchmark-$4.log"
    : >"$log"
    PORT_NOW=${PORTS[$i]}
    kill -0 "${SPIDS[$i]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
    # XACK acks what XREADGROUP_10 just delivered: no flush between them.
    if [ "$row" != xack ]; then
        [ "$(cli flushall 2>&1)" = OK ] || die "FLUSHALL failed on ${NAMES[$i]}"
        row_setup "$row"
    fi
    row_cmd "$row"
    n=$(row_requests "$row")
    c0=$(cpu_ticks "${SPIDS[$i]}")
    if ! run_client 900 "$BENCH_TMP/out.csv" "$log" redis-benchmark -h 127.0.0.1 -p "$PORT_NOW" \
        -c 50 -P "$p" -n "$n" -r "$RANGE" --threads 1 --csv "${CMD[@]}"; then
        tail -n 5 "$log" >&2
        die "redis-benchmark failed against ${NAMES[$i]} ($row, -P $p)"
    fi
    c1=$(cpu_ticks "${SPIDS[$i]}")
    # An error reply counts as a request for redis-benchmark, which prints
    # it: refuse a row whose command the server rejects.
    if grep -q 'Error from server' "$log" 2>/dev/null; then
        die "${NAMES[$i]} answers an error to ${CMD[*]}: $(grep -m1 'Error from server' "$log")"
    fi
    rps=$(awk -F'","' 'NF > 1 && $1 !~ /"test/ { gsub(/"/, "", $2); r = $2 } END { print r }' "$BENCH_TMP/out.csv")
    [ -n "$rps" ] || die "no result for $row in: $(cat "$BENCH_TMP/out.csv")"
    cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$TICK_HZ" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1e6 / hz / n }')
    echo "${NAMES[$i]},$p,$row,$rep,$rps,$cpu" >>"$RAW"
    printf '%s %.0f/s  ' "$row" "$rps"
}

# BITCOUNT of a 64 MB string: SETBIT at the last bit makes it, SETRANGE
# fills a part with non-zero bytes; ms per call over 20 calls, -c 1.
RAWBIG="$BENCH_TMP/rawbig.csv"
: >"$RAWBIG"
run_bitcount_big() { # i rep
    local i=$1 rep=$2 t0 t1
    PORT_NOW=${PORTS[$i]}
    cli flushall >/dev/null
    cli setbit bench:big $((64 * 1024 * 1024 * 8 - 1)) 1 >/dev/null
    cli setrange bench:big 1000 "$(head -c 100000 /dev/zero | tr '\0' 'U')" >/dev/null
    t0=$(date +%s%N)
    run_client 300 "$BENCH_TMP/out.csv" "$BENCH_TMP/benchmark.log" redis-benchmark -h 127.0.0.1 -p "$PORT_NOW" \
        -c 1 -P 1 -n 20 --threads 1 --csv BITCOUNT bench:big || die "BITCOUNT 64 MB failed on ${NAMES[$i]}"
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" -v pre="${NAMES[$i]},$rep" 'BEGIN { printf "%s,%.3f\n", pre, (b - a) / 1e6 / 20 }' >>"$RAWBIG"
    cli flushall >/dev/null
}

throughput() {
for p in "${PIPES[@]}"; do
    for rep in $(seq 1 "$REPS"); do
        for i in "${!NAMES[@]}"; do
            printf 'bench: -P %-2s round %d/%d %-6s ' "$p" "$rep" "$REPS" "${NAMES[$i]}"
            for row in "${ROWS[@]}"; do run_row "$i" "$p" "$rep" "$row"; done
            echo
        done
    done
done
for rep in $(seq 1 "$REPS"); do
    for i in "${!NAMES[@]}"; do run_bitcount_big "$i" "$rep"; done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { awk -F, -v n="$1" -v p="$2" -v t="$3" -v c="$4" '$1 == n && $2 == p && $3 == t { print $c }' "$RAW" | median; }

{
    echo "# Streams, bitmaps, HyperLogLog and geo: one command per row"
    echo
    echo "$started_at; $(nproc) CPUs; $(pinning_desc); -c 50 --threads 1; median of $REPS rounds, servers alternating."
    echo "Command: \`$CMDLINE\`."
    echo "Keel: $(server_version "$KEEL"); Redis: $(server_version "$REDIS")${VALKEY:+; Valkey: $(server_version "$VALKEY")}."
    echo "Load average at the end: $(load_avg)."
    echo
    head="| row | pipeline |"
    rule="| --- | ---: |"
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} req/s |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" Keel / ${TITLES[$i]} |"; rule+=" ---: |"; }; done
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} CPU us/req |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" CPU ${TITLES[$i]} / Keel |"; rule+=" ---: |"; }; done
    echo "$head"
    echo "$rule"
} >"$OUT"
csv="$(dirname "$OUT")/$(basename "$OUT" .md).csv"
echo "row,pipeline,$(IFS=,; echo "${NAMES[*]}"),$(for n in "${NAMES[@]}"; do printf '%s_cpu_us,' "$n"; done | sed 's/,$//')" >"$csv"
for p in "${PIPES[@]}"; do
    for row in "${ROWS[@]}"; do
        line="| ${row^^} | $p |"
        vals=(); cpus=()
        for i in "${!NAMES[@]}"; do vals+=("$(med "${NAMES[$i]}" "$p" "$row" 5)"); line+=" $(printf '%.0f' "${vals[$i]}") |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || line+=" $(awk -v a="${vals[0]}" -v b="${vals[$i]}" 'BEGIN { printf "%.2fx", a / b }') |"
        done
        for i in "${!NAMES[@]}"; do cpus+=("$(med "${NAMES[$i]}" "$p" "$row" 6)"); line+=" ${cpus[$i]} |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || line+=" $(awk -v a="${cpus[0]}" -v b="${cpus[$i]}" 'BEGIN { printf "%.2fx", b / a }') |"
        done
        echo "$line" >>"$OUT"
        echo "$row,$p,$(IFS=,; echo "${vals[*]}"),$(IFS=,; echo "${cpus[*]}")" >>"$csv"
    done
done
{
    echo
    echo "BITCOUNT of a 64 MB string, -c 1 -P 1, ms per call (median of $REPS rounds of 20 calls):"
    echo
    line="|"; rule="|"
    for i in "${!NAMES[@]}"; do line+=" ${TITLES[$i]} |"; rule+=" ---: |"; done
    echo "$line"; echo "$rule"
    line="|"
    for i in "${!NAMES[@]}"; do
        line+=" $(awk -F, -v n="${NAMES[$i]}" '$1 == n { print $3 }' "$RAWBIG" | median) |"
    done
    echo "$line"
} >>"$OUT"
}

# ---- instructions per request (--callgrind) ----
# Each row on a fresh server under callgrind: the row's set-up sized for
# CG_N2 requests, then N requests at -c 1 -P 16; run for N = CG_N1 and
# CG_N2, the difference divided by CG_N2 - CG_N1 cancels start-up, set-up
# and shutdown. The slow rows take a tenth of the requests.
CG_N1=5000
CG_N2=25000
[ "$QUICK" = 1 ] && CG_N1=1000 && CG_N2=5000
cg_requests() { # row n
    case "$1" in
        # XREADGROUP_10 needs ten new entries a request (cg_setup adds
        # CG_N2 + 100).
        bitcount | pfcount_3 | geosearch | xreadgroup_10) echo $(($2 / 10)) ;;
        *) echo "$2" ;;
    esac
}
cg_setup() { # row
    N=$CG_N2
    NGROUP=$((N / 10))
    case "$1" in
        xack)
            row_setup xreadgroup_10
            cli xreadgroup group g c count $((NGROUP * 10)) streams bench:g '>' >/dev/null ;;
        *) row_setup "$1" ;;
    esac
}
cg_measure() { # i row n: sets IR
    local i=$1 row=$2 n=$3 name=${NAMES[$1]} dir pid
    dir="$BENCH_TMP/cg-$name-$row-$n"
    start_server "$name" "$dir" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" -- "${BINS[$i]}" ||
        die "could not start $name under valgrind"
    pid=$SERVER_PID
    PORT_NOW=$SERVER_PORT
    cg_setup "$row"
    row_cmd "$row"
    run_client 900 "$dir/out.csv" "$dir/benchmark.log" redis-benchmark -h 127.0.0.1 -p "$PORT_NOW" \
        -c 1 -P 16 -n "$n" -r "$RANGE" --threads 1 --csv "${CMD[@]}" ||
        die "redis-benchmark failed against $name under valgrind ($row)"
    ! grep -q 'Error from server' "$dir/benchmark.log" || die "$name answers an error to ${CMD[*]}"
    cli shutdown nosave >/dev/null 2>&1 || true
    callgrind_total "$name ($row)" "$pid" "$dir/cg.out"
}
instructions() {
    local head="| row (-c 1 -P 16) |" rule="| --- |" line row i n1 n2 ir1 per
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} Ir/request |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" ${TITLES[$i]} / Keel |"; rule+=" ---: |"; }; done
    {
        echo
        echo "Instructions per request under callgrind ($CG_N1 and $CG_N2 requests; XREADGROUP_10, BITCOUNT, PFCOUNT_3 and GEOSEARCH a tenth of that):"
        echo
        echo "$head"
        echo "$rule"
    } >>"$OUT"
    for row in "${ROWS[@]}"; do
        n1=$(cg_requests "$row" "$CG_N1")
        n2=$(cg_requests "$row" "$CG_N2")
        local pers=()
        for i in "${!NAMES[@]}"; do
            printf 'bench: callgrind %-6s %-13s ' "${NAMES[$i]}" "$row"
            cg_measure "$i" "$row" "$n1"; ir1=$IR
            cg_measure "$i" "$row" "$n2"
            per=$(awk -v a="$ir1" -v b="$IR" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }')
            pers+=("$per")
            echo "$per Ir/request"
        done
        line="| ${row^^} |"
        for i in "${!NAMES[@]}"; do line+=" ${pers[$i]} |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || line+=" $(awk -v a="${pers[0]}" -v b="${pers[$i]}" 'BEGIN { printf "%.2fx", b / a }') |"
        done
        echo "$line" >>"$OUT"
    done
}

if [ "$THROUGHPUT" = 1 ]; then
    throughput
else
    {
        echo "# Streams, bitmaps, HyperLogLog and geo: one command per row"
        echo
        echo "$started_at; $(nproc) CPUs. Command: \`$CMDLINE\`."
        echo "Keel: $(server_version "$KEEL"); Redis: $(server_version "$REDIS")${VALKEY:+; Valkey: $(server_version "$VALKEY")}."
    } >"$OUT"
fi
[ "$CALLGRIND" = 0 ] || instructions
cat "$OUT"
