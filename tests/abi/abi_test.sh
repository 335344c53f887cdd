#!/usr/bin/env bash
# abi_test.sh -- ABI 1.0 to 1.4 stay loadable as the SDK grows (see README.md):
#  1. the frozen headers are byte-for-byte the 1.0, 1.1, 1.2, 1.3 and 1.4 ones
#     (frozen-1.0.sha256 ... frozen-1.4.sha256);
#  2. the current header keeps every 1.0 to 1.4 offset, member size and
#     constant, no struct shrinks, the major is equal and the minor not smaller;
#  3. fixture_v1_0.so, built against the frozen 1.0 header only, loads from the
#     config file (args + a module config line) and everything it registered
#     works: commands, its data type with TYPE/COPY/MEMORY USAGE/DEL, configs
#     with CONFIG GET/SET, filter, observer, client events, timer, cron, INFO,
#     KEEL_API_HAS probes, deinit refusing, MODULE UNLOAD and LOADEX again;
#     fixture_v1_1.so, built against the frozen 1.1 header only, loads by
#     MODULE LOAD and its 1.1 function (core->stat_get) works; fixture_v1_2.so
#     likewise with some 1.2 functions (a call, key specs, per-call flags,
#     the new replies, INFO fields); fixture_v1_3.so likewise with some 1.3
#     functions (a config family with a commit hook and a SENSITIVE
#     parameter, a transport that opens and closes a listener at run time,
#     dials out and is found by name); fixture_v1_4.so likewise with the
#     1.4 functions (an OWN_FD transport's connection over an eventfd:
#     conn_adopt, the addr hook in CLIENT LIST, conn_wake ending it, the
#     close hook once; fd_watch and fd_unwatch);
#  4. fixture_v1_99.so and fixture_v2_0.so are refused by MODULE LOAD with the
#     loader's messages (and a log line), the server keeps running, and at
#     start-up a `loadmodule` of either stops the server with file:line:reason.
#
# Usage: abi_test.sh <keel-server> <fixture dir> <layout_frozen> <layout_frozen_1_1>
#                    <layout_frozen_1_2> <layout_frozen_1_3> <layout_frozen_1_4>
#                    <layout_current> <source dir>
set -uo pipefail

usage="usage: abi_test.sh <keel-server> <fixture dir> <layout_frozen> <layout_frozen_1_1> <layout_frozen_1_2> <layout_frozen_1_3> <layout_frozen_1_4> <layout_current> <source dir>"
server=${1:?$usage}
fixtures=${2:?$usage}
layout_frozen=${3:?$usage}
layout_frozen_1_1=${4:?$usage}
layout_frozen_1_2=${5:?$usage}
layout_frozen_1_3=${6:?$usage}
layout_frozen_1_4=${7:?$usage}
layout_current=${8:?$usage}
src=${9:?$usage}
workdir=$(mktemp -d /tmp/keel-abi-XXXXXX)
. "$src/tests/sdk/lib.sh"

v10=$fixtures/fixture_v1_0.so
v11=$fixtures/fixture_v1_1.so
v12=$fixtures/fixture_v1_2.so
v13=$fixtures/fixture_v1_3.so
v14=$fixtures/fixture_v1_4.so
v199=$fixtures/fixture_v1_99.so
v20=$fixtures/fixture_v2_0.so
# The server's ABI is the current header's.
hdr=$src/sdk/include/keel/keel_module.h
smaj=$(sed -n 's/^#define KEEL_ABI_MAJOR \([0-9]*\)$/\1/p' "$hdr")
smin=$(sed -n 's/^#define KEEL_ABI_MINOR \([0-9]*\)$/\1/p' "$hdr")
msg_v199="module $v199: ABI 1.99 is newer than this server's (ABI $smaj.$smin); upgrade the server"
msg_v20="module $v20: ABI 2.0 is not supported by this server (ABI $smaj.$smin)"

