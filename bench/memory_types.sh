#!/usr/bin/env bash
# Memory per element of the aggregate types: Keel against Redis (Debian's
# redis-server) and optionally a Valkey build, with the same data in one run.
# For each type two shapes are loaded into a fresh server through one
# `redis-cli --pipe` stream:
#   small  100000 keys of 10 elements each (the compact encodings:
#          listpack, intset)
#   large  one key of 1000000 elements (hashtable, quicklist, skiplist)
# and the growth of used_memory (INFO memory, read once no table has been
# rehashed for 2 s) is divided by the number of elements. Writes a markdown
# table to bench/results/memory-types.md (and .csv).
#
#   bench/memory_types.sh [--valkey PATH] [--types hash,list,set,intset,zset] [--scale F]
#
# Options:
#   --valkey PATH   also measure this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --types LIST    subset of hash,list,set,intset,zset (default: all)
#   --scale F       multiply the key and element counts by F (e.g. 0.1 for a
#                   smoke run)
#   --out FILE      markdown output (default: bench/results/memory-types.md)
#
# Elements: hash fields "f:" + 8 digits with 8-byte values, list elements and
# set members "m:" + 8 digits, intset members the integers, sorted-set
# members "m:" + 8 digits with integer scores. Keys are "key:" + 12 digits.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
TYPES_ARG="hash,list,set,intset,zset"
SCALE=1
OUT="$BENCH_DIR/results/memory-types.md"

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?}; shift 2 ;;
        --keel) KEEL=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?}; shift 2 ;;
        --types) TYPES_ARG=${2:?}; shift 2 ;;
        --scale) SCALE=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
for b in "$KEEL" "$REDIS" ${VALKEY:+"$VALKEY"}; do [ -x "$b" ] || die "$b is not an executable"; done
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
IFS=, read -r -a TYPES <<<"${TYPES_ARG// /}"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi

SMALL_KEYS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 100000 * s }')
SMALL_ELEMS=10
LARGE_ELEMS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"

# write_load FILE TYPE KEYS ELEMS: KEYS keys of ELEMS elements each, added
# 100 elements per command.
write_load() {
    python3 - "$@" <<'EOF'
import sys
path, typ, keys, elems = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cmd = {"hash": b"HSET", "list": b"RPUSH", "set": b"SADD", "intset": b"SADD", "zset": b"ZADD"}[typ]
def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)
def element(i):
    if typ == "hash":
        return [b"f:%08d" % i, b"v:%06d" % (i % 1000000)]
    if typ == "intset":
        return [b"%d" % i]
    if typ == "zset":
        return [b"%d" % i, b"m:%08d" % i]
    return [b"m:%08d" % i]
with open(path, "wb") as f:
    out = []
    for k in range(keys):
        key = b"key:%012d" % k
        for start in range(0, elems, 100):
            args = [cmd, key]
            for i in range(start, min(elems, start + 100)):
                args += element(i)
            out.append(b"*%d\r\n" % len(args) + b"".join(bulk(a) for a in args))
        if len(out) >= 10000:
            f.write(b"".join(out))
            out = []
    f.write(b"".join(out))
EOF
}

info_field() { # port field
    redis-cli -h 127.0.0.1 -p "$1" info memory | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}

