#!/usr/bin/env bash
# Memory per key: Keel against Redis (Debian's redis-server) and, optionally,
# a Valkey build, with the same keys in one run. For each value size and with
# and without a TTL, every server is started fresh, loaded with N keys through
# one `redis-cli --pipe` stream, and the growth of used_memory and of
# used_memory_rss (INFO memory) is divided by N. Prints a markdown table and
# writes it to bench/results/memory.md (and memory.csv).
#
#   bench/memory.sh [--valkey /path/to/valkey-server] [--keys N] [--sizes 16,32,100]
#
# Options:
#   --valkey PATH   also measure this valkey-server (see bench/README.md)
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --keel-desc S   how to describe that binary in the output (e.g. a commit)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --baseline PATH also measure this Keel build, as the column "Keel baseline"
#   --keys N        keys per run (default 1000000)
#   --sizes LIST    comma-separated value sizes in bytes (default 16,32,100)
#   --out FILE      markdown output (default: bench/results/memory.md)
#
# Keys are "key:" and 12 digits (16 bytes), values the letter x repeated; a
# TTL is `EX 1000000` (far enough never to expire during the run). The
# figure includes everything a key costs the server: its table slot, its
# entry, its value, and the expiry table for TTL keys. It is read once no
# hash table has been rehashed for 2 s (MEMORY STATS db.dict.rehashing.count,
# at most 60 s after the load); the figure right after the load is also kept.
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
KEYS=1000000
SIZES_ARG="16,32,100"
OUT="$BENCH_DIR/results/memory.md"

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --keel-desc) KEEL_DESC=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --baseline) BASELINE=${2:?--baseline needs a path}; shift 2 ;;
        --keys) KEYS=${2:?--keys needs a number}; shift 2 ;;
        --sizes) SIZES_ARG=${2:?--sizes needs a list}; shift 2 ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

[[ "$KEYS" =~ ^[1-9][0-9]*$ ]] || die "--keys must be a positive integer"
for b in "$KEEL" "$REDIS" ${VALKEY:+"$VALKEY"} ${BASELINE:+"$BASELINE"}; do
    [ -x "$b" ] || die "$b is not an executable"
done
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
command -v python3 >/dev/null || die "python3 not found"
IFS=, read -r -a SIZES <<<"${SIZES_ARG// /}"
for s in "${SIZES[@]}"; do
    [[ "$s" =~ ^[1-9][0-9]*$ ]] || die "--sizes: '$s' is not a positive integer"
done

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi
if [ -n "$BASELINE" ]; then NAMES+=(keelbase); TITLES+=("Keel baseline"); BINS+=("$BASELINE"); fi

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"

# The load: N SETs in RESP, written once per (size, ttl) and replayed to
# every server.
write_load() { # file size ttl(0|1)
    python3 - "$1" "$KEYS" "$2" "$3" <<'EOF'
import sys
path, n, size, ttl = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
val = b"x" * size
with open(path, "wb") as f:
    head = b"*5\r\n$3\r\nSET\r\n" if ttl else b"*3\r\n$3\r\nSET\r\n"
    tail = b"$2\r\nEX\r\n$7\r\n1000000\r\n" if ttl else b""
    vpart = b"$%d\r\n%s\r\n" % (size, val)
    out = []
    for i in range(n):
        out.append(head + b"$16\r\nkey:%012d\r\n" % i + vpart + tail)
        if len(out) == 10000:
            f.write(b"".join(out))
            out = []
    f.write(b"".join(out))
EOF
}

info_field() { # port field
    redis-cli -h 127.0.0.1 -p "$1" info memory | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}