# ---- 1. the frozen headers ----
for v in 1.0 1.1 1.2 1.3 1.4; do
    log "frozen $v header checksum"
    (cd "$src/tests/abi" && sha256sum --quiet -c "frozen-$v.sha256") ||
        fail "the frozen ABI $v header in tests/abi was edited (see tests/abi/README.md)"
done
# The first line names the version the header defines.
for f in tests/abi/include/keel/keel_module.h:1.0 tests/abi/include-1.1/keel/keel_module.h:1.1 \
    tests/abi/include-1.2/keel/keel_module.h:1.2 tests/abi/include-1.3/keel/keel_module.h:1.3 \
    tests/abi/include-1.4/keel/keel_module.h:1.4 \
    "sdk/include/keel/keel_module.h:$smaj.$smin"; do
    [ "$(head -1 "$src/${f%:*}")" = "/* keel_module.h -- the Keel module ABI, version ${f##*:}." ] ||
        fail "${f%:*}: its first line does not say version ${f##*:}"
done

# ---- 2. layout: each frozen version vs current ----
"$layout_current" >"$workdir/current.txt" || fail "abi_layout_current failed"
# check_layout <layout program> <version>: the current header keeps every
# offset, member size and constant the frozen <version> header has.
check_layout() {
    local prog=$1 want=$2 frozen=$workdir/frozen-$2.txt
    log "layout of the $want ABI under the current header"
    "$prog" >"$frozen" || fail "$(basename "$prog") failed"
    while read -r kind what a b; do
        cur=$(grep -m1 "^$kind $what " "$workdir/current.txt")
        case $kind in
        member | const)
            [ "$cur" = "$kind $what $a${b:+ $b}" ] || fail "ABI $want $kind $what was [$a${b:+ $b}], now [${cur#"$kind $what "}]"
            ;;
        size)
            n=${cur##* }
            [ -n "$cur" ] && [ "$n" -ge "$a" ] || fail "sizeof($what) shrank: $want has $a, now [${n:-none}]"
            ;;
        esac
    done <"$frozen"
    fmaj=$(awk '$1 == "abi_major" {print $2}' "$frozen")
    fmin=$(awk '$1 == "abi_minor" {print $2}' "$frozen")
    cmaj=$(awk '$1 == "abi_major" {print $2}' "$workdir/current.txt")
    cmin=$(awk '$1 == "abi_minor" {print $2}' "$workdir/current.txt")
    [ "$fmaj.$fmin" = "$want" ] || fail "the frozen $want header claims ABI $fmaj.$fmin"
    [ "$cmaj" = "$fmaj" ] || fail "the current header's ABI major is $cmaj: the $want fixtures can no longer load"
    [ "$cmin" -ge "$fmin" ] || fail "the current header's ABI minor $cmin is older than $want's"
}
check_layout "$layout_frozen" 1.0
check_layout "$layout_frozen_1_1" 1.1
check_layout "$layout_frozen_1_2" 1.2
check_layout "$layout_frozen_1_3" 1.3
check_layout "$layout_frozen_1_4" 1.4

# ---- 3. the 1.0 fixture keeps loading and working ----
conf=$workdir/keel.conf
cat >"$conf" <<EOT
enable-module-command yes
abifix.limit 42
loadmodule $v10 first second
abifix.mode safe
EOT
log "starting keel-server with loadmodule fixture_v1_0.so"
start_server "$server" "$conf"

expect "ABIFIX.PROBE (KEEL_API_HAS)" $'1\n1\n1\n1\n1\n0\n0\n0' "${cli[@]}" abifix.probe
sleep 0.3 # a cron tick or more
stats=$("${cli[@]}" abifix.stats | tr '\n' ' ')
# limit 42 (file), mode 1 (safe, file), 2 args, observed >= 1, timer fired, >= 1 connect, cron ran
read -r s_limit s_mode s_argc s_obs s_timer s_conn s_cron <<<"$stats"
[ "$s_limit $s_mode $s_argc $s_timer $s_cron" = "42 1 2 1 1" ] ||
    fail "ABIFIX.STATS: want limit 42, mode 1, argc 2, timer 1, cron 1; got [$stats]"
