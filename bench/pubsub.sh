#!/usr/bin/env bash
# Pub/sub fan-out: PUBLISH of 64-byte messages to one channel with 1, 100
# and 1000 subscribers, and the same through a pattern subscription
# (PSUBSCRIBE bench:*), against Keel, Redis (Debian's redis-server) and
# optionally a Valkey build, in one run. bench/pubsub_load drives each run
# (subscribers and pipelined publishers on one epoll loop, see its header);
# the figure is messages delivered per second (publishes per second are
# reported beside it). Servers take turns within each round (Keel, Redis,
# Valkey, then again), each pinned to CPU 0 and the load generator to CPU 1
# (lib.sh); the medians of the rounds are reported with Keel/peer ratios.
# Writes bench/results/pubsub.md and bench/results/pubsub.csv.
#
#   bench/pubsub.sh [--valkey /path/to/valkey-server] [--reps N] [--quick]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --reps N        rounds, median taken (default 3)
#   --seconds S     measured seconds per run (default 5; warm-up 1)
#   --publishers P  publisher connections (default 2), each with 32 PUBLISH in flight
#   --quick         1 s runs, 1 round (smoke run)
#   --out FILE      markdown output (default: bench/results/pubsub.md)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
REDIS=/usr/bin/redis-server
VALKEY=""
REPS=3
SECS=5
WARMUP=1
PUBS=2
DEPTH=32
OUT="$BENCH_DIR/results/pubsub.md"
SUBS_LIST=(1 100 1000)

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?}; shift 2 ;;
        --keel) KEEL=${2:?}; shift 2 ;;
        --redis) REDIS=${2:?}; shift 2 ;;
        --reps) REPS=${2:?}; shift 2 ;;
        --seconds) SECS=${2:?}; shift 2 ;;
        --publishers) PUBS=${2:?}; shift 2 ;;
        --quick) SECS=1; REPS=1; shift ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
[ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
[[ "$PUBS" =~ ^[1-9][0-9]*$ ]] || die "--publishers must be a positive integer"

NAMES=(keel redis)
TITLES=(Keel Redis)
BINS=("$KEEL" "$REDIS")
if [ -n "$VALKEY" ]; then NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY"); fi

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: load average at start: $(load_avg) ($(nproc) CPUs); $(pinning_desc)"

LOAD="$BENCH_TMP/pubsub_load"
cc -O2 -Wall -Wextra -Werror -std=c11 -o "$LOAD" "$BENCH_DIR/pubsub_load.c" || die "pubsub_load did not build"

PORTS=()
SPIDS=()
for i in "${!NAMES[@]}"; do
    start_server "${NAMES[$i]}" "$BENCH_TMP/${NAMES[$i]}" -- "${BINS[$i]}" || die "could not start ${NAMES[$i]}"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    echo "bench: ${TITLES[$i]} on port $SERVER_PORT: $(server_version "${BINS[$i]}")"
done

# One run against server i: MODE (channel|pattern), S subscribers. Appends
# "server,mode,subs,rep,delivered,publishes" to RAW.
RAW="$BENCH_TMP/raw.csv"
: >"$RAW"
run_one() { # i mode subs rep
    local i=$1 mode=$2 subs=$3 rep=$4 extra=() line d p
    [ "$mode" = pattern ] && extra=(--pattern)
    kill -0 "${SPIDS[$i]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
    if ! run_client 120 "$BENCH_TMP/out.txt" "$BENCH_TMP/load.log" "$LOAD" -p "${PORTS[$i]}" \
        -s "$subs" -P "$PUBS" -d "$DEPTH" -t "$SECS" -w "$WARMUP" "${extra[@]}"; then
        tail -n 5 "$BENCH_TMP/load.log" >&2
        die "pubsub_load failed against ${NAMES[$i]} ($mode, $subs subscribers)"
    fi
    line=$(cat "$BENCH_TMP/out.txt")
    d=$(sed -n 's/.*delivered_per_sec=\([0-9]*\).*/\1/p' <<<"$line")
    p=$(sed -n 's/.*publishes_per_sec=\([0-9]*\).*/\1/p' <<<"$line")
    [ -n "$d" ] && [ -n "$p" ] || die "no result in: $line"
    echo "${NAMES[$i]},$mode,$subs,$rep,$d,$p" >>"$RAW"
    printf '%s %s/s delivered, %s/s published\n' "${NAMES[$i]}" "$d" "$p"
}

for mode in channel pattern; do
    for subs in "${SUBS_LIST[@]}"; do
        for rep in $(seq 1 "$REPS"); do
            for i in "${!NAMES[@]}"; do
                printf 'bench: %-7s %4d subscribers round %d/%d ' "$mode" "$subs" "$rep" "$REPS"
                run_one "$i" "$mode" "$subs" "$rep"
            done
        done
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { # server mode subs column
    awk -F, -v n="$1" -v m="$2" -v s="$3" -v c="$4" '$1 == n && $2 == m && $3 == s { print $c }' "$RAW" | median
}

{
    echo "# Pub/sub fan-out: PUBLISH of 64-byte messages"
    echo
    echo "$started_at; $(nproc) CPUs; $(pinning_desc); bench/pubsub_load with $PUBS publisher(s) x $DEPTH PUBLISH in flight, ${SECS}s measured after ${WARMUP}s warm-up; median of $REPS rounds, servers alternating."
    echo "Keel: $(server_version "$KEEL"); Redis: $(server_version "$REDIS")${VALKEY:+; Valkey: $(server_version "$VALKEY")}."
    echo "Load average at the end: $(load_avg)."
    echo
    head="| subscription | subscribers |"
    rule="| --- | ---: |"
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} delivered/s |"; rule+=" ---: |"; done
    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" Keel / ${TITLES[$i]} |"; rule+=" ---: |"; }; done
    for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} publishes/s |"; rule+=" ---: |"; done
    echo "$head"
    echo "$rule"
} >"$OUT"
csv="$(dirname "$OUT")/$(basename "$OUT" .md).csv"
echo "mode,subscribers,$(for n in "${NAMES[@]}"; do printf '%s_delivered,' "$n"; done)$(for n in "${NAMES[@]}"; do printf '%s_publishes,' "$n"; done | sed 's/,$//')" >"$csv"
for mode in channel pattern; do
    for subs in "${SUBS_LIST[@]}"; do
        row="| $mode | $subs |"
        dv=()
        pv=()
        for i in "${!NAMES[@]}"; do
            dv+=("$(med "${NAMES[$i]}" "$mode" "$subs" 5)")
            pv+=("$(med "${NAMES[$i]}" "$mode" "$subs" 6)")
            row+=" $(printf '%.0f' "${dv[$i]}") |"
        done
        for i in "${!NAMES[@]}"; do
            [ "$i" = 0 ] || row+=" $(awk -v a="${dv[0]}" -v b="${dv[$i]}" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }') |"
        done
        for i in "${!NAMES[@]}"; do row+=" $(printf '%.0f' "${pv[$i]}") |"; done
        echo "$row" >>"$OUT"
        echo "$mode,$subs,$(IFS=,; echo "${dv[*]}"),$(IFS=,; echo "${pv[*]}")" >>"$csv"
    done
done
cat "$OUT"
