# shellcheck shell=bash
# Shared helpers for the scripts in bench/. Sourced, not run.
# Requires: bash, redis-cli. Every server started through start_server is
# recorded in BENCH_PIDS and stopped by stop_all (installed as an EXIT trap by
# the caller), so no process outlives the script.

BENCH_PIDS=()
BENCH_TMP=""

# I/O threads for the servers start_server starts (counting the main thread,
# so 1 = none). Set by the caller before start_server; not read from the
# environment, so a stray variable cannot change what the scripts measure.
BENCH_IO_THREADS=1

# The settings every server under test gets, identical for Keel, Redis and
# Valkey: no persistence, quiet log, no DEBUG command, and IO_THREADS I/O
# threads (third argument, default $BENCH_IO_THREADS, i.e. 1). With more than
# one, reads are threaded too: --io-threads-do-reads yes (Redis 7 threads
# only writes without it; Keel and Valkey accept it and thread reads anyway).
common_server_args() { # port dir [io_threads]
    local io=${3:-$BENCH_IO_THREADS}
    printf '%s\0' --port "$1" --bind 127.0.0.1 --protected-mode no \
        --save "" --appendonly no --loglevel warning --io-threads "$io"
    if [ "$io" -gt 1 ]; then printf '%s\0' --io-threads-do-reads yes; fi
    printf '%s\0' --enable-debug-command no --daemonize no \
        --dir "$2" --logfile "$2/server.log"
}

