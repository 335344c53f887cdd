#!/usr/bin/env bash
# redis_cli.sh -- drives a real keel-server with the stock Valkey/Redis tools:
# redis-cli commands (plain, -n, -3/RESP3, --scan, --bigkeys, errors),
# redis-cli --pipe mass insertion, redis-cli monitor and the operator
# commands (COMMANDLOG, LATENCY, CLIENT PAUSE), redis-cli subscribe and
# -3 psubscribe (keyspace notifications), and redis-benchmark (set, get, incr,
# mset, ping) with no errors; then checks the server exits 0 on SIGTERM.
#
# Usage: redis_cli.sh [path/to/keel-server]   (default: $KEEL_SERVER)
set -uo pipefail

server=${1:-${KEEL_SERVER:-}}
[ -x "$server" ] || { echo "redis_cli.sh: no server binary (argument or \$KEEL_SERVER)" >&2; exit 2; }

workdir=$(mktemp -d /tmp/keel-it-cli-XXXXXX)
pid=
failures=0

cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect "what" "wanted output" command...
expect() {
    local what=$1 want=$2
    shift 2
    local got
    got=$("$@" 2>&1)
    if [ "$got" != "$want" ]; then
        fail "$what: expected [$want], got [$got]"
    fi
}

# Starts the server on a free port (retrying on a port clash).
start_server() {
    local attempt
    for attempt in 1 2 3 4 5; do
        port=$((10000 + RANDOM % 22000)) # below the ephemeral range
        (cd "$workdir" && exec "$server" --port "$port" --bind 127.0.0.1 >"$workdir/server.log" 2>&1) &
        pid=$!
        local i
        for i in $(seq 1 200); do
            if ! kill -0 "$pid" 2>/dev/null; then break; fi
            if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then return 0; fi
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        pid=
    done
    echo "redis_cli.sh: could not start $server; log:" >&2
    cat "$workdir/server.log" >&2
    exit 1
}

start_server
cli=(redis-cli -p "$port")

# ---- plain commands (stdout is not a tty: raw output) ----
expect "PING" "PONG" "${cli[@]}" ping
expect "SET" "OK" "${cli[@]}" set greeting "hello world"
expect "GET" "hello world" "${cli[@]}" get greeting
expect "GET missing" "" "${cli[@]}" get nosuchkey
expect "INCR" "1" "${cli[@]}" incr counter
expect "INCRBY" "11" "${cli[@]}" incrby counter 10
expect "MSET" "OK" "${cli[@]}" mset a 1 b 2 c 3
expect "MGET" $'1\n2\n\n3' "${cli[@]}" mget a b nosuchkey c
expect "EXPIRE" "1" "${cli[@]}" expire a 100
ttl=$("${cli[@]}" ttl a)
{ [ "$ttl" -ge 90 ] && [ "$ttl" -le 100 ]; } 2>/dev/null || fail "TTL: expected 90..100, got [$ttl]"
expect "DBSIZE" "5" "${cli[@]}" dbsize
expect "ECHO binary" "a b" "${cli[@]}" echo "a b"
expect "unknown command" "ERR unknown command 'nosuchcmd', with args beginning with: 'x' " "${cli[@]}" nosuchcmd x
expect "wrong type of argument" "ERR value is not an integer or out of range" "${cli[@]}" incrby counter abc
expect "-n 3 SET" "OK" "${cli[@]}" -n 3 set indb3 yes
expect "-n 3 GET" "yes" "${cli[@]}" -n 3 get indb3
expect "db0 has no indb3" "0" "${cli[@]}" exists indb3
expect "RESP3 HELLO proto" "proto 3" bash -c "redis-cli -p $port -3 hello 3 | grep '^proto'"
expect "RESP3 GET missing" "" "${cli[@]}" -3 get nosuchkey
expect "stdin argument (-x)" "OK" bash -c "printf 'from-stdin' | redis-cli -p $port -x set fromstdin"
expect "stdin value" "from-stdin" "${cli[@]}" get fromstdin
expect "INFO redis_version" "1" bash -c "redis-cli -p $port info server | grep -c '^redis_version:'"
expect "CONFIG GET" $'maxmemory\n0' "${cli[@]}" config get maxmemory
expect "quoted input" "OK" "${cli[@]}" set "key with spaces" "value with \"quotes\""
expect "quoted output" 'value with "quotes"' "${cli[@]}" get "key with spaces"

