# lib.sh -- helpers for the SDK shell tests (tests/sdk, tests/abi): failures,
# expectations on redis-cli output, and a keel-server started on a free port
# with a config file, stopped with SHUTDOWN and checked to exit 0.
#
# The sourcing script sets `workdir` (a temporary folder) and may add its own
# clean-up to `cleanup_extra`; the EXIT trap kills a server left running and
# removes workdir.

failures=0
pid=
port=
cleanup_extra=:

cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; fi
    eval "$cleanup_extra"
    [ -n "${workdir:-}" ] && rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

log() {
    echo "== $*"
}

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
    [ "$got" = "$want" ] || fail "$what: expected [$want], got [$got]"
}

# expect_contains "what" "wanted substring" command...
expect_contains() {
    local what=$1 want=$2
    shift 2
    local got
    got=$("$@" 2>&1)
    case "$got" in
    *"$want"*) ;;
    *) fail "$what: expected output containing [$want], got [$got]" ;;
    esac
}

# must "what" command...: runs it (bounded by the caller), aborts the test on
# failure with its output.
must() {
    local what=$1
    shift
    local out
    if ! out=$("$@" 2>&1); then
        echo "FAIL: $what: $*" >&2
        echo "$out" >&2
        exit 1
    fi
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_server <keel-server> <config file> [log file]: starts it with
# `--port N --bind 127.0.0.1` on a free port, retrying on a clash; sets pid,
# port and cli (a redis-cli command line for the server).
start_server() {
    local server=$1 conf=$2 logf=${3:-$workdir/server.log}
    local attempt i
    for attempt in 1 2 3 4 5; do
        port=$((10000 + RANDOM % 22000)) # below the ephemeral range
        port_in_use "$port" && continue
        "$server" "$conf" --port "$port" --bind 127.0.0.1 >"$logf" 2>&1 &
        pid=$!
        for i in $(seq 1 400); do # up to 20 s (ASan builds on a loaded machine)
            if ! kill -0 "$pid" 2>/dev/null; then break; fi
            if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
                cli=(redis-cli -p "$port")
                return 0
            fi
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        pid=
    done
    echo "FAIL: could not start $server with $conf; log:" >&2
    cat "$logf" >&2
    exit 1
}

# stop_server: SHUTDOWN, then the server must exit 0 (under ASan: no leak or
# error report) within 20 s.
stop_server() {
    local i rc
    redis-cli -p "$port" shutdown >/dev/null 2>&1
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

# finish <name>: the verdict.
finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$1: $failures failure(s); server log:" >&2
        cat "$workdir"/*.log >&2 2>/dev/null
        exit 1
    fi
    echo "$1: all checks passed"
    exit 0
}