[ "${s_obs:-0}" -ge 1 ] && [ "${s_conn:-0}" -ge 1 ] || fail "ABIFIX.STATS: observer/connect counters: [$stats]"

expect "ABIFIX.SET" "OK" "${cli[@]}" abifix.set k hello
expect "ABIFIX.GET" "hello" "${cli[@]}" abifix.get k
expect "ABIFIX.GET missing" "" "${cli[@]}" abifix.get nosuchkey
expect "TYPE" "abifix-v1" "${cli[@]}" type k
expect "COPY" "1" "${cli[@]}" copy k k2
expect "ABIFIX.GET copy" "hello" "${cli[@]}" abifix.get k2
usage=$("${cli[@]}" memory usage k)
[ "$usage" -gt 0 ] 2>/dev/null || fail "MEMORY USAGE: [$usage]"
expect "SET string" "OK" "${cli[@]}" set s v
expect_contains "ABIFIX.GET on a string" "WRONGTYPE" "${cli[@]}" abifix.get s
expect_contains "COMMAND INFO" "abifix.set" "${cli[@]}" command info abifix.set
expect "COMMAND GETKEYS" "k" "${cli[@]}" command getkeys abifix.set k v

expect "CONFIG GET abifix.limit" $'abifix.limit\n42' "${cli[@]}" config get abifix.limit
expect_contains "CONFIG SET refused by apply" "13 is unlucky" "${cli[@]}" config set abifix.limit 13
expect_contains "CONFIG SET out of range" "argument must be between 0 and 1000 inclusive" "${cli[@]}" config set abifix.limit 5000
expect "CONFIG SET abifix.limit" "OK" "${cli[@]}" config set abifix.limit 7
expect "CONFIG GET abifix.mode" $'abifix.mode\nsafe' "${cli[@]}" config get abifix.mode
expect_contains "CONFIG SET bad enum" "must be one of" "${cli[@]}" config set abifix.mode slow
expect "CONFIG SET abifix.mode" "OK" "${cli[@]}" config set abifix.mode fast

expect_contains "ABIFIX.DENY (filter)" "ERR denied by the abifix filter" "${cli[@]}" abifix.deny
info=$("${cli[@]}" info abifix | tr -d '\r')
case "$info" in *"# abifix"*"abifix_observed:"*"abifix_limit:7"*) ;; *) fail "INFO abifix: [$info]" ;; esac
grep -q "<abifix> abifix (ABI 1.0) loaded on server" "$workdir/server.log" || fail "abifix's init log line is missing"

# ---- 4. newer minor, other major: refused, the server keeps running ----
expect "MODULE LOAD ABI 1.99" "ERR $msg_v199" "${cli[@]}" module load "$v199"
expect "MODULE LOAD ABI 2.0" "ERR $msg_v20" "${cli[@]}" module load "$v20"
expect "MODULE LOADEX ABI 2.0" "ERR $msg_v20" "${cli[@]}" module loadex "$v20" args x
grep -qF "$msg_v199" "$workdir/server.log" || fail "no log line for the ABI 1.99 refusal"
grep -qF "$msg_v20" "$workdir/server.log" || fail "no log line for the ABI 2.0 refusal"
expect "PING after refusals" "PONG" "${cli[@]}" ping
expect "MODULE LIST after refusals" $'name\nabifix\nver\n10000\npath\n'"$v10"$'\nargs\nfirst\nsecond' "${cli[@]}" module list