# Commands from stdin, one per line.
expect "commands from stdin" $'OK\nv1\n1\n2' bash -c "printf 'set k1 v1\nget k1\nincr counter2\nincr counter2\n' | redis-cli -p $port"

# --scan uses SCAN with a cursor until it returns 0.
for i in $(seq 1 300); do echo "SET scan:$i x"; done | redis-cli -p "$port" >/dev/null
expect "--scan" "300" bash -c "redis-cli -p $port --scan --pattern 'scan:*' | sort -u | wc -l"

# --bigkeys: SCAN + TYPE + STRLEN.
"${cli[@]}" set bigkey "$(head -c 5000 /dev/zero | tr '\0' x)" >/dev/null
bigkeys=$("${cli[@]}" --bigkeys 2>&1)
if [ $? -ne 0 ] || ! grep -q "bigkey" <<<"$bigkeys"; then
    fail "--bigkeys did not find bigkey: $bigkeys"
fi

# --pipe mass insertion (the raw protocol, 10,000 SETs).
expect "FLUSHALL" "OK" "${cli[@]}" flushall
awk 'BEGIN { for (i = 0; i < 10000; i++) { k = "pipe:" i; v = "value-" i;
    printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' >"$workdir/mass.txt"
pipe_out=$(redis-cli -p "$port" --pipe <"$workdir/mass.txt" 2>&1)
if [ $? -ne 0 ] || ! grep -q "errors: 0, replies: 10000" <<<"$pipe_out"; then
    fail "--pipe: $pipe_out"
fi
expect "DBSIZE after --pipe" "10000" "${cli[@]}" dbsize
expect "GET after --pipe" "value-9999" "${cli[@]}" get pipe:9999

# --pipe with errors: they are counted, not fatal.
printf '*2\r\n$4\r\nINCR\r\n$6\r\npipe:1\r\n*1\r\n$4\r\nPING\r\n' >"$workdir/errors.txt"
pipe_out=$(redis-cli -p "$port" --pipe <"$workdir/errors.txt" 2>&1)
if ! grep -q "errors: 1, replies: 2" <<<"$pipe_out"; then
    fail "--pipe with an error: $pipe_out"
fi

# ---- operator controls: MONITOR, COMMANDLOG, LATENCY, CLIENT PAUSE ----
redis-cli -p "$port" monitor >"$workdir/monitor.txt" 2>&1 &
monpid=$!
for i in $(seq 1 100); do
    [ "$("${cli[@]}" client list | grep -c 'flags=O')" = "1" ] && break
    sleep 0.05
done
"${cli[@]}" set mon:key "a b" >/dev/null
for i in $(seq 1 100); do
    grep -q '"set" "mon:key" "a b"' "$workdir/monitor.txt" && break
    sleep 0.05
done
kill "$monpid" 2>/dev/null
wait "$monpid" 2>/dev/null
grep -Eq '^[0-9]+\.[0-9]{6} \[0 127\.0\.0\.1:[0-9]+\] "set" "mon:key" "a b"$' "$workdir/monitor.txt" ||
    fail "redis-cli monitor: $(cat "$workdir/monitor.txt")"
expect "COMMANDLOG RESET" "OK" "${cli[@]}" commandlog reset large-reply
expect "CONFIG SET commandlog-reply-larger-than" "OK" "${cli[@]}" config set commandlog-reply-larger-than 0
"${cli[@]}" get mon:key >/dev/null
expect "COMMANDLOG LEN" "2" "${cli[@]}" commandlog len large-reply
expect "CONFIG SET commandlog-reply-larger-than" "OK" "${cli[@]}" config set commandlog-reply-larger-than 1048576
out=$("${cli[@]}" -3 latency histogram get)
grep -q "histogram_usec" <<<"$out" || fail "LATENCY HISTOGRAM (RESP3): $out"
expect "CLIENT PAUSE" "OK" "${cli[@]}" client pause 200 write
start=$(date +%s%N)
expect "SET during a pause" "OK" "${cli[@]}" set mon:key 1
elapsed=$((($(date +%s%N) - start) / 1000000))
[ "$elapsed" -ge 100 ] || fail "CLIENT PAUSE WRITE: a SET returned after $elapsed ms"

