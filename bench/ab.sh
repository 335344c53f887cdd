#!/usr/bin/env bash
# A/B of one redis-benchmark workload against two servers: both run at
# once, pinned to CPU 0 (lib.sh), and take turns for ROUNDS rounds with
# redis-benchmark pinned to CPU 1; the report gives each server's median
# rate, the spread of single rounds, and the CPU time per request of the
# server and of the client. The client's column is the point: when it is
# as large as the wall time per request, the rate measures the load
# generator, and the servers' own CPU columns are what compares them.
#
#   bench/ab.sh [--a BIN] [--b BIN] [--rounds N] [--fill CMD] -- BENCHMARK-ARGS...
#
# Options:
#   --a PATH      first server (default: build/release/keel-server)
#   --b PATH      second server (default: /usr/bin/redis-server)
#   --rounds N    rounds, median taken (default 9)
#   --fill CMD    a redis-cli command run once on each server before the
#                 rounds, e.g. "rpush mylist a b c" (repeatable)
# BENCHMARK-ARGS go to redis-benchmark as given (add -c, -P, -n, -t or a
# command of your own); -h and -p are set here.
#
# Example (the LRANGE_300 row of bench/types.sh at -P 1, on its own):
#   bench/ab.sh --b /path/to/valkey-server --fill "rpush mylist $(printf 'xxx %.0s' {1..600})" \
#       -- -c 50 -n 20000 lrange mylist 0 299
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

BIN_A="$ROOT/build/release/keel-server"
BIN_B=/usr/bin/redis-server
ROUNDS=9
FILLS=()
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --a) BIN_A=${2:?}; shift 2 ;;
        --b) BIN_B=${2:?}; shift 2 ;;
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --fill) FILLS+=("${2:?}"); shift 2 ;;
        --) shift; break ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[ $# -gt 0 ] || { usage >&2; die "no redis-benchmark arguments after --"; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
for b in "$BIN_A" "$BIN_B"; do [ -x "$b" ] || die "$b is not an executable"; done
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
BINS=("$BIN_A" "$BIN_B")
PORTS=()
SPIDS=()
for i in 0 1; do
    start_server "server$i" "$BENCH_TMP/s$i" -- "${BINS[$i]}" || die "could not start ${BINS[$i]}"
    PORTS+=("$SERVER_PORT")
    SPIDS+=("$SERVER_PID")
    for f in "${FILLS[@]}"; do
        # The fill is split into words as a shell would (no quoting inside).
        # shellcheck disable=SC2086
        redis-cli -h 127.0.0.1 -p "$SERVER_PORT" $f >/dev/null || die "fill failed: $f"
    done
done

# Server CPU (user + system) in clock ticks, from /proc/PID/stat.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
# A child's CPU (user + system, seconds) comes from `time`'s format.
RAW="$BENCH_TMP/raw"
: >"$RAW"
HZ=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
    for i in 0 1; do
        c0=$(cpu_ticks "${SPIDS[$i]}")
        run_client 900 "$BENCH_TMP/out.csv" "$BENCH_TMP/time.txt" \
            /usr/bin/time -f 'CLIENT %U %S' redis-benchmark -h 127.0.0.1 -p "${PORTS[$i]}" --csv "$@" ||
            die "redis-benchmark failed against ${BINS[$i]}"
        c1=$(cpu_ticks "${SPIDS[$i]}")
        rps=$(tail -n 1 "$BENCH_TMP/out.csv" | cut -d, -f2 | tr -d '"')
        read -r _ cu cs < <(grep '^CLIENT' "$BENCH_TMP/time.txt" | tail -n 1)
        echo "$i $rps $(((c1 - c0))) $cu $cs" >>"$RAW"
        printf 'bench: round %d/%d %s %.0f/s\n' "$r" "$ROUNDS" "$(basename "${BINS[$i]}")" "$rps"
    done
done

# Per server: median rate, min-max, and CPU per request from the totals
# (requests = the -n of each run, redis-benchmark's default 100000).
N=$(awk 'BEGIN { n = 100000 } { for (i = 1; i < NF; i++) if ($i == "-n") n = $(i + 1) } END { print n }' <<<"$*")
echo
echo "| server | median req/s | rounds min-max | server CPU us/req | client CPU us/req | wall us/req |"
echo "| --- | ---: | --- | ---: | ---: | ---: |"
for i in 0 1; do
    rates=$(awk -v id="$i" '$1 == id { print $2 }' "$RAW" | sort -g | paste -sd' ')
    awk -v id="$i" -v hz="$HZ" -v n="$N" -v rates="$rates" -v name="$(server_version "${BINS[$i]}" | cut -d' ' -f1-3)" '
        $1 == id { k++; st += $3; cu += $4 + $5; wall += n / $2 }
        END {
            m = split(rates, r, " ")
            med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
            printf "| %s | %.0f | %.0f-%.0f | %.2f | %.2f | %.2f |\n", name, med, r[1], r[m],
                st / hz * 1e6 / (n * k), cu * 1e6 / (n * k), wall * 1e6 / (n * k)
        }' "$RAW"
done
