#!/usr/bin/env bash
# cpu_throttle_test.sh -- the cpu-throttle module in a real keel-server.
#
# Starts keel-server with `loadmodule cpu-throttle.so`, a low threshold (30%)
# and a short window (200 ms), then:
#   1. idle: INFO cpu_throttle says idle/share 0, the configs read back and
#      CONFIG SET refuses bad values;
#   2. saturates the main thread with an endless stream of pipelined SETs
#      (cpu_throttle_load; redis-benchmark cannot do it: it exits at the
#      first error reply, and redis-cli --pipe parses every reply, too slow
#      to saturate a release server): writes get "THROTTLED ...", INFO
#      cpu_throttle counts them, the exempt command (INCR) and non-writes
#      (GET, PING, INFO, CONFIG, CLIENT) are never refused, and every INFO /
#      CONFIG GET answers within 1 s;
#   3. CONFIG SET under load: enabled no stops throttling at once, max-percent
#      caps the share;
#   4. stops the load: the share is back to 0 and SETs succeed;
#   5. MODULE UNLOAD (section and configs gone), MODULE LOADEX again, and the
#      reloaded module throttles a new load;
#   6. SHUTDOWN: the server exits 0 (under ASan: no leak report).
# Bounded: about 20 s; every client call has a timeout, every wait a
# deadline, and a watchdog ends the test after 100 s.
#
# Usage: cpu_throttle_test.sh <keel-server> <cpu-throttle.so> [cpu_throttle_load]
# Without the third argument the load generator is compiled from
# cpu_throttle_load.c next to this script (cc), or, without a compiler,
# replaced by two redis-cli --pipe streams (enough for a sanitizer build).
set -uo pipefail
export LC_ALL=C # read -N counts bytes

server=${1:-}
module=${2:-}
loadgen=${3:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -x "$server" ] || { echo "usage: $0 <keel-server> <cpu-throttle.so> [cpu_throttle_load]" >&2; exit 2; }
[ -f "$module" ] || { echo "$0: no module at '$module'" >&2; exit 2; }
for tool in redis-cli timeout setsid awk; do
    command -v "$tool" >/dev/null || { echo "$0: $tool not found" >&2; exit 2; }
done
# The server runs in workdir: absolute paths.
server=$(cd "$(dirname "$server")" && pwd)/$(basename "$server")
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")

workdir=$(mktemp -d /tmp/keel-cpu-throttle-XXXXXX)
pid=
port=
load_pid=
watchdog_pid=
failures=0
max_latency_ms=0
SLOW_MS=1000 # an INFO or CONFIG GET slower than this under load fails

stop_load() {
    if [ -n "$load_pid" ]; then
        kill -TERM -- "-$load_pid" 2>/dev/null # the --pipe fallback's group
        kill -TERM "$load_pid" 2>/dev/null
        wait "$load_pid" 2>/dev/null
        load_pid=
    fi
}

cleanup() {
    [ -n "$watchdog_pid" ] && kill "$watchdog_pid" 2>/dev/null
    stop_load
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; fi
    rm -rf "$workdir"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted (watchdog: over 100 s?)" >&2; exit 1' INT TERM
# The watchdog's output goes nowhere, so its sleep never holds ctest's pipe;
# cleanup's TERM ends the sleep too.
(
    trap 'kill "$sleep_pid" 2>/dev/null; exit 0' TERM
    sleep 100 &
    sleep_pid=$!
    wait "$sleep_pid" && kill -TERM $$
) >/dev/null 2>&1 &
watchdog_pid=$!

log() { echo "== $*"; }
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# The timeout only guards against a hang: under ASan, with the main thread
# saturated and the rest of the suite running, 200 piped commands took over
# 5 s (CI: the reply to the 125th INCR was the last one read).
cli() { timeout 30 redis-cli -p "$port" "$@" 2>&1; }

# expect "what" "wanted output" redis-cli args...
expect() {
    local what=$1 want=$2 got
    shift 2
    got=$(cli "$@")
    [ "$got" = "$want" ] || fail "$what: expected [$want], got [$got]"
}

# expect_contains "what" "substring" redis-cli args...
expect_contains() {
    local what=$1 want=$2 got
    shift 2
    got=$(cli "$@")
    case "$got" in
    *"$want"*) ;;
    *) fail "$what: expected output containing [$want], got [$got]" ;;
    esac
}

# expect_sh "what" "wanted output" command...: a shell command's output.
expect_sh() {
    local what=$1 want=$2 got
    shift 2
    got=$(timeout 10 "$@" 2>&1)
    [ "$got" = "$want" ] || fail "$what: expected [$want], got [$got]"
}