# measure IDX SIZE TTL: a fresh server, the load, and "bytes/key used rss".
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
measure() {
    local i=$1 size=$2 ttl=$3 load="$BENCH_TMP/load-$2-$3.resp" dir
    dir="$BENCH_TMP/${NAMES[$i]}-$size-$ttl"
    start_server "${NAMES[$i]}" "$dir" -- "${BINS[$i]}" || die "could not start ${TITLES[$i]}"
    local port=$SERVER_PORT pid=$SERVER_PID u0 r0 u1 r1 n
    sleep 0.5 # let start-up allocations settle
    u0=$(info_field "$port" used_memory)
    r0=$(info_field "$port" used_memory_rss)
    redis-cli -h 127.0.0.1 -p "$port" --pipe <"$load" >"$dir/pipe.log" 2>&1 ||
        die "redis-cli --pipe failed against ${TITLES[$i]}: $(tail -n 2 "$dir/pipe.log")"
    n=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
    [ "$n" = "$KEYS" ] || die "${TITLES[$i]} holds $n keys, expected $KEYS"
    um=$(info_field "$port" used_memory)
    # The figure is taken once the hash tables have settled: a table that
    # grew near the end of the load is still being rehashed incrementally
    # (old and new arrays both held), and Keel's cron resizes a table that
    # doubled during the load to its tight size once it has not grown for a
    # second; both finish within seconds on an idle server. Every server is
    # given the same wait (MEMORY STATS db.dict.rehashing.count 0 for 2 s
    # in a row, at most 60 s); the used_memory right after the load is kept
    # as "at once", and the wait is reported.
    local waited=0 quiet=0
    while [ "$waited" -lt 600 ] && [ "$quiet" -lt 20 ]; do
        rh=$(redis-cli -h 127.0.0.1 -p "$port" memory stats | tr -d '\r' |
            awk 'p { print; exit } $0 == "db.dict.rehashing.count" { p = 1 }')
        if [ -z "$rh" ] || [ "$rh" = 0 ]; then quiet=$((quiet + 1)); else quiet=0; fi
        sleep 0.1
        waited=$((waited + 1))
    done
    waited=$((waited - quiet)) # tenths of a second until the last rehash ended
    sleep 1 # RSS catches up with frees of the request buffers
    u1=$(info_field "$port" used_memory)
    r1=$(info_field "$port" used_memory_rss)
    echo "${NAMES[$i]},$size,$ttl,$(awk -v a="$u0" -v b="$u1" -v n="$KEYS" 'BEGIN { printf "%.1f", (b - a) / n }'),$(awk -v a="$r0" -v b="$r1" -v n="$KEYS" 'BEGIN { printf "%.1f", (b - a) / n }'),$(awk -v a="$u0" -v b="$um" -v n="$KEYS" 'BEGIN { printf "%.1f", (b - a) / n }'),$(awk -v w="$waited" 'BEGIN { printf "%.1f", w / 10 }')" >>"$RAW"
    stop_pid "$pid" 10
    forget_pid "$pid"
}

# print_table HEAD1 HEAD2 AWK-ACTION: a markdown table with one row per
# (size, TTL) and two columns per server, filled by AWK-ACTION from the
# server's line of the raw CSV.
print_table() {
    local row rule size ttl i
    row="| value | TTL |"
    rule="| ---: | --- |"
    for i in "${!NAMES[@]}"; do row+=" ${TITLES[$i]} $1 | ${TITLES[$i]} $2 |"; rule+=" ---: | ---: |"; done
    echo "$row"
    echo "$rule"
    for size in "${SIZES[@]}"; do
        for ttl in 0 1; do
            row="| $size B | $([ "$ttl" = 1 ] && echo yes || echo no) |"
            for i in "${!NAMES[@]}"; do
                row+=$(awk -F, -v n="${NAMES[$i]}" -v s="$size" -v t="$ttl" \
                    '$1 == n && $2 == s && $3 == t '"$3" "$RAW")
            done
            echo "$row"
        done
    done
}

started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(load_avg)
for size in "${SIZES[@]}"; do
    for ttl in 0 1; do
        write_load "$BENCH_TMP/load-$size-$ttl.resp" "$size" "$ttl"
        for i in "${!NAMES[@]}"; do
            printf 'bench: %-13s %4s B %-6s ... ' "${TITLES[$i]}" "$size" "$([ "$ttl" = 1 ] && echo TTL || echo no-TTL)"
            measure "$i" "$size" "$ttl"
            tail -n 1 "$RAW" | awk -F, '{ printf "%s B/key used, %s B/key RSS (%s at once; settled after %s s)\n", $4, $5, $6, $7 }'
        done
        rm -f "$BENCH_TMP/load-$size-$ttl.resp"
    done
done

if [ "$KEEL" = "$ROOT/build/release/keel-server" ]; then
    keel_rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
else
    keel_rev="binary $KEEL"
fi
[ -z "$KEEL_DESC" ] || keel_rev=$KEEL_DESC
CSV="${OUT%.md}.csv"
{
    echo "server,value_size,ttl,used_bytes_per_key,rss_bytes_per_key,used_bytes_per_key_at_once,settle_seconds"
    cat "$RAW"
} >"$CSV"
{
    echo "## Memory per key ($KEYS keys, 16-byte keys; used_memory and RSS growth / keys)"
    echo
    echo "- date: $started_at; load average at start: $load_start; $(nproc) CPUs"
    for i in "${!NAMES[@]}"; do
        v=$(server_version "${BINS[$i]}")
        [ "${NAMES[$i]}" = keel ] && v+=", $keel_rev"
        echo "- ${TITLES[$i]}: $v"
    done
    echo
    print_table "used" "RSS" '{ printf " %s | %s |", $4, $5 }'
    echo
    echo "Right after the load, before the tables settled (used B/key; seconds until no table was rehashing):"
    echo
    print_table "at once" "settled after" '{ printf " %s | %s s |", $6, $7 }'
} >"$OUT"
echo
cat "$OUT"
echo
echo "bench: wrote $OUT and $CSV"