# ---- unload rules, then load again ----
expect_contains "MODULE UNLOAD with keys" "'abifix' still owns 2 key(s)" "${cli[@]}" module unload abifix
expect "DEL" "2" "${cli[@]}" del k k2
expect "ABIFIX.STICKY 1" "OK" "${cli[@]}" abifix.sticky 1
expect "MODULE UNLOAD refused by deinit" "ERR Error unloading module: 'abifix' refused to unload: abifix is sticky" "${cli[@]}" module unload abifix
expect "ABIFIX.STICKY 0" "OK" "${cli[@]}" abifix.sticky 0
expect "MODULE UNLOAD" "OK" "${cli[@]}" module unload abifix
expect_contains "ABIFIX.STATS after unload" "unknown command" "${cli[@]}" abifix.stats
expect "CONFIG GET after unload" "" "${cli[@]}" config get abifix.limit
expect_contains "LOADEX with an unknown config (rolled back)" "'abifix.nosuch' is not a configuration parameter of 'abifix'" \
    "${cli[@]}" module loadex "$v10" config abifix.nosuch 1
expect "MODULE LIST empty" "" "${cli[@]}" module list
expect "MODULE LOADEX" "OK" "${cli[@]}" module loadex "$v10" config abifix.limit 99 args only
expect "ABIFIX.PROBE after reload" $'1\n1\n1\n1\n1\n0\n0\n0' "${cli[@]}" abifix.probe
stats=$("${cli[@]}" abifix.stats | tr '\n' ' ')
read -r s_limit s_mode s_argc _ <<<"$stats"
[ "$s_limit $s_mode $s_argc" = "99 0 1" ] || fail "ABIFIX.STATS after LOADEX: want 99 0 1, got [$stats]"
expect "SET then unload with no module keys" "OK" "${cli[@]}" abifix.set again x
expect "DEL again" "1" "${cli[@]}" del again

# ---- the 1.1 fixture ----
expect "MODULE LOAD ABI 1.1 fixture" "OK" "${cli[@]}" module load "$v11"
expect "ABIFIX11.PROBE (KEEL_API_HAS)" $'1\n1\n0' "${cli[@]}" abifix11.probe
n=$("${cli[@]}" abifix11.stat total_commands_processed)
[ "$n" -gt 0 ] 2>/dev/null || fail "ABIFIX11.STAT total_commands_processed: [$n]"
expect_contains "ABIFIX11.STAT unknown" "ERR no such statistic" "${cli[@]}" abifix11.stat nosuch
grep -q "<abifix11> abifix11 (ABI 1.1) loaded on server" "$workdir/server.log" || fail "abifix11's init log line is missing"
expect "MODULE UNLOAD abifix11" "OK" "${cli[@]}" module unload abifix11

# ---- the 1.2 fixture ----
expect "MODULE LOAD ABI 1.2 fixture" "OK" "${cli[@]}" module load "$v12"
expect "ABIFIX12.PROBE (KEEL_API_HAS)" $'1\n1\n1\n1\n0' "${cli[@]}" abifix12.probe
expect "ABIFIX12.INCR (a call)" "1" "${cli[@]}" abifix12.incr abifix12:n
expect "ABIFIX12.INCR again" "2" "${cli[@]}" abifix12.incr abifix12:n
expect "COMMAND GETKEYS (a keynum key spec)" $'k1\nk2' "${cli[@]}" command getkeys abifix12.keys 2 k1 k2 x
expect "ABIFIX12.KEYS (reply_set, reply_bignum)" "12345678901234567890123" "${cli[@]}" abifix12.keys 0
expect "ABIFIX12.FLAGS get (command_flags, db_index)" $'2050\n0' "${cli[@]}" abifix12.flags get
expect_contains "ABIFIX12.FAIL (reply_error_ex)" "ABIFIX12 passed on" "${cli[@]}" abifix12.fail
expect_contains "INFO server (add_fields)" "abifix12_loaded:1" "${cli[@]}" info server
grep -q "<abifix12> abifix12 (ABI 1.2) loaded on server" "$workdir/server.log" || fail "abifix12's init log line is missing"
expect "DEL abifix12:n" "1" "${cli[@]}" del abifix12:n
expect "MODULE UNLOAD abifix12" "OK" "${cli[@]}" module unload abifix12

