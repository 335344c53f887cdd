#!/usr/bin/env bash
# Instructions per request (callgrind Ir) for pipelined GET and SET, Keel
# against Redis (Debian's redis-server) and, optionally, a Valkey build.
#
#   bench/callgrind.sh [--valkey /path/to/valkey-server] [--quick]
#
# Each server runs under `valgrind --tool=callgrind` and is driven by
# `redis-benchmark -P 16 -c 1 -t TEST -n N` for two values of N; the server is
# then shut down (SHUTDOWN / SHUTDOWN NOSAVE) so callgrind writes its totals.
# (Ir(N2) - Ir(N1)) / (N2 - N1) cancels start-up and shutdown cost. This
# counts instructions, not time: it is deterministic and immune to load.
#
# Options:
#   --valkey PATH   also measure this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --keel-desc S   how to describe that binary in the output (e.g. a commit)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --n1 N --n2 N   request counts (default 20000 and 120000)
#   --quick         10000 and 50000
#   --size D        value size in bytes (redis-benchmark -d; default 3)
#   --keep DIR      keep the callgrind output files in DIR
#   --tests LIST    comma-separated redis-benchmark tests (default get,set;
#                   e.g. lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin:
#                   a pop test pops what it finds, an empty key once the
#                   pushes ran out; an LRANGE test includes the LPUSH that
#                   redis-benchmark runs first to fill the list)
#   --out FILE      markdown output (default: bench/results/callgrind.md)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
KEEL_DESC=""
N1=20000
N2=120000
KEEP=""
SIZE=3
OUT="$BENCH_DIR/results/callgrind.md"
TESTS_ARG="get,set"

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --keel-desc) KEEL_DESC=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --n1) N1=${2:?}; shift 2 ;;
        --n2) N2=${2:?}; shift 2 ;;
        --quick) N1=10000; N2=50000; shift ;;
        --size) SIZE=${2:?--size needs a byte count}; shift 2 ;;
        --keep) KEEP=${2:?--keep needs a directory}; shift 2 ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --tests) TESTS_ARG=${2:?--tests needs a list}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
[[ "$N1" =~ ^[0-9]+$ && "$N2" =~ ^[0-9]+$ && "$N2" -gt "$N1" ]] || die "need 0 <= --n1 < --n2"
[[ "$SIZE" =~ ^[1-9][0-9]*$ ]] || die "--size must be a positive byte count"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then
    NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY")
fi
IFS=, read -r -a TESTS <<<"${TESTS_ARG// /}"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"
[ -z "$KEEP" ] || mkdir -p "$KEEP"

# measure IDX TEST N: sets IR to the total Ir of one server life serving N
# requests. (Not run in $(...): the server must stay known to the EXIT trap.)
measure() {
    local i=$1 t=$2 n=$3 name=${NAMES[$1]} port dir cgout pid
    dir="$BENCH_TMP/$name-$t-$n"
    cgout="$dir/callgrind.out"
    start_server "$name" "$dir" \
        valgrind --tool=callgrind --callgrind-out-file="$cgout" -- "${BINS[$i]}" ||
        die "could not start $name under valgrind"
    pid=$SERVER_PID
    port=$SERVER_PORT
    # GET reads the key SET writes (redis-benchmark's key:__rand_int__ with
    # no -r, a SIZE-byte value), so both tests touch one existing key.
    [ "$(head -c "$SIZE" /dev/zero | tr '\0' x |
        redis-cli -h 127.0.0.1 -p "$port" -x set key:__rand_int__ 2>&1)" = OK ] ||
        die "could not SET the test key on $name"
    run_client 600 "$dir/benchmark.csv" "$dir/benchmark.err" \
        redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -c 1 -t "$t" -n "$n" -d "$SIZE" --threads 1 --csv ||
        die "redis-benchmark failed against $name under valgrind: $(tail -n 3 "$dir/benchmark.err")"
    if [ "$name" = keel ]; then
        redis-cli -h 127.0.0.1 -p "$port" shutdown >/dev/null 2>&1 || true
    else
        redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
    fi
    callgrind_total "$name" "$pid" "$cgout"
    [ -z "$KEEP" ] || cp "$cgout" "$KEEP/callgrind.$name.$t.d$SIZE.$n.out"
    [[ "$IR" =~ ^[0-9]+$ ]] || die "no totals/summary line in $cgout"
}

declare -A PER_REQ
SECONDS=0
for t in "${TESTS[@]}"; do
    for i in "${!NAMES[@]}"; do
        printf 'callgrind: %-6s %-3s ... ' "${NAMES[$i]}" "$t"
        measure "$i" "$t" "$N1"; ir1=$IR
        measure "$i" "$t" "$N2"; ir2=$IR
        per=$(awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }')
        PER_REQ["$i,$t"]=$per
        echo "Ir($N1) = $ir1, Ir($N2) = $ir2 -> $per per request"
    done
done

header="| test (-P 16 -c 1 -d $SIZE) |"
rule="| --- |"
for i in "${!NAMES[@]}"; do header+=" ${TITLES[$i]} Ir/request |"; rule+=" ---: |"; done
for i in "${!NAMES[@]}"; do
    [ "$i" -eq 0 ] && continue
    header+=" Keel/${TITLES[$i]} |"; rule+=" ---: |"
done
if [ "$KEEL" = "$ROOT/build/release/keel-server" ]; then
    keel_rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [ -n "$(git -C "$ROOT" status --porcelain -- core 2>/dev/null)" ]; then keel_rev+=" (+ uncommitted core/ changes)"; fi
else
    keel_rev="binary $KEEL"
fi
[ -z "$KEEL_DESC" ] || keel_rev=$KEEL_DESC
{
    echo "## Instructions per request (callgrind, lower is better)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), run time ${SECONDS}s"
    echo "- (Ir(N2) - Ir(N1)) / (N2 - N1) with N1 = $N1, N2 = $N2; redis-benchmark -P 16 -c 1 -d $SIZE, one key"
    for i in "${!NAMES[@]}"; do
        v=$(server_version "${BINS[$i]}")
        [ "${NAMES[$i]}" = keel ] && v+=", $keel_rev"
        echo "- ${TITLES[$i]}: $v"
    done
    echo
    echo "$header"
    echo "$rule"
    for t in "${TESTS[@]}"; do
        row="| $(echo "$t" | tr "[:lower:]" "[:upper:]") |"
        for i in "${!NAMES[@]}"; do row+=" ${PER_REQ["$i,$t"]} |"; done
        for i in "${!NAMES[@]}"; do
            [ "$i" -eq 0 ] && continue
            row+=" $(awk -v a="${PER_REQ["0,$t"]}" -v b="${PER_REQ["$i,$t"]}" 'BEGIN { printf "%.2fx", a / b }') |"
        done
        echo "$row"
    done
} >"$OUT"

echo
cat "$OUT"
echo
echo "callgrind: wrote $OUT"