# field <name>: a field of INFO cpu_throttle (empty if absent).
field() {
    cli info cpu_throttle | tr -d '\r' | awk -F: -v f="cpu_throttle_$1" '$1 == f { print $2 }'
}

# An operator's session: one connection kept open on fd 5, so timed() sees
# the server's answer time, not redis-cli's start-up on a busy machine.
admin_open() { exec 5<>"/dev/tcp/127.0.0.1/$port"; }
admin_close() { exec 5>&-; }

# resp_read: reads one RESP2 reply from fd 5 (3 s per line at most); sets
# resp_first to its first line if that is still empty.
resp_read() {
    local line n k junk
    IFS= read -r -t 3 line <&5 || return 1
    line=${line%$'\r'}
    [ -z "$resp_first" ] && resp_first=$line
    case ${line:0:1} in
    '$')
        n=${line:1}
        if [ "$n" -ge 0 ]; then IFS= read -r -N $((n + 2)) -t 3 junk <&5 || return 1; fi
        ;;
    '*')
        n=${line:1}
        for ((k = 0; k < n; k++)); do resp_read || return 1; done
        ;;
    esac
}

# timed "what" command args...: sends it on the admin session; fails if no
# complete reply comes, if it is an error, or if it takes over SLOW_MS.
timed() {
    local what=$1 start ms req part a
    shift
    printf -v req '*%d\r\n' $#
    for a in "$@"; do
        printf -v part '$%d\r\n%s\r\n' ${#a} "$a"
        req+=$part
    done
    resp_first=
    start=${EPOCHREALTIME/./}
    # In a subshell: a closed connection's SIGPIPE must not end the test.
    if ! (printf '%s' "$req" >&5) 2>/dev/null || ! resp_read; then
        fail "$what under load: no complete reply within 3 s (connection lost?)"
        return
    fi
    ms=$(((${EPOCHREALTIME/./} - start) / 1000))
    [ "$ms" -gt "$max_latency_ms" ] && max_latency_ms=$ms
    [ "$ms" -gt "$SLOW_MS" ] && fail "$what under load took $ms ms"
    case "$resp_first" in -*) fail "$what under load: $resp_first" ;; esac
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for "what" seconds test-command...: polls every 0.1 s until the
# command succeeds or the deadline passes.
wait_for() {
    local what=$1 secs=$2 deadline
    shift 2
    deadline=$(($(now_ms) + secs * 1000))
    while [ "$(now_ms)" -lt "$deadline" ]; do
        "$@" && return 0
        sleep 0.1
    done
    fail "$what: not within $secs s (INFO: $(cli info cpu_throttle | tr -d '\r' | tr '\n' ' '))"
    return 1
}

state_is() { [ "$(field state)" = "$1" ]; }
throttled_over() { [ "$(field throttled_commands)" -gt "$1" ] 2>/dev/null; }
windows_over() { [ "$(field windows)" -gt "$1" ] 2>/dev/null; }
share_zero() { [ "$(field share_percent)" = "0.00" ]; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_server() {
    local attempt i
    for attempt in 1 2 3 4 5; do
        port=$((10000 + RANDOM % 22000)) # below the ephemeral range
        port_in_use "$port" && continue
        (cd "$workdir" && exec "$server" "$workdir/keel.conf" --port "$port" --bind 127.0.0.1 \
            >"$workdir/server.log" 2>&1) &
        pid=$!
        for i in $(seq 1 400); do # up to 20 s (ASan on a loaded machine)
            kill -0 "$pid" 2>/dev/null || break
            [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ] && return 0
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        pid=
    done
    echo "FAIL: could not start $server; log:" >&2
    cat "$workdir/server.log" >&2
    exit 1
}

stop_server() {
    local i rc
    cli shutdown >/dev/null
    for i in $(seq 1 400); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        fail "the server did not exit within 20 s of SHUTDOWN"
        kill -9 "$pid" 2>/dev/null
    fi
    wait "$pid"
    rc=$?
    pid=
    [ "$rc" -eq 0 ] || fail "the server exited with status $rc after SHUTDOWN"
}

# The load: cpu_throttle_load (given, or compiled here), else two redis-cli
# --pipe streams of SETs in their own process group.
if [ -z "$loadgen" ] && command -v cc >/dev/null &&
    cc -O2 -o "$workdir/cpu_throttle_load" "$here/cpu_throttle_load.c" 2>"$workdir/cc.log"; then
    loadgen=$workdir/cpu_throttle_load
fi
if [ -z "$loadgen" ]; then
    echo "== no load generator: using redis-cli --pipe"
    awk 'BEGIN { srand(7); for (i = 0; i < 20000; i++) {
        k = "load:" int(rand() * 100000); v = sprintf("%064d", i)
        printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' \
        >"$workdir/chunk.resp"
fi
start_load() {
    if [ -n "$loadgen" ]; then
        "$loadgen" "$port" 4 60 &
    else
        setsid bash -c "for s in 1 2; do
                            while :; do cat '$workdir/chunk.resp' || exit; done |
                                redis-cli -p $port --pipe >/dev/null 2>&1 &
                        done; wait" &
    fi
    load_pid=$!
    sleep 0.2
    kill -0 "$load_pid" 2>/dev/null || fail "the load generator exited at once"
}

# N SETs in one redis-cli session: prints how many were THROTTLED.
throttled_of_sets() {
    local n=$1 i
    for ((i = 0; i < n; i++)); do echo "SET probe:$i v"; done | cli | grep -c '^THROTTLED' || true
}

cat >"$workdir/keel.conf" <<EOF
enable-module-command yes
loadmodule $module
cpu-throttle.threshold 30
cpu-throttle.window-ms 200
cpu-throttle.exempt "incr Client"
EOF

start_server
SECONDS=0

# ---- 1. idle ----
log "idle: configs, INFO, validation"
expect_sh "MODULE LIST name" "cpu-throttle" bash -c \
    "redis-cli -p $port module list | grep -x cpu-throttle"
wait_for "a first window" 5 windows_over 0
[ "$(field state)" = "idle" ] || fail "idle state: $(field state)"
[ "$(field share_percent)" = "0.00" ] || fail "idle share: $(field share_percent)"
[ "$(field threshold_percent)" = "30" ] || fail "threshold from the config file: $(field threshold_percent)"
[ "$(field window_ms)" = "200" ] || fail "window from the config file: $(field window_ms)"
[ "$(field max_percent)" = "90" ] || fail "default max-percent: $(field max_percent)"
[ "$(field exempt_commands)" = "2" ] || fail "exempt count: $(field exempt_commands)"
[ "$(field enabled)" = "yes" ] || fail "enabled: $(field enabled)"
expect "CONFIG GET threshold" $'cpu-throttle.threshold\n30' config get cpu-throttle.threshold
expect "CONFIG GET exempt" $'cpu-throttle.exempt\nincr Client' config get cpu-throttle.exempt
expect_contains "threshold 0 refused" "between 1 and 100" config set cpu-throttle.threshold 0
expect_contains "threshold 101 refused" "between 1 and 100" config set cpu-throttle.threshold 101
expect_contains "window 5 refused" "between 10 and 60000" config set cpu-throttle.window-ms 5
expect_contains "enabled maybe refused" "yes' or 'no" config set cpu-throttle.enabled maybe
expect "CONFIG SET initial-percent" "OK" config set cpu-throttle.initial-percent 2
[ "$(field initial_percent)" = "2" ] || fail "initial-percent after CONFIG SET: $(field initial_percent)"
expect "CONFIG SET initial-percent back" "OK" config set cpu-throttle.initial-percent 1
expect "SET when idle" "OK" set k v
[ "$(field throttled_commands)" = "0" ] || fail "throttled while idle: $(field throttled_commands)"

# ---- 2. saturation ----
log "saturating the main thread with SETs"
start_load
wait_for "throttling under load" 20 throttled_over 0
wait_for "state throttling" 10 state_is throttling
admin_open
for round in $(seq 1 5); do
    timed "INFO" info
    timed "INFO cpu_throttle" info cpu_throttle
    timed "CONFIG GET" config get cpu-throttle.threshold
    timed "CONFIG GET maxmemory" config get maxmemory
    timed "PING" ping
    timed "CLIENT ID" client id
    sleep 0.1
done
admin_close
log "slowest INFO/CONFIG/PING/CLIENT under load: ${max_latency_ms} ms"
cpu=$(field main_thread_cpu_percent)
log "under load: main thread CPU ${cpu}%, share $(field share_percent)%, $(field throttled_commands) writes throttled"

# A plain SET from a fresh client sees THROTTLED (share >= 1%; retried).
seen=0
for try in $(seq 1 40); do
    n=$(throttled_of_sets 50)
    if [ "$n" -gt 0 ]; then seen=$n; break; fi
    sleep 0.1
done
[ "$seen" -gt 0 ] || fail "no SET of a redis-cli client was THROTTLED under load"
log "a redis-cli session: $seen of 50 SETs THROTTLED"
expect_sh "the error text" "THROTTLED server CPU over threshold, retry later" bash -c \
    "for i in \$(seq 1 1000); do echo 'SET probe v'; done | redis-cli -p $port | grep -m1 THROTTLED"
expect_contains "errorstats count THROTTLED" "errorstat_THROTTLED:count=" info errorstats

# A write refused while queued in MULTI aborts the transaction at EXEC.
out=$(for i in $(seq 1 40); do printf 'MULTI\nSET tx:%d v\nEXEC\n' "$i"; done | cli)
grep -q '^THROTTLED' <<<"$out" || fail "no queued SET was THROTTLED in 40 transactions"
grep -q '^EXECABORT' <<<"$out" || fail "a transaction with a THROTTLED write was not aborted"

# Exempt (INCR, by config) and non-write commands are never throttled.
out=$(for i in $(seq 1 200); do echo "INCR exempt-counter"; done | cli)
grep -q THROTTLED <<<"$out" && fail "an exempt INCR was throttled"
[ "$(tail -n1 <<<"$out")" = "200" ] || fail "200 INCRs: last reply [$(tail -n1 <<<"$out")]"
out=$(for i in $(seq 1 50); do printf 'GET k\nPING\nDBSIZE\nCLIENT ID\nCONFIG GET hz\n'; done | cli)
grep -q THROTTLED <<<"$out" && fail "a non-write command was throttled"

# ---- 3. CONFIG SET under load ----
log "CONFIG SET under load"
expect "enabled no" "OK" config set cpu-throttle.enabled no
[ "$(field state)" = "disabled" ] || fail "state after enabled no: $(field state)"
share_zero || fail "share after enabled no: $(field share_percent)"
n=$(throttled_of_sets 100)
[ "$n" = "0" ] || fail "$n SETs throttled with cpu-throttle.enabled no"
expect "enabled yes" "OK" config set cpu-throttle.enabled yes
expect "max-percent 20" "OK" config set cpu-throttle.max-percent 20
wait_for "throttling again after enabled yes" 10 state_is throttling
for i in $(seq 1 10); do
    s=$(field share_percent)
    awk -v s="$s" 'BEGIN { exit !(s <= 20.0) }' || fail "share $s over max-percent 20"
    sleep 0.1
done
expect "max-percent 90" "OK" config set cpu-throttle.max-percent 90

# ---- 4. the load stops ----
log "stopping the load"
stop_load
wait_for "share back to 0" 10 share_zero
wait_for "state idle" 5 state_is idle
n=$(throttled_of_sets 100)
[ "$n" = "0" ] || fail "$n of 100 SETs throttled after the load stopped"
expect "GET after the load" "v" get probe:99
total=$(field throttled_commands)
log "after the load: idle, $total writes were throttled in all (+$SECONDS s)"

# ---- 5. unload and reload ----
log "MODULE UNLOAD and reload"
expect "MODULE UNLOAD" "OK" module unload cpu-throttle
expect "INFO cpu_throttle gone" "" info cpu_throttle
expect "configs gone" "" config get 'cpu-throttle.*'
expect "SET without the module" "OK" set k2 v2
expect_contains "arguments refused" "takes no arguments" module load "$module" extra
expect "MODULE LOADEX" "OK" module loadex "$module" config cpu-throttle.threshold 30 \
    config cpu-throttle.window-ms 200
[ "$(field throttled_commands)" = "0" ] || fail "counter after reload: $(field throttled_commands)"
[ "$(field exempt_commands)" = "0" ] || fail "exempt list after reload: $(field exempt_commands)"
expect "CONFIG SET after reload" "OK" config set cpu-throttle.exempt "incr"
start_load
wait_for "the reloaded module throttles" 20 throttled_over 0
admin_open
timed "INFO after reload" info
timed "CONFIG GET after reload" config get cpu-throttle.threshold
admin_close
stop_load
wait_for "share back to 0 after reload" 10 share_zero

# ---- 6. shutdown ----
log "SHUTDOWN"
stop_server
grep -q "throttling stopped" "$workdir/server.log" || fail "no 'throttling stopped' line in the log"

if [ "$failures" -ne 0 ]; then
    echo "cpu_throttle_test: $failures failure(s) in $SECONDS s; server log:" >&2
    tail -n 50 "$workdir/server.log" >&2
    exit 1
fi
echo "cpu_throttle_test: all checks passed in $SECONDS s (slowest admin reply under load ${max_latency_ms} ms)"
