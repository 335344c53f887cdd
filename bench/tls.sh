#!/usr/bin/env bash
# TLS benchmark: Keel with its TLS module (modules/tls) against Redis
# (Debian's redis-server) and, optionally, a Valkey build with TLS, in one
# run. Every server listens on a plain port and a TLS port (the same
# certificate, made at start by tests/modules_it/tls/gen_certs.sh: RSA 2048,
# signed by a throw-away CA), with the same TLS settings (--tls-auth-clients
# no, the rest at Valkey's defaults). Three parts and an optional fourth:
#
#   throughput  SET and GET of 64-byte values, -c 50, at -P 16 and -P 1,
#               over TLS and over plain TCP: req/s, server and client CPU per
#               request, TLS/plain per server, Keel TLS / peer TLS
#   conns       new TLS connections per second with io-threads 2, driven by
#               the benchmark binary with -k 0 (one connection per request)
#               and by bench/tls_connload.c, each alone and while a second
#               client (keep-alive GET, -P 1, over TLS, and over plain beside
#               tls_connload) runs: connections/s, CPU per connection, and
#               the second client's req/s with and without the connection
#               load; then resumed connections/s (tls_connload --resume)
#   large       GET of a 1 MB and an 8 MB value, -P 1, -c 1 and 4, over TLS
#               and plain: Gbit/s of payload
#   callgrind   (only when asked for) instructions per GET at -P 16 under
#               callgrind, over TLS and plain
#
# One benchmark binary drives every server (valkey-benchmark beside --valkey
# when it has --tls, else redis-benchmark). Servers take turns within each
# round; tables show medians of the rounds. Writes bench/results/tls.md and
# the medians to bench/results/tls.csv.
#
#   bench/tls.sh [--valkey /path/to/valkey-server] [--reps N] [--quick]
#
# Options:
#   --valkey PATH   also benchmark this valkey-server (built with BUILD_TLS=yes)
#   --keel PATH     Keel binary (default: build/release/keel-server)
#   --module PATH   Keel's TLS module (default: build/release/modules/tls.so)
#   --redis PATH    Redis binary (default: /usr/bin/redis-server)
#   --client PATH   benchmark binary (redis-benchmark or valkey-benchmark)
#   --servers LIST  comma-separated subset of keel,redis,valkey (default: all
#                   given)
#   --parts LIST    comma-separated subset of throughput,conns,large,callgrind
#                   (default: the first three; run in that order)
#   --reps N        rounds, median taken (default 3)
#   --seconds S     measured seconds per conns window (default 4)
#   --quick         request counts / 10, 1 round, 2 s windows (smoke run)
#   --out FILE      markdown output (default: bench/results/tls.md)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

KEEL="$ROOT/build/release/keel-server"
MODULE="$ROOT/build/release/modules/tls.so"
REDIS=/usr/bin/redis-server
VALKEY=""
CLIENT=""
SERVERS_ARG=""
PARTS_ARG="throughput,conns,large"
REPS=3
SECS=4
QUICK=0
OUT="$BENCH_DIR/results/tls.md"
CMDLINE="bench/tls.sh $*"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --valkey) VALKEY=${2:?--valkey needs a path}; shift 2 ;;
        --keel) KEEL=${2:?--keel needs a path}; shift 2 ;;
        --module) MODULE=${2:?--module needs a path}; shift 2 ;;
        --redis) REDIS=${2:?--redis needs a path}; shift 2 ;;
        --client) CLIENT=${2:?--client needs a path}; shift 2 ;;
        --servers) SERVERS_ARG=${2:?--servers needs a list}; shift 2 ;;
        --parts) PARTS_ARG=${2:?--parts needs a list}; shift 2 ;;
        --reps) REPS=${2:?--reps needs a number}; shift 2 ;;
        --seconds) SECS=${2:?--seconds needs a number}; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive integer"
if [ "$QUICK" = 1 ]; then REPS=1; SECS=2; fi
[ -z "$VALKEY" ] || [ -x "$VALKEY" ] || die "$VALKEY is not an executable"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"

# The servers: keel, redis and (with --valkey) valkey, or the --servers subset.
[ -n "$SERVERS_ARG" ] || SERVERS_ARG="keel,redis${VALKEY:+,valkey}"
NAMES=(); TITLES=(); BINS=()
IFS=, read -r -a wanted <<<"${SERVERS_ARG// /}"
for s in "${wanted[@]}"; do
    case "$s" in
        keel)
            [ -x "$KEEL" ] || die "$KEEL not found; build it first with: bash .ci/setup"
            [ -f "$MODULE" ] || die "$MODULE not found: build the TLS module (cmake --build build/release)"
            NAMES+=(keel); TITLES+=(Keel); BINS+=("$KEEL") ;;
        redis)
            [ -x "$REDIS" ] || die "$REDIS not found (apt-get install redis-server)"
            NAMES+=(redis); TITLES+=(Redis); BINS+=("$REDIS") ;;
        valkey)
            [ -n "$VALKEY" ] || die "--servers valkey needs --valkey PATH"
            NAMES+=(valkey); TITLES+=(Valkey); BINS+=("$VALKEY") ;;
        *) die "--servers: unknown server '$s' (keel, redis, valkey)" ;;
    esac