# ---- the 1.3 fixture ----
# eventually "what" "wanted output" command...: polls up to 10 s for it
# (a connection's close reaches the server after the client has exited).
eventually() {
    local what=$1 want=$2 i got
    shift 2
    for i in $(seq 1 200); do
        got=$("$@" 2>&1)
        [ "$got" = "$want" ] && return 0
        sleep 0.05
    done
    fail "$what: expected [$want] within 10 s, got [$got]"
}
free_port() {
    local p
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        p=$((10000 + RANDOM % 22000))
        port_in_use "$p" || break
    done
    echo "$p"
}
expect "MODULE LOAD ABI 1.3 fixture" "OK" "${cli[@]}" module load "$v13"
expect "ABIFIX13.PROBE (KEEL_API_HAS, transport_find)" $'1\n1\n1\n1\n1\n1\n0' "${cli[@]}" abifix13.probe
grep -q "<abifix13> abifix13 (ABI 1.3) loaded on server" "$workdir/server.log" || fail "abifix13's init log line is missing"
# A claimed family: the names as they are, one commit for two parameters,
# a refusing commit rolls both back.
expect "CONFIG GET abifix13.rdma-cert (no prefix)" "" "${cli[@]}" config get abifix13.rdma-cert
read -r applies0 commits0 _ <<<"$("${cli[@]}" abifix13.stats | tr '\n' ' ')"
[ "$commits0" = 0 ] || fail "commit ran at load: commits $commits0"
expect "CONFIG SET rdma-cert rdma-key (one commit)" "OK" "${cli[@]}" config set rdma-cert a rdma-key a
read -r applies1 commits1 _ <<<"$("${cli[@]}" abifix13.stats | tr '\n' ' ')"
[ "$((applies1 - applies0)) $commits1" = "2 1" ] ||
    fail "CONFIG SET of two parameters: want 2 applies and 1 commit, got $((applies1 - applies0)) and $commits1"
expect_contains "CONFIG SET refused by commit" "abifix13: cert and key differ" "${cli[@]}" config set rdma-cert b rdma-key c
expect "CONFIG GET rdma-cert after the refusal" $'rdma-cert\na' "${cli[@]}" config get rdma-cert
expect "CONFIG GET rdma-key after the refusal" $'rdma-key\na' "${cli[@]}" config get rdma-key
read -r _ commits2 _ <<<"$("${cli[@]}" abifix13.stats | tr '\n' ' ')"
[ "$commits2" = 1 ] || fail "a refused commit was counted: commits $commits2"
expect "CONFIG SET the same values (commit again)" "OK" "${cli[@]}" config set rdma-cert a rdma-key a
read -r _ commits3 _ <<<"$("${cli[@]}" abifix13.stats | tr '\n' ' ')"
[ "$commits3" = 2 ] || fail "CONFIG SET of unchanged values: want commit 2, got $commits3"
# A SENSITIVE parameter: redacted in SLOWLOG, shown by CONFIG GET.
expect "CONFIG SET slowlog-log-slower-than 0" "OK" "${cli[@]}" config set slowlog-log-slower-than 0
expect "SLOWLOG RESET" "OK" "${cli[@]}" slowlog reset
expect "CONFIG SET rdma-pass" "OK" "${cli[@]}" config set rdma-pass hunter2
slow=$("${cli[@]}" slowlog get 2)
case "$slow" in *hunter2*) fail "SLOWLOG shows the SENSITIVE value: [$slow]" ;; esac
case "$slow" in *rdma-pass*"(redacted)"*) ;; *) fail "SLOWLOG: want rdma-pass (redacted) in [$slow]" ;; esac
expect "CONFIG SET slowlog-log-slower-than back" "OK" "${cli[@]}" config set slowlog-log-slower-than 10000
expect "CONFIG GET rdma-pass" $'rdma-pass\nhunter2' "${cli[@]}" config get rdma-pass
# The transport: a listener opened and closed at run time.
tport=$(free_port)
expect "ABIFIX13.OPEN" "OK" "${cli[@]}" abifix13.open "$tport"
expect "PING through the abifix13 listener" "PONG" redis-cli -p "$tport" ping
read -r _ _ s_accepted s_lport <<<"$("${cli[@]}" abifix13.stats | tr '\n' ' ')"
[ "$s_accepted $s_lport" = "1 $tport" ] ||
    fail "abifix13's accept hook: want 1 connection on port $tport, got $s_accepted on $s_lport"
