#!/usr/bin/env bash
# What the module ABI costs the request path: Keel with no module, with a
# module that registers no hooks (bench/modules/nohooks.c), and with one
# after-command observer that counts bytes (bench/modules/bytecount.c).
#
#   bench/abi_cost.sh [--quick] [--keel PATH]
#
# Two measures for each configuration, pipelined GET and SET (-P 16):
# instructions per request under callgrind ((Ir(N2) - Ir(N1)) / (N2 - N1),
# deterministic), and requests/s from redis-benchmark -c 50 (median of 3,
# configurations alternating; noisy on a shared machine).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
N1=20000
N2=120000
NRPS=1000000
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) N1=10000; N2=50000; NRPS=200000; shift ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        *) die "usage: bench/abi_cost.sh [--quick] [--keel PATH]" ;;
    esac
done
[ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
command -v valgrind >/dev/null || die "valgrind not found"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
for m in nohooks bytecount; do
    cc -O2 -shared -fPIC -fvisibility=hidden -I"$ROOT/sdk/include" "$BENCH_DIR/modules/$m.c" \
        -o "$BENCH_TMP/$m.so" || die "could not build $m.so"
done
CONFIGS=(none nohooks bytecount)
config_args() { # config -> EXTRA_SERVER_ARGS
    EXTRA_SERVER_ARGS=()
    [ "$1" = none ] || EXTRA_SERVER_ARGS=(--loadmodule "$BENCH_TMP/$1.so")
}

# ir_for CONFIG TEST N: sets IR to the Ir of one server life serving N requests.
ir_for() {
    local cfg=$1 t=$2 n=$3 dir="$BENCH_TMP/cg-$1-$2-$3" pid
    config_args "$cfg"
    start_server "keel-$cfg" "$dir" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" -- "$KEEL" ||
        die "could not start keel ($cfg) under valgrind"
    pid=$SERVER_PID
    run_client 600 "$dir/b.csv" "$dir/b.err" redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -P 16 -c 1 \
        -t "$t" -n "$n" --threads 1 --csv || die "redis-benchmark failed ($cfg $t)"
    redis-cli -h 127.0.0.1 -p "$SERVER_PORT" shutdown >/dev/null 2>&1 || true
    callgrind_total "$cfg $t" "$pid" "$dir/cg.out"
}

# rps_for CONFIG TEST: sets RPS from one redis-benchmark run.
rps_for() {
    local dir="$BENCH_TMP/rps-$1-$2-$RANDOM"
    config_args "$1"
    start_server "keel-$1" "$dir" -- "$KEEL" || die "could not start keel ($1)"
    run_client 300 "$dir/b.csv" "$dir/b.err" redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -P 16 -c 50 \
        -t "$2" -n "$NRPS" --threads 1 --csv || die "redis-benchmark failed ($1 $2)"
    RPS=$(awk -F'"' 'NR == 2 { printf "%.0f", $4 }' "$dir/b.csv")
    stop_pid "$SERVER_PID" 10
    forget_pid "$SERVER_PID"
}

median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

declare -A IRQ RPSM
for t in get set; do
    for cfg in "${CONFIGS[@]}"; do
        ir_for "$cfg" "$t" "$N1"; a=$IR
        ir_for "$cfg" "$t" "$N2"; b=$IR
        IRQ["$cfg,$t"]=$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }')
        echo "abi_cost: $cfg $t: ${IRQ["$cfg,$t"]} Ir/request"
    done
    declare -A runs=()
    for rep in 1 2 3; do
        for cfg in "${CONFIGS[@]}"; do rps_for "$cfg" "$t"; runs["$cfg"]+="$RPS "; done
    done
    for cfg in "${CONFIGS[@]}"; do
        # shellcheck disable=SC2086
        RPSM["$cfg,$t"]=$(median3 ${runs["$cfg"]})
        echo "abi_cost: $cfg $t: runs ${runs["$cfg"]}-> median ${RPSM["$cfg,$t"]} rps"
    done
done

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (b - a) * 100 / a }'; }
echo
echo "| test | config | Ir/request | vs none | requests/s (median of 3) | vs none |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for t in get set; do
    for cfg in "${CONFIGS[@]}"; do
        echo "| ${t^^} -P 16 | $cfg | ${IRQ["$cfg,$t"]} | $(pct "${IRQ["none,$t"]}" "${IRQ["$cfg,$t"]}") |" \
             "${RPSM["$cfg,$t"]} | $(pct "${RPSM["none,$t"]}" "${RPSM["$cfg,$t"]}") |"
    done
done
echo "(load average: $(load_avg))"