done
[ ${#NAMES[@]} -gt 0 ] || die "--servers needs at least one server"
PARTS=()
IFS=, read -r -a wanted <<<"${PARTS_ARG// /}"
for p in "${wanted[@]}"; do
    case "$p" in throughput|conns|large|callgrind) ;; *) die "--parts: unknown part '$p' (throughput, conns, large, callgrind)" ;; esac
done
for p in throughput conns large callgrind; do
    case ",${PARTS_ARG// /}," in *",$p,"*) PARTS+=("$p") ;; esac
done

# The benchmark binary: the one given, else valkey-benchmark beside the Valkey
# server, else redis-benchmark; it must speak TLS.
if [ -z "$CLIENT" ]; then
    if [ -n "$VALKEY" ] && [ -x "$(dirname "$VALKEY")/valkey-benchmark" ]; then
        CLIENT="$(dirname "$VALKEY")/valkey-benchmark"
    else
        CLIENT=$(command -v redis-benchmark) || die "redis-benchmark not found (apt-get install redis-tools)"
    fi
fi
[ -x "$CLIENT" ] || die "$CLIENT is not an executable"
help=$("$CLIENT" --help 2>&1 || true)
grep -q -- '--tls ' <<<"$help" || die "$CLIENT was built without TLS (no --tls option)"

trap stop_all EXIT
trap 'exit 130' INT TERM
bench_tmpdir
mkdir -p "$(dirname "$OUT")"
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(load_avg)
echo "bench: load average at start: $load_start ($(nproc) CPUs); $(pinning_desc)"
if awk -v l="${load_start%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    echo "bench: warning: the machine is not idle; numbers will be noisy" >&2
fi

# Certificates, made fresh for every run by the TLS tests' generator: a CA
# and a server certificate for localhost / 127.0.0.1, both RSA 2048 (the key
# size decides the handshake's signing cost; every server gets the same).
CERTS="$BENCH_TMP/certs"
GEN_CERTS="$ROOT/tests/modules_it/tls/gen_certs.sh"
[ -f "$GEN_CERTS" ] || die "$GEN_CERTS not found"
bash "$GEN_CERTS" "$CERTS" >"$BENCH_TMP/gen_certs.log" 2>&1 ||
    { cat "$BENCH_TMP/gen_certs.log" >&2; die "certificate generation failed"; }
TLS_CLIENT_ARGS=(--tls --cacert "$CERTS/ca.crt")

# Server CPU (user + system, all threads) in clock ticks, from /proc/PID/stat.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
HZ=$(getconf CLK_TCK)
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }

# start_tls_server I IO [PREFIX...]: starts server I (index into NAMES) with
# io-threads IO (under PREFIX, e.g. valgrind), a plain port and a TLS port;
# appends to PORTS, TPORTS, SPIDS and sets SERVER_DIR. Waits until PING
# answers over TLS too, so a server whose TLS listener failed stops the run
# here rather than being timed refusing connections.
PORTS=(); TPORTS=(); SPIDS=()
start_tls_server() {
    local i=$1 io=$2 dir="$BENCH_TMP/${NAMES[$1]}-io$2" t=0 limit=50
    shift 2
    [ $# -eq 0 ] || { dir+="-$(basename "$1")-${#SPIDS[@]}"; limit=600; }
    pick_port
    local tport=$PORT
    EXTRA_SERVER_ARGS=()
    [ "${NAMES[$i]}" = keel ] && EXTRA_SERVER_ARGS=(--loadmodule "$MODULE")
    EXTRA_SERVER_ARGS+=(--tls-port "$tport" --tls-cert-file "$CERTS/server.crt"
        --tls-key-file "$CERTS/server.key" --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients no)
    BENCH_IO_THREADS=$io
    start_server "${NAMES[$i]}" "$dir" "$@" -- "${BINS[$i]}" || die "could not start ${NAMES[$i]} with TLS"
    SERVER_DIR=$dir
    EXTRA_SERVER_ARGS=()
    BENCH_IO_THREADS=1
    until [ "$(redis-cli -h 127.0.0.1 -p "$tport" "${TLS_CLIENT_ARGS[@]}" ping 2>/dev/null)" = PONG ]; do
        t=$((t + 1))
        if [ "$t" -gt "$limit" ]; then
            tail -n 20 "$dir/server.log" >&2 2>/dev/null || true
            die "${NAMES[$i]} does not answer PING over TLS on port $tport"
        fi
        sleep 0.1
    done
    PORTS+=("$SERVER_PORT"); TPORTS+=("$tport"); SPIDS+=("$SERVER_PID")
    echo "bench: ${TITLES[$i]} (io-threads $io) on port $SERVER_PORT, TLS port $tport: $(server_version "${BINS[$i]}")"
}

# bench_run PORT TRANSPORT ARGS...: one benchmark run (--csv) under time(1);
# sets RPS and CLIENT_S (the client's user + system seconds).
bench_run() {
    local port=$1 tr=$2 tls=() out="$BENCH_TMP/out.csv" tm="$BENCH_TMP/time.txt"
    shift 2
    [ "$tr" = tls ] && tls=("${TLS_CLIENT_ARGS[@]}")
    : >"$tm"
    if ! run_client 180 "$out" "$tm" /usr/bin/time -f 'CLIENT %U %S' \
        "$CLIENT" -h 127.0.0.1 -p "$port" "${tls[@]}" --csv "$@"; then
        tail -n 5 "$tm" >&2
        die "$(basename "$CLIENT") failed on port $port ($tr): $*"
    fi
    RPS=$(awk -F'","' 'NF > 1 && $1 !~ /"test/ { gsub(/"/, "", $2); r = $2 } END { print r }' "$out")
    [ -n "$RPS" ] || die "no result from $(basename "$CLIENT"): $(cat "$out")"
    CLIENT_S=$(awk '$1 == "CLIENT" { s = $2 + $3 } END { print s + 0 }' "$tm")
}

port_of() { # i transport
    if [ "$2" = tls ]; then echo "${TPORTS[$1]}"; else echo "${PORTS[$1]}"; fi
}

div=1
[ "$QUICK" = 1 ] && div=10
MAX_S=2400
[ "$QUICK" = 1 ] && MAX_S=600
SECONDS=0
check_budget() {
    [ "$SECONDS" -lt "$MAX_S" ] ||
        die "over the ${MAX_S}s time budget (load average $(load_avg)); try again on a quieter machine"
}
CSV="${OUT%.md}.csv"
echo "part,test,pipeline,size,clients,server,transport,metric,median" >"$BENCH_TMP/medians.csv"
# csv_row PART TEST PIPELINE SIZE CLIENTS SERVER TRANSPORT METRIC VALUE
csv_row() { (IFS=,; echo "$*") >>"$BENCH_TMP/medians.csv"; }
SECTIONS="$BENCH_TMP/sections.md"
: >"$SECTIONS"

# --- io-threads 1 servers (throughput and large): pinned like every bench.
IO1_FIRST=${#SPIDS[@]}
case " ${PARTS[*]} " in
    *" throughput "* | *" large "*)
        for i in "${!NAMES[@]}"; do start_tls_server "$i" 1; done ;;
esac

# --- Part 1: throughput.
RAW1="$BENCH_TMP/raw1.csv"
: >"$RAW1"
part_throughput() {
    local p rep i k tr t n c0 c1
    for p in 16 1; do
        for rep in $(seq 1 "$REPS"); do
            for i in "${!NAMES[@]}"; do
                k=$((IO1_FIRST + i))
                for tr in tls plain; do
                    check_budget
                    printf 'bench: throughput -P %-2s round %d/%d %-6s %-5s ' "$p" "$rep" "$REPS" "${NAMES[$i]}" "$tr"
                    for t in set get; do
                        n=100000
                        [ "$p" -gt 1 ] && n=1000000
                        n=$((n / div))
                        kill -0 "${SPIDS[$k]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
                        c0=$(cpu_ticks "${SPIDS[$k]}")
                        bench_run "$(port_of "$k" "$tr")" "$tr" -c 50 -P "$p" -d 64 -n "$n" -t "$t"
                        c1=$(cpu_ticks "${SPIDS[$k]}")
                        awk -v s="${NAMES[$i]}" -v tr="$tr" -v p="$p" -v t="$t" -v r="$rep" -v rps="$RPS" \
                            -v a="$c0" -v b="$c1" -v hz="$HZ" -v n="$n" -v cl="$CLIENT_S" \
                            'BEGIN { printf "%s,%s,%s,%s,%s,%s,%.3f,%.3f\n", s, tr, p, t, r, rps,
                                     (b - a) * 1e6 / hz / n, cl * 1e6 / n }' >>"$RAW1"
                        printf '%s %.0f/s  ' "$t" "$RPS"
                    done
                    echo
                done
            done
        done
    done
}
med1() { # server transport pipeline test column
    awk -F, -v s="$1" -v tr="$2" -v p="$3" -v t="$4" -v c="$5" \
        '$1 == s && $2 == tr && $3 == p && $4 == t { print $c }' "$RAW1" | median
}
report_throughput() {
    local p t i head rule row v tls plain kt
    local -A m
    {
        echo "## 1. Throughput: SET and GET, 64-byte values, -c 50 (requests/s, median of $REPS)"
        echo
        echo "\`$(basename "$CLIENT") -c 50 -P <p> -d 64 -n <n> -t set|get [--tls --cacert ca.crt]\`, n = $((1000000 / div)) at -P 16, $((100000 / div)) at -P 1;"
        echo "io-threads 1; $(pinning_desc)."
        echo
        head="| test | pipeline |"; rule="| --- | ---: |"
        for i in "${!NAMES[@]}"; do
            head+=" ${TITLES[$i]} TLS | ${TITLES[$i]} plain | ${TITLES[$i]} TLS/plain |"; rule+=" ---: | ---: | ---: |"
        done
        for i in "${!NAMES[@]}"; do
            [ "${NAMES[$i]}" = keel ] && continue
            [ "${NAMES[0]}" = keel ] && { head+=" Keel TLS / ${TITLES[$i]} TLS |"; rule+=" ---: |"; }
        done
        echo "$head"; echo "$rule"
        for p in 16 1; do
            for t in set get; do
                row="| ${t^^} | $p |"
                for i in "${!NAMES[@]}"; do
                    tls=$(med1 "${NAMES[$i]}" tls "$p" "$t" 6)
                    plain=$(med1 "${NAMES[$i]}" plain "$p" "$t" 6)
                    m[$i]=$tls
                    row+=" $(printf '%.0f' "$tls") | $(printf '%.0f' "$plain") | $(ratio "$tls" "$plain") |"
                    csv_row throughput "$t" "$p" 64 50 "${NAMES[$i]}" tls rps "$tls"
                    csv_row throughput "$t" "$p" 64 50 "${NAMES[$i]}" plain rps "$plain"
                    csv_row throughput "$t" "$p" 64 50 "${NAMES[$i]}" tls server_cpu_us "$(med1 "${NAMES[$i]}" tls "$p" "$t" 7)"
                    csv_row throughput "$t" "$p" 64 50 "${NAMES[$i]}" plain server_cpu_us "$(med1 "${NAMES[$i]}" plain "$p" "$t" 7)"
                done
                if [ "${NAMES[0]}" = keel ]; then
                    kt=${m[0]}
                    for i in "${!NAMES[@]}"; do
                        [ "$i" = 0 ] || row+=" $(ratio "$kt" "${m[$i]}")x |"
                    done
                fi
                echo "$row"
            done
        done
        echo
        echo "Server CPU per request (µs, user + system over all threads, from /proc/PID/stat; lower is better),"
        echo "and the client's CPU per request against its wall time per request (1e6 / rate): where the two are"
        echo "close, the client was the limit, not the server."
        echo
        head="| test | pipeline |"; rule="| --- | ---: |"
        for i in "${!NAMES[@]}"; do
            head+=" ${TITLES[$i]} TLS CPU | ${TITLES[$i]} plain CPU | client CPU / wall, ${TITLES[$i]} TLS |"; rule+=" ---: | ---: | ---: |"
        done
        if [ "${NAMES[0]}" = keel ]; then
            for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" ${TITLES[$i]} TLS CPU / Keel TLS CPU |"; rule+=" ---: |"; }; done
        fi
        echo "$head"; echo "$rule"
        for p in 16 1; do
            for t in set get; do
                row="| ${t^^} | $p |"
                for i in "${!NAMES[@]}"; do
                    v=$(med1 "${NAMES[$i]}" tls "$p" "$t" 8)
                    m[$i]=$(med1 "${NAMES[$i]}" tls "$p" "$t" 7)
                    row+=" ${m[$i]} | $(med1 "${NAMES[$i]}" plain "$p" "$t" 7) |"
                    row+=" $(awk -v c="$v" -v r="$(med1 "${NAMES[$i]}" tls "$p" "$t" 6)" 'BEGIN { printf "%.2f / %.2f", c, 1e6 / r }') |"
                    csv_row throughput "$t" "$p" 64 50 "${NAMES[$i]}" tls client_cpu_us "$v"
                done
                if [ "${NAMES[0]}" = keel ]; then
                    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || row+=" $(ratio "${m[$i]}" "${m[0]}")x |"; done
                fi
                echo "$row"
            done
        done
        echo
    } >>"$SECTIONS"
}