# ---- pub/sub and keyspace notifications through redis-cli ----
# wait_for "what" command...: retries a check for up to 5 s.
wait_for() {
    local what=$1 i
    shift
    for i in $(seq 1 100); do
        "$@" && return 0
        sleep 0.05
    done
    fail "$what"
}
redis-cli -p "$port" subscribe news >"$workdir/sub.txt" 2>&1 &
subpid=$!
expect "CONFIG SET notify-keyspace-events" "OK" "${cli[@]}" config set notify-keyspace-events KEA
redis-cli -3 -p "$port" psubscribe '__keyspace@0__:*' >"$workdir/ks.txt" 2>&1 &
kspid=$!
wait_for "SUBSCRIBE news never counted" bash -c "[ \"\$(redis-cli -p $port pubsub numsub news)\" = \"\$(printf 'news\n1')\" ]"
wait_for "PSUBSCRIBE (RESP3) never counted" bash -c "[ \"\$(redis-cli -p $port pubsub numpat)\" = 1 ]"
expect "PUBLISH to one subscriber" "1" "${cli[@]}" publish news "hello world"
"${cli[@]}" set ks:key v >/dev/null
wait_for "redis-cli subscribe got no message: $(cat "$workdir/sub.txt")" grep -q "hello world" "$workdir/sub.txt"
wait_for "redis-cli -3 psubscribe got no event: $(cat "$workdir/ks.txt")" grep -q "__keyspace@0__:ks:key" "$workdir/ks.txt"
kill "$subpid" "$kspid" 2>/dev/null
wait "$subpid" "$kspid" 2>/dev/null
[ "$(cat "$workdir/sub.txt")" = "$(printf 'subscribe\nnews\n1\nmessage\nnews\nhello world')" ] ||
    fail "redis-cli subscribe output: $(cat "$workdir/sub.txt")"
[ "$(cat "$workdir/ks.txt")" = "$(printf 'psubscribe\n__keyspace@0__:*\n1\npmessage\n__keyspace@0__:*\n__keyspace@0__:ks:key\nset')" ] ||
    fail "redis-cli -3 psubscribe output: $(cat "$workdir/ks.txt")"
expect "CONFIG SET notify-keyspace-events off" "OK" "${cli[@]}" config set notify-keyspace-events ""
wait_for "PUBSUB NUMSUB still counts a subscriber that left" bash -c "[ \"\$(redis-cli -p $port pubsub numsub news)\" = \"\$(printf 'news\n0')\" ]"

# ---- redis-benchmark ----
bench() {
    local out rc
    # Progress lines end with \r; keep the final results, one per line.
    out=$(redis-benchmark -p "$port" "$@" 2>&1)
    rc=$?
    out=$(tr '\r' '\n' <<<"$out" | sed 's/^ *//' | grep -v 'rps=')
    if [ $rc -ne 0 ]; then fail "redis-benchmark $*: exit $rc: $out"; return; fi
    if grep -qiE 'error|ERR |WARNING' <<<"$out"; then fail "redis-benchmark $*: $out"; return; fi
    echo "$out"
}
out=$(bench -t set,get,incr,mget -n 20000 -q)
for t in SET GET INCR; do
    grep -q "^$t: .*requests per second" <<<"$out" || fail "redis-benchmark: no $t result in: $out"
done
out=$(bench -t mset,ping -n 5000 -q -P 16)
grep -q "^MSET (10 keys): .*requests per second" <<<"$out" || fail "redis-benchmark: no MSET result in: $out"
out=$(bench -t set,get -n 5000 -q -c 100 -d 1000 -r 1000)
grep -q "^GET: .*requests per second" <<<"$out" || fail "redis-benchmark -c 100: no GET result in: $out"
expect "PING after benchmarks" "PONG" "${cli[@]}" ping

# ---- clean shutdown ----
kill -TERM "$pid"
status=
for i in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.05
done
if kill -0 "$pid" 2>/dev/null; then
    fail "server did not exit within 10 s of SIGTERM"
    kill -9 "$pid"
fi
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ] || fail "server exited with status $status after SIGTERM; log: $(tail -20 "$workdir/server.log")"

if [ $failures -ne 0 ]; then
    echo "redis_cli.sh: $failures failure(s)" >&2
    exit 1
fi
echo "redis_cli.sh: all passed"