# parse_io_threads LIST: a comma-separated list of io-threads values ("1,2")
# into IO_THREADS_LIST (in the given order, duplicates dropped); dies on
# anything but positive integers.
IO_THREADS_LIST=(1)
parse_io_threads() {
    local v vals=() seen=" "
    IFS=, read -r -a vals <<<"$1"
    IO_THREADS_LIST=()
    for v in "${vals[@]}"; do
        v=${v// /}
        [ -n "$v" ] || continue
        [[ "$v" =~ ^[1-9][0-9]{0,2}$ ]] || die "--io-threads: '$v' is not a positive integer"
        case "$seen" in *" $v "*) continue ;; esac
        seen+="$v "
        IO_THREADS_LIST+=("$v")
    done
    [ ${#IO_THREADS_LIST[@]} -gt 0 ] || die "--io-threads needs at least one value"
}

# io_suffix IO: what a server's label gets for this setting: nothing when the
# run uses only --io-threads 1 (plain "Keel", "Redis", as before), else
# " io<IO>" ("Keel io2").
io_suffix() {
    if [ "${IO_THREADS_LIST[*]}" = 1 ]; then echo ""; else echo " io$1"; fi
}

# build_instances: every server of NAMES/TITLES once per io-threads value,
# in the order they take turns (all servers at the first value, then at the
# next ...). Sets INST (key and directory: "keel", or "keel-io2" when not
# just io-threads 1), ITITLE ("Keel", "Keel io2"), ILABEL ("keel",
# "keel io2"), ISRV (index into NAMES) and IIO (the value).
build_instances() {
    local io i sfx
    INST=(); ITITLE=(); ILABEL=(); ISRV=(); IIO=()
    for io in "${IO_THREADS_LIST[@]}"; do
        for i in "${!NAMES[@]}"; do
            sfx=$(io_suffix "$io")
            INST+=("${NAMES[$i]}${sfx:+-io$io}")
            ITITLE+=("${TITLES[$i]}$sfx")
            ILABEL+=("${NAMES[$i]}$sfx")
            ISRV+=("$i")
            IIO+=("$io")
        done
    done
}

die() { echo "bench: $*" >&2; exit 1; }

bench_tmpdir() {
    BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench.XXXXXX")
}

# pick_port: sets PORT to a TCP port on 127.0.0.1 nobody listens on and that
# we have not handed out, below the kernel's ephemeral range (so no client
# socket of an earlier run can be sitting on it), or in $BENCH_PORTS.
_BENCH_USED_PORTS=" "
pick_port() {
    local p lo hi tries=0
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    hi=$((lo - 1)); lo=10000
    [ "$hi" -gt $((lo + 1000)) ] || { lo=20000; hi=30000; }
    # BENCH_PORTS=LO-HI confines the servers to a range (shared machines).
    if [ -n "${BENCH_PORTS:-}" ]; then lo=${BENCH_PORTS%-*}; hi=${BENCH_PORTS#*-}; fi
    while [ $tries -lt 200 ]; do
        p=$(( lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1) ))
        tries=$((tries + 1))
        case "$_BENCH_USED_PORTS" in *" $p "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            _BENCH_USED_PORTS+="$p "
            PORT=$p
            return 0
        fi
    done
    die "no free TCP port found"
}

# wait_ready PID PORT TIMEOUT_S: until the server answers PING (or dies).
wait_ready() {
    local pid=$1 port=$2 limit=$3 t=0
    while [ "$t" -lt $((limit * 10)) ]; do
        kill -0 "$pid" 2>/dev/null || return 1
        if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
            return 0
        fi
        sleep 0.1
        t=$((t + 1))
    done
    return 1
}

# Arguments appended for every server started (e.g. --loadmodule for Keel).
EXTRA_SERVER_ARGS=()

# CPU pinning, the project's benchmark method: on a machine with 2 or more
# CPUs every server runs on CPU $BENCH_SERVER_CPU (default 0) and every load
# generator on CPU $BENCH_CLIENT_CPU (default 1), so the two never compete
# for one core and each run sees the same placement. BENCH_PIN=0 turns it
# off (e.g. to measure I/O threads, which need more than one core).
if [ "${BENCH_PIN:-1}" != 0 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    SERVER_PIN=(taskset -c "${BENCH_SERVER_CPU:-0}")
    CLIENT_PIN=(taskset -c "${BENCH_CLIENT_CPU:-1}")
else
    SERVER_PIN=()
    CLIENT_PIN=()
fi
pinning_desc() {
    if [ ${#SERVER_PIN[@]} -gt 0 ]; then
        echo "server pinned to CPU ${BENCH_SERVER_CPU:-0}, load generator to CPU ${BENCH_CLIENT_CPU:-1} (taskset)"
    else
        echo "no CPU pinning"
    fi
}

# start_server NAME DIR [PREFIX...] -- BINARY: starts BINARY (optionally under
# PREFIX, e.g. valgrind) with the common arguments on a free port; sets
# SERVER_PID and SERVER_PORT. Tries another port if the first is taken.
start_server() {
    local name=$1 dir=$2; shift 2
    local prefix=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do prefix+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    local bin=$1 args=() limit=15 _
    [ ${#prefix[@]} -gt 0 ] && limit=120
    mkdir -p "$dir"
    for _ in 1 2 3; do
        pick_port
        mapfile -d '' args < <(common_server_args "$PORT" "$dir")
        args+=("${EXTRA_SERVER_ARGS[@]}")
        "${SERVER_PIN[@]}" "${prefix[@]}" "$bin" "${args[@]}" >"$dir/stdout.log" 2>&1 </dev/null &
        SERVER_PID=$!
        SERVER_PORT=$PORT
        BENCH_PIDS+=("$SERVER_PID")
        if wait_ready "$SERVER_PID" "$SERVER_PORT" "$limit"; then
            return 0
        fi
        stop_pid "$SERVER_PID" 5
        forget_pid "$SERVER_PID"
        grep -qi 'address already in use' "$dir/stdout.log" "$dir/server.log" 2>/dev/null || break
    done
    echo "bench: $name ($bin) did not come up; its output:" >&2
    tail -n 20 "$dir/stdout.log" "$dir/server.log" >&2 2>/dev/null || true
    return 1
}

# stop_pid PID [GRACE_S]: SIGTERM, wait, then SIGKILL.
stop_pid() {
    local pid=$1 grace=${2:-10} t=0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ "$t" -lt $((grace * 10)) ]; do
        sleep 0.1; t=$((t + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# forget_pid PID: drop a reaped server from BENCH_PIDS (its number may be
# reused by an unrelated process, which stop_all must never signal).
forget_pid() {
    local keep=() pid
    for pid in "${BENCH_PIDS[@]}"; do [ "$pid" = "$1" ] || keep+=("$pid"); done
    BENCH_PIDS=("${keep[@]}")
}

# run_client TIMEOUT_S OUTFILE ERRFILE COMMAND...: runs a client (e.g.
# redis-benchmark) under `timeout` in the background and waits for it, so a
# SIGTERM/SIGINT to the script is handled at once rather than after the client
# finishes; stop_all stops it. Returns the client's exit status.
BENCH_CLIENT=""
run_client() {
    local limit=$1 out=$2 err=$3 rc=0; shift 3
    timeout "$limit" "${CLIENT_PIN[@]}" "$@" >"$out" 2>>"$err" </dev/null &
    BENCH_CLIENT=$!
    wait "$BENCH_CLIENT" || rc=$?
    BENCH_CLIENT=""
    return "$rc"
}

stop_all() {
    local pid
    if [ -n "$BENCH_CLIENT" ]; then stop_pid "$BENCH_CLIENT" 5; BENCH_CLIENT=""; fi
    for pid in "${BENCH_PIDS[@]}"; do stop_pid "$pid" 5; done
    BENCH_PIDS=()
    if [ -n "$BENCH_TMP" ] && [ -z "${BENCH_KEEP_TMP:-}" ]; then
        rm -rf "$BENCH_TMP"
    fi
}

server_version() { # binary
    "$1" --version 2>/dev/null | head -n 1
}

load_avg() { cut -d' ' -f1-3 /proc/loadavg; }

# callgrind_total NAME PID CGOUT: once SHUTDOWN has been sent to a server
# running under callgrind, waits for it to exit (60 s at most) and sets IR
# to the instructions callgrind counted (its totals or summary line).
callgrind_total() {
    local name=$1 pid=$2 out=$3 w=0
    while kill -0 "$pid" 2>/dev/null && [ "$w" -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
    kill -0 "$pid" 2>/dev/null && die "$name did not exit after SHUTDOWN"
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
    [ -s "$out" ] || die "callgrind wrote no output for $name ($out)"
    IR=$(awk '/^totals:/ { t = $2 } /^summary:/ { s = $2 } END { print (t != "" ? t : s) }' "$out")
    [[ "$IR" =~ ^[0-9]+$ ]] || die "no callgrind totals for $name in $out"
}