# --- Part 2: new connections per second with io-threads 2.
# Placement: the servers are not pinned (their main and I/O threads may use
# every CPU), both clients are pinned to the client CPU. On a 2-CPU machine
# that lets a server's two threads run on both cores while the clients
# compete with one of them, the same for every server.
RAW2="$BENCH_TMP/raw2.csv"
: >"$RAW2"
# info_sample PORT: "connections get_calls ping_calls time" now.
info_sample() {
    local out
    out=$(redis-cli -h 127.0.0.1 -p "$1" info stats 2>/dev/null
        redis-cli -h 127.0.0.1 -p "$1" info commandstats 2>/dev/null)
    out=${out//$'\r'/}
    awk -v now="$(date +%s.%N)" -F'[:=,]' '
        $1 == "total_connections_received" { c = $2 }
        $1 == "cmdstat_get" { g = $3 }
        $1 == "cmdstat_ping" { p = $3 }
        END { printf "%d %d %d %s\n", c, g, p, now }' <<<"$out"
}
# bg_client LOG BINARY ARGS...: a client in the background on the client
# CPU; sets BG_PID (recorded for stop_all).
bg_client() {
    local log=$1
    shift
    "${CLIENT_PIN[@]}" "$@" >"$log" 2>&1 </dev/null &
    BG_PID=$!
    BENCH_PIDS+=("$BG_PID")
}
stop_bg() { stop_pid "$1" 5; forget_pid "$1"; }
# The connection loads, each keeping 50 attempts in flight: "rb" is the
# benchmark binary with -k 0 (the usual tool; it spins on its sockets during
# handshakes, see tls_connload.c), "cl" is tls_connload (waits on epoll),
# "clr" is tls_connload --resume (every handshake a session resumption).
CONNLOAD="$BENCH_TMP/tls_connload"
start_conn_load() { # kind tls_port
    if [ "$1" = rb ]; then
        bg_client "$BENCH_TMP/conns.log" "$CLIENT" -h 127.0.0.1 -p "$2" "${TLS_CLIENT_ARGS[@]}" \
            -k 0 -c 50 -n 1000000000 -t ping_inline --csv
    else
        # --resume runs a little past the window and ends by itself: its
        # summary says how many handshakes were resumptions.
        local extra=(-w 0 -t 100000)
        [ "$1" = clr ] && extra=(-w 1 -t "$((SECS + 1))" --resume)
        bg_client "$BENCH_TMP/conns.log" "$CONNLOAD" -p "$2" --cacert "$CERTS/ca.crt" -c 50 "${extra[@]}"
    fi
}
# conn_window K I MODE REP: over SECS seconds after 1 s of warm-up, against
# instance K (server I), runs MODE: "second" (the second client alone, over
# TLS), "plain" (the same over plain TCP), a connection load alone ("rb",
# "cl") or beside a second client ("rb+second", "cl+second", "cl+plain");
# the rates come from the server's own counters. Appends
# "server,mode,rep,conns/s,get/s,server cpu %,load client cpu us/conn".
conn_window() {
    local k=$1 i=$2 mode=$3 rep=$4 s0 s1 c0 c1 l0=0 l1=0 second="" conns=""
    local tport=${TPORTS[$k]} port=${PORTS[$k]}
    case "$mode" in
        second | *+second)
            bg_client "$BENCH_TMP/second.log" "$CLIENT" -h 127.0.0.1 -p "$tport" "${TLS_CLIENT_ARGS[@]}" \
                -c 10 -P 1 -n 1000000000 -t get --csv
            second=$BG_PID ;;
        plain | *+plain)
            bg_client "$BENCH_TMP/second.log" "$CLIENT" -h 127.0.0.1 -p "$port" -c 10 -P 1 -n 1000000000 -t get --csv
            second=$BG_PID ;;
    esac
    case "$mode" in
        second | plain) ;;
        *) start_conn_load "${mode%+*}" "$tport"; conns=$BG_PID ;;
    esac
    sleep 1
    s0=$(info_sample "$port"); c0=$(cpu_ticks "${SPIDS[$k]}")
    [ -z "$conns" ] || l0=$(cpu_ticks "$conns")
    sleep "$SECS"
    s1=$(info_sample "$port"); c1=$(cpu_ticks "${SPIDS[$k]}")
    [ -z "$conns" ] || l1=$(cpu_ticks "$conns")
    [ -z "$second" ] || kill -0 "$second" 2>/dev/null ||
        { cat "$BENCH_TMP/second.log" >&2; die "the second client died (${NAMES[$i]})"; }
    if [ "$mode" = clr ]; then
        wait "$conns" || { cat "$BENCH_TMP/conns.log" >&2; die "tls_connload --resume failed (${NAMES[$i]})"; }
        forget_pid "$conns"
        grep -q 'resumed=[1-9]' "$BENCH_TMP/conns.log" ||
            { cat "$BENCH_TMP/conns.log" >&2; die "${NAMES[$i]} resumed no TLS session"; }
        conns=""
    fi
    [ -z "$conns" ] || kill -0 "$conns" 2>/dev/null ||
        { cat "$BENCH_TMP/conns.log" >&2; die "the connection load died (${NAMES[$i]})"; }
    [ -z "$second" ] || stop_bg "$second"
    [ -z "$conns" ] || stop_bg "$conns"
    kill -0 "${SPIDS[$k]}" 2>/dev/null || die "${NAMES[$i]} died under the connection load"
    read -r a0 g0 p0 t0 <<<"$s0"
    read -r a1 g1 p1 t1 <<<"$s1"
    [ -z "$second" ] || [ "$((g1 - g0))" -gt 0 ] || die "the second client made no requests against ${NAMES[$i]}"
    [ -z "$conns" ] || [ "$((p1 - p0))" -gt 0 ] || die "the connection load made no requests against ${NAMES[$i]}"
    awk -v s="${NAMES[$i]}" -v m="$mode" -v r="$rep" -v dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
        -v dc=$((a1 - a0)) -v dg=$((g1 - g0)) -v cpu=$((c1 - c0)) -v lc=$((l1 - l0)) -v hz="$HZ" \
        'BEGIN { printf "%s,%s,%s,%.1f,%.1f,%.1f,%.1f\n", s, m, r, dc / dt, dg / dt, cpu / hz / dt * 100,
                 (dc > 0 ? lc / hz * 1e6 / dc : 0) }' >>"$RAW2"
    tail -n 1 "$RAW2" | awk -F, '{ printf "%.0f conns/s, %.0f GET/s, server CPU %.0f%%\n", $4, $5, $6 }'
}
CONN_MODES=(second plain rb rb+second cl cl+second cl+plain clr)
part_conns() {
    local rep i k mode saved=("${SERVER_PIN[@]}") first=${#SPIDS[@]} value
    cc -O2 -Wall -Wextra -Werror -std=c11 -o "$CONNLOAD" "$BENCH_DIR/tls_connload.c" -lssl -lcrypto ||
        die "tls_connload did not build (apt-get install libssl-dev)"
    value=$(head -c 64 /dev/zero | tr '\0' v)
    SERVER_PIN=()
    for i in "${!NAMES[@]}"; do start_tls_server "$i" 2; done
    SERVER_PIN=("${saved[@]}")
    for i in "${!NAMES[@]}"; do
        k=$((first + i))
        redis-cli -h 127.0.0.1 -p "${PORTS[$k]}" set key:__rand_int__ "$value" >/dev/null
    done
    for rep in $(seq 1 "$REPS"); do
        for i in "${!NAMES[@]}"; do
            k=$((first + i))
            for mode in "${CONN_MODES[@]}"; do
                check_budget
                printf 'bench: conns round %d/%d %-6s %-9s: ' "$rep" "$REPS" "${NAMES[$i]}" "$mode"
                conn_window "$k" "$i" "$mode" "$rep"
            done
        done
    done
}
med2() { # server mode column
    awk -F, -v s="$1" -v m="$2" -v c="$3" '$1 == s && $2 == m { print $c }' "$RAW2" | median
}
report_conns() {
    local i l conns with alone cpu name
    {
        echo "## 2. New TLS connections per second, io-threads 2 (median of $REPS)"
        echo
        echo "Two connection loads, 50 attempts in flight, each a new TCP connection with a full TLS handshake"
        echo "(verifying the server certificate), one PING, and a close:"
        echo "\`$(basename "$CLIENT") --tls -k 0 -c 50 -t ping_inline\` and \`bench/tls_connload -c 50\` (see its header:"
        echo "the benchmark binary keeps a handshaking socket's write event armed and spins on it; tls_connload waits"
        echo "on epoll for what OpenSSL asks). Second client: \`$(basename "$CLIENT") --tls -c 10 -P 1 -t get\` (keep-alive,"
        echo "64-byte value), alone and beside each load. Each server runs with \`--io-threads 2 --io-threads-do-reads yes\`,"
        echo "not pinned (its threads may use both CPUs); the clients are pinned to CPU ${BENCH_CLIENT_CPU:-1}. Rates come"
        echo "from the server's own counters (INFO total_connections_received, cmdstat_get) over a ${SECS} s window"
        echo "after 1 s of warm-up. Server CPU per connection: user + system of all its threads over the window with"
        echo "the load alone, divided by the connections (a server whose I/O threads poll counts that too); load"
        echo "client CPU per connection likewise for the load generator."
        echo
        echo "| server | connection load | connections/s, alone | with the second client | server CPU µs / conn | load client CPU µs / conn | second client GET/s alone | beside the load | kept |"
        echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        PLAIN_ROWS=()
        for i in "${!NAMES[@]}"; do
            name=${NAMES[$i]}
            alone=$(med2 "$name" second 5)
            for l in rb cl; do
                conns=$(med2 "$name" "$l" 4)
                with=$(med2 "$name" "$l+second" 5)
                cpu=$(med2 "$name" "$l" 6)
                printf '| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n' "${TITLES[$i]}" \
                    "$([ "$l" = rb ] && echo "$(basename "$CLIENT") -k 0" || echo tls_connload)" \
                    "$conns" "$(med2 "$name" "$l+second" 4)" \
                    "$(awk -v c="$cpu" -v n="$conns" 'BEGIN { print (n > 0 ? c / 100 * 1e6 / n : 0) }')" \
                    "$(med2 "$name" "$l" 7)" "$alone" "$with" \
                    "$(awk -v a="$with" -v b="$alone" 'BEGIN { printf "%.0f%%", (b > 0 ? a / b * 100 : 0) }')"
                csv_row conns "$l" 1 0 50 "$name" tls conns_per_s_alone "$conns"
                csv_row conns "$l" 1 0 50 "$name" tls conns_per_s_with_second "$(med2 "$name" "$l+second" 4)"
                csv_row conns "$l" 1 64 10 "$name" tls second_rps_with_load "$with"
            done
            csv_row conns get 1 64 10 "$name" tls second_rps_alone "$alone"
            alone=$(med2 "$name" plain 5); with=$(med2 "$name" cl+plain 5)
            PLAIN_ROWS+=("$(printf '| %s | %.0f | %.0f | %s |' "${TITLES[$i]}" "$alone" "$with" \
                "$(awk -v a="$with" -v b="$alone" 'BEGIN { printf "%.0f%%", (b > 0 ? a / b * 100 : 0) }')")")
            csv_row conns get 1 64 10 "$name" plain second_rps_alone "$alone"
            csv_row conns cl 1 64 10 "$name" plain second_rps_with_load "$with"
        done
        echo
        echo "Session resumption: \`tls_connload --resume\` (each slot offers the session of its previous connection):"
        echo
        echo "| server | resumed connections/s | server CPU µs / conn | load client CPU µs / conn |"
        echo "| --- | ---: | ---: | ---: |"
        for i in "${!NAMES[@]}"; do
            conns=$(med2 "${NAMES[$i]}" clr 4)
            printf '| %s | %.0f | %.0f | %.0f |\n' "${TITLES[$i]}" "$conns" \
                "$(awk -v c="$(med2 "${NAMES[$i]}" clr 6)" -v n="$conns" 'BEGIN { print (n > 0 ? c / 100 * 1e6 / n : 0) }')" \
                "$(med2 "${NAMES[$i]}" clr 7)"
            csv_row conns clr 1 0 50 "${NAMES[$i]}" tls conns_per_s_alone "$conns"
        done
        echo
        echo "The second client over plain TCP (same command without --tls), alone and beside tls_connload:"
        echo
        echo "| server | plain second client GET/s alone | beside tls_connload | kept |"
        echo "| --- | ---: | ---: | ---: |"
        printf '%s\n' "${PLAIN_ROWS[@]}"
        if [ "${NAMES[0]}" = keel ]; then
            echo
            for i in "${!NAMES[@]}"; do
                [ "$i" = 0 ] && continue
                for l in rb cl; do
                    echo "Keel / ${TITLES[$i]} connections/s ($l): load alone $(ratio "$(med2 keel "$l" 4)" "$(med2 "${NAMES[$i]}" "$l" 4)")x," \
                        "with the second client $(ratio "$(med2 keel "$l+second" 4)" "$(med2 "${NAMES[$i]}" "$l+second" 4)")x."
                done
            done
        fi
        echo
    } >>"$SECTIONS"
}

# --- Part 3: large values.
RAW3="$BENCH_TMP/raw3.csv"
: >"$RAW3"
LARGE_SIZES=(1048576 8388608)
LARGE_CLIENTS=(1 4)
large_n() { # size
    local n=2000
    [ "$1" -gt 1048576 ] && n=256
    echo $((n / div > 8 ? n / div : 8))
}
part_large() {
    local size c rep i k tr n file="$BENCH_TMP/value.bin"
    for size in "${LARGE_SIZES[@]}"; do
        head -c "$size" /dev/zero | tr '\0' v >"$file"
        for i in "${!NAMES[@]}"; do
            k=$((IO1_FIRST + i))
            [ "$(redis-cli -h 127.0.0.1 -p "${PORTS[$k]}" -x set key:__rand_int__ <"$file")" = OK ] ||
                die "SET of the $size-byte value failed on ${NAMES[$i]}"
        done
        for c in "${LARGE_CLIENTS[@]}"; do
            for rep in $(seq 1 "$REPS"); do
                for i in "${!NAMES[@]}"; do
                    k=$((IO1_FIRST + i))
                    for tr in tls plain; do
                        check_budget
                        n=$(large_n "$size")
                        kill -0 "${SPIDS[$k]}" 2>/dev/null || die "${NAMES[$i]} is no longer running"
                        bench_run "$(port_of "$k" "$tr")" "$tr" -c "$c" -P 1 -n "$n" -t get
                        awk -v s="${NAMES[$i]}" -v tr="$tr" -v z="$size" -v c="$c" -v r="$rep" -v rps="$RPS" \
                            'BEGIN { printf "%s,%s,%s,%s,%s,%.3f\n", s, tr, z, c, r, rps * z * 8 / 1e9 }' >>"$RAW3"
                        printf 'bench: large GET %7s -c %s round %d/%d %-6s %-5s %s Gbit/s\n' "$size" "$c" "$rep" "$REPS" \
                            "${NAMES[$i]}" "$tr" "$(tail -n 1 "$RAW3" | cut -d, -f6)"
                    done
                done
            done
        done
    done
}
med3() { # server transport size clients
    awk -F, -v s="$1" -v tr="$2" -v z="$3" -v c="$4" '$1 == s && $2 == tr && $3 == z && $4 == c { print $6 }' "$RAW3" | median
}
report_large() {
    local size c i head rule row tls plain kt=""
    local -A m
    {
        echo "## 3. Large values: GET of 1 MB and 8 MB over TLS (payload Gbit/s, median of $REPS)"
        echo
        echo "\`$(basename "$CLIENT") -c <c> -P 1 -n <n> -t get [--tls --cacert ca.crt]\` on one key holding the value"
        echo "(n = $(large_n 1048576) for 1 MB, $(large_n 8388608) for 8 MB); Gbit/s = requests/s x value size x 8."
        echo "io-threads 1; $(pinning_desc)."
        echo
        head="| value | clients |"; rule="| ---: | ---: |"
        for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} TLS | ${TITLES[$i]} plain |"; rule+=" ---: | ---: |"; done
        if [ "${NAMES[0]}" = keel ]; then
            for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" Keel TLS / ${TITLES[$i]} TLS |"; rule+=" ---: |"; }; done
        fi
        echo "$head"; echo "$rule"
        for size in "${LARGE_SIZES[@]}"; do
            for c in "${LARGE_CLIENTS[@]}"; do
                row="| $((size / 1048576)) MB | $c |"
                for i in "${!NAMES[@]}"; do
                    tls=$(med3 "${NAMES[$i]}" tls "$size" "$c"); plain=$(med3 "${NAMES[$i]}" plain "$size" "$c")
                    m[$i]=$tls
                    row+=" $(printf '%.2f' "$tls") | $(printf '%.2f' "$plain") |"
                    csv_row large get 1 "$size" "$c" "${NAMES[$i]}" tls gbit_per_s "$tls"
                    csv_row large get 1 "$size" "$c" "${NAMES[$i]}" plain gbit_per_s "$plain"
                done
                if [ "${NAMES[0]}" = keel ]; then
                    kt=${m[0]}
                    for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || row+=" $(ratio "$kt" "${m[$i]}")x |"; done
                fi
                echo "$row"
            done
        done
        echo
    } >>"$SECTIONS"
}