expect "ABIFIX13.CLOSE" "OK" "${cli[@]}" abifix13.close
expect_contains "the closed listener refuses" "Connection refused" redis-cli -p "$tport" ping
# An outgoing connection through the transport (its connect hook) to this
# server's plain port.
expect "ABIFIX13.DIAL" "OK" "${cli[@]}" abifix13.dial "$port"
eventually "ABIFIX13.DIALED (PING through connect)" "+PONG" "${cli[@]}" abifix13.dialed
eventually "abifix13's connections closed" "0" "${cli[@]}" abifix13.conns
expect "MODULE UNLOAD abifix13" "OK" "${cli[@]}" module unload abifix13
expect "CONFIG GET rdma-cert after unload" "" "${cli[@]}" config get rdma-cert
expect_contains "CONFIG SET rdma-cert after unload" "belongs to the rdma module, which is not loaded" \
    "${cli[@]}" config set rdma-cert a

# ---- the 1.4 fixture ----
expect "MODULE LOAD ABI 1.4 fixture" "OK" "${cli[@]}" module load "$v14"
expect "ABIFIX14.PROBE (KEEL_API_HAS)" $'1\n1\n1\n0\n0' "${cli[@]}" abifix14.probe
grep -q "<abifix14> abifix14 (ABI 1.4) loaded on server" "$workdir/server.log" || fail "abifix14's init log line is missing"
# A connection over an eventfd: a client named by the addr hook, ended by
# conn_wake, closed once; MODULE UNLOAD waits for it.
expect "ABIFIX14.ADOPT (conn_adopt)" "OK" "${cli[@]}" abifix14.adopt
expect_contains "CLIENT LIST (the addr hook)" "addr=127.0.0.1:1414 laddr=127.0.0.1:14" "${cli[@]}" client list
expect_contains "MODULE UNLOAD with the connection open" "still has 1 open connection" \
    "${cli[@]}" module unload abifix14
expect "ABIFIX14.DROP (conn_wake)" "OK" "${cli[@]}" abifix14.drop
eventually "abifix14's connection closed once" $'0\n1\n0' "${cli[@]}" abifix14.stats
expect "ABIFIX14.WATCH (fd_watch)" "OK" "${cli[@]}" abifix14.watch
eventually "abifix14's watch ran once" $'1\n1\n0' "${cli[@]}" abifix14.stats
expect "MODULE UNLOAD abifix14" "OK" "${cli[@]}" module unload abifix14
stop_server

# ---- start-up refusals: file, line and reason ----
for v in v199 v20; do
    so_var=$v
    [ "$v" = v199 ] && so=$v199 msg=$msg_v199
    [ "$v" = v20 ] && so=$v20 msg=$msg_v20
    bad=$workdir/bad-$so_var.conf
    printf '# a bad loadmodule line\nloadmodule %s\n' "$so" >"$bad"
    out=$(timeout 30 "$server" "$bad" --port 0 --unixsocket "$workdir/bad-$so_var.sock" 2>&1)
    rc=$?
    [ "$rc" -eq 1 ] || fail "start-up with $so: exit status $rc, want 1 (output: $out)"
    case "$out" in *"$bad:2: $msg"*) ;; *) fail "start-up with $so: want [$bad:2: $msg] in [$out]" ;; esac
done

finish abi_test.sh