# Waits until no table has been rehashed for 2 s (at most 60 s).
wait_settled() { # port
    local waited=0 quiet=0 rh
    while [ "$waited" -lt 600 ] && [ "$quiet" -lt 20 ]; do
        rh=$(redis-cli -h 127.0.0.1 -p "$1" memory stats | tr -d '\r' |
            awk 'p { print; exit } $0 == "db.dict.rehashing.count" { p = 1 }')
        if [ -z "$rh" ] || [ "$rh" = 0 ]; then quiet=$((quiet + 1)); else quiet=0; fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
# measure IDX TYPE SHAPE KEYS ELEMS: appends "server,type,shape,bytes/elem,encoding".
measure() {
    local i=$1 typ=$2 shape=$3 keys=$4 elems=$5 load="$BENCH_TMP/load-$2-$3.resp" dir u0 u1 enc
    dir="$BENCH_TMP/${NAMES[$i]}-$typ-$shape"
    start_server "${NAMES[$i]}" "$dir" -- "${BINS[$i]}" || die "could not start ${TITLES[$i]}"
    local port=$SERVER_PORT pid=$SERVER_PID
    sleep 0.5
    u0=$(info_field "$port" used_memory)
    redis-cli -h 127.0.0.1 -p "$port" --pipe <"$load" >"$dir/pipe.log" 2>&1 ||
        die "redis-cli --pipe failed against ${TITLES[$i]}: $(tail -n 2 "$dir/pipe.log")"
    [ "$(redis-cli -h 127.0.0.1 -p "$port" dbsize)" = "$keys" ] || die "${TITLES[$i]}: wrong key count"
    wait_settled "$port"
    sleep 1
    u1=$(info_field "$port" used_memory)
    enc=$(redis-cli -h 127.0.0.1 -p "$port" object encoding key:000000000000)
    echo "${NAMES[$i]},$typ,$shape,$(awk -v a="$u0" -v b="$u1" -v n="$((keys * elems))" 'BEGIN { printf "%.1f", (b - a) / n }'),$enc" >>"$RAW"
    stop_pid "$pid" 10
    forget_pid "$pid"
}

started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
for typ in "${TYPES[@]}"; do
    for shape in small large; do
        if [ "$shape" = small ]; then keys=$SMALL_KEYS elems=$SMALL_ELEMS; else keys=1 elems=$LARGE_ELEMS; fi
        write_load "$BENCH_TMP/load-$typ-$shape.resp" "$typ" "$keys" "$elems"
        for i in "${!NAMES[@]}"; do
            printf 'bench: %-7s %-6s %-5s ... ' "${TITLES[$i]}" "$typ" "$shape"
            measure "$i" "$typ" "$shape" "$keys" "$elems"
            tail -n 1 "$RAW" | awk -F, '{ printf "%s B/element (%s)\n", $4, $5 }'
        done
        rm -f "$BENCH_TMP/load-$typ-$shape.resp"
    done
done

CSV="${OUT%.md}.csv"
{
    echo "server,type,shape,used_bytes_per_element,encoding"
    cat "$RAW"
} >"$CSV"
{
    echo "## Memory per element of the aggregate types (used_memory growth / elements)"
    echo
    echo "- date: $started_at; small = $SMALL_KEYS keys x $SMALL_ELEMS elements, large = 1 key x $LARGE_ELEMS elements"
    for i in "${!NAMES[@]}"; do
        v=$(server_version "${BINS[$i]}")
        [ "${NAMES[$i]}" = keel ] && v+=", commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "- ${TITLES[$i]}: $v"
    done
    echo
    row="| type | shape |"
    rule="| --- | --- |"
    for i in "${!NAMES[@]}"; do row+=" ${TITLES[$i]} B/elem |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { row+=" Keel / ${TITLES[$i]} |"; rule+=" ---: |"; }; done
    row+=" encoding (Keel) |"
    rule+=" --- |"
    echo "$row"
    echo "$rule"
    for typ in "${TYPES[@]}"; do
        for shape in small large; do
            row="| $typ | $shape |"
            vals=()
            for i in "${!NAMES[@]}"; do
                vals+=("$(awk -F, -v n="${NAMES[$i]}" -v t="$typ" -v s="$shape" '$1 == n && $2 == t && $3 == s { print $4 }' "$RAW")")
                row+=" ${vals[$i]} |"
            done
            for i in "${!NAMES[@]}"; do
                [ "$i" = 0 ] || row+=" $(awk -v a="${vals[0]}" -v b="${vals[$i]}" 'BEGIN { printf "%.2f", a / b }') |"
            done
            row+=" $(awk -F, -v t="$typ" -v s="$shape" '$1 == "keel" && $2 == t && $3 == s { print $5 }' "$RAW") |"
            echo "$row"
        done
    done
} >"$OUT"
echo
cat "$OUT"
echo "bench: wrote $OUT and $CSV"