# --- Part 4 (optional): instructions per request under callgrind.
# (Ir(N2) - Ir(N1)) / (N2 - N1) of two server lives, as bench/callgrind.sh
# does: GET of a 64-byte value at -P 16 -c 1, over TLS and plain. Counts
# instructions, so it does not depend on the machine's load.
CG_N1=10000
CG_N2=50000
declare -A CG_IR
cg_measure() { # i transport n: sets IR
    local i=$1 tr=$2 n=$3 k cgout pid
    cgout="$BENCH_TMP/callgrind.${NAMES[$i]}.$tr.$n.out"
    start_tls_server "$i" 1 valgrind --tool=callgrind --callgrind-out-file="$cgout"
    k=$((${#SPIDS[@]} - 1))
    pid=${SPIDS[$k]}
    redis-cli -h 127.0.0.1 -p "${PORTS[$k]}" set key:__rand_int__ "$(head -c 64 /dev/zero | tr '\0' v)" >/dev/null
    bench_run "$(port_of "$k" "$tr")" "$tr" -c 1 -P 16 -n "$n" -t get
    if [ "${NAMES[$i]}" = keel ]; then
        redis-cli -h 127.0.0.1 -p "${PORTS[$k]}" shutdown >/dev/null 2>&1 || true
    else
        redis-cli -h 127.0.0.1 -p "${PORTS[$k]}" shutdown nosave >/dev/null 2>&1 || true
    fi
    callgrind_total "${NAMES[$i]}" "$pid" "$cgout"
}
part_callgrind() {
    command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
    local i tr ir1
    for i in "${!NAMES[@]}"; do
        for tr in tls plain; do
            printf 'bench: callgrind %-6s %-5s ' "${NAMES[$i]}" "$tr"
            cg_measure "$i" "$tr" "$CG_N1"; ir1=$IR
            cg_measure "$i" "$tr" "$CG_N2"
            CG_IR["$i,$tr"]=$(awk -v a="$ir1" -v b="$IR" -v n1="$CG_N1" -v n2="$CG_N2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }')
            echo "${CG_IR["$i,$tr"]} Ir per request"
        done
    done
}
report_callgrind() {
    local i head rule row
    {
        echo "## 4. Instructions per request (callgrind), GET 64 B at -P 16 -c 1"
        echo
        echo "(Ir(N2) - Ir(N1)) / (N2 - N1), N1 = $CG_N1, N2 = $CG_N2 requests, one server life each, all"
        echo "libraries included (libssl, libcrypto); io-threads 1. Independent of the machine's load."
        echo
        head="| transport |"; rule="| --- |"
        for i in "${!NAMES[@]}"; do head+=" ${TITLES[$i]} Ir/request |"; rule+=" ---: |"; done
        if [ "${NAMES[0]}" = keel ]; then
            for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || { head+=" ${TITLES[$i]} / Keel |"; rule+=" ---: |"; }; done
        fi
        echo "$head"; echo "$rule"
        for tr in tls plain; do
            row="| $tr |"
            for i in "${!NAMES[@]}"; do
                row+=" ${CG_IR["$i,$tr"]} |"
                csv_row callgrind get 16 64 1 "${NAMES[$i]}" "$tr" ir_per_request "${CG_IR["$i,$tr"]}"
            done
            if [ "${NAMES[0]}" = keel ]; then
                for i in "${!NAMES[@]}"; do [ "$i" = 0 ] || row+=" $(ratio "${CG_IR["$i,$tr"]}" "${CG_IR["0,$tr"]}")x |"; done
            fi
            echo "$row"
        done
        echo
    } >>"$SECTIONS"
}

for part in "${PARTS[@]}"; do
    "part_$part"
done
for part in "${PARTS[@]}"; do
    "report_$part"
done
elapsed=$SECONDS

keel_rev="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[ -z "$(git -C "$ROOT" status --porcelain -- core modules sdk 2>/dev/null)" ] || keel_rev+=" (+ uncommitted changes)"
{
    echo "# TLS: Keel's TLS module against the peers"
    echo
    echo "- command: \`$CMDLINE\`"
    echo "- date: $started_at, run time ${elapsed}s$([ "$QUICK" = 1 ] && echo ', --quick (a smoke run, not a figure)')"
    echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), Linux $(uname -r), $(openssl version)"
    echo "- load average (1/5/15 min): $load_start at start, $(load_avg) at end"
    echo "- client: $CLIENT ($("$CLIENT" --version 2>/dev/null | head -n 1)), the same for every server"
    echo "- certificates: RSA 2048 server certificate signed by a fresh RSA 2048 CA; every server gets"
    echo "  \`--tls-port P --tls-cert-file --tls-key-file --tls-ca-cert-file --tls-auth-clients no\`, the rest at its defaults"
    for i in "${!NAMES[@]}"; do
        v=$(server_version "${BINS[$i]}")
        [ "${NAMES[$i]}" = keel ] && v+=", $keel_rev, module $(basename "$MODULE")"
        echo "- ${TITLES[$i]}: $v"
    done
    echo "- servers alternate within each round (and TLS / plain within each server's turn); medians over rounds"
    echo
    cat "$SECTIONS"
} >"$OUT"
cp "$BENCH_TMP/medians.csv" "$CSV"
echo
cat "$OUT"
echo "bench: wrote $OUT and $CSV"
