#!/usr/bin/env bash
# examples.sh -- the in-tree builds of sdk/examples and sdk/template, loaded
# into this build's keel-server from the config file (one with arguments and a
# module config line), doing what their READMEs say: hello's commands,
# slist's data type through TYPE, COPY, MEMORY USAGE, DEL and the refused
# MODULE UNLOAD, configinfo's parameter and INFO section, the template's
# command.
#
# Usage: examples.sh <keel-server> <dir holding hello.so slist.so configinfo.so mymodule.so> <source dir>
set -uo pipefail

server=${1:?usage: examples.sh <keel-server> <module dir> <source dir>}
mods=${2:?usage: examples.sh <keel-server> <module dir> <source dir>}
src=${3:?usage: examples.sh <keel-server> <module dir> <source dir>}
workdir=$(mktemp -d /tmp/keel-sdk-examples-XXXXXX)
. "$src/tests/sdk/lib.sh"

conf=$workdir/keel.conf
cat >"$conf" <<EOT
enable-module-command yes
loadmodule $mods/hello.so one two
loadmodule $mods/slist.so
loadmodule $mods/configinfo.so
configinfo.greeting "good day"
loadmodule $mods/mymodule.so
EOT
start_server "$server" "$conf"

# hello
expect "HELLO.WORLD" "Hello, world!" "${cli[@]}" hello.world
expect "HELLO.ECHO" "a b" "${cli[@]}" hello.echo "a b"
expect "HELLO.ECHO REPEAT" "xyxy" "${cli[@]}" hello.echo xy REPEAT 2
expect_contains "HELLO.ECHO syntax" "ERR syntax error" "${cli[@]}" hello.echo xy TWICE 2
expect_contains "HELLO.ECHO arity" "ERR wrong number of arguments for 'hello.echo' command" "${cli[@]}" hello.echo
expect_contains "HELLO.ECHO 3 args" "ERR wrong number of arguments" "${cli[@]}" hello.echo a b
grep -q "<hello> hello module loaded (2 argument(s))" "$workdir/server.log" || fail "hello's log line (with its 2 args) is missing"

# slist: the data type with the generic key commands
expect "SLIST.PUSH" "3" "${cli[@]}" slist.push l a b c
expect "SLIST.PUSH more" "4" "${cli[@]}" slist.push l d
expect "SLIST.LEN" "4" "${cli[@]}" slist.len l
expect "SLIST.LEN missing" "0" "${cli[@]}" slist.len nosuchkey
expect "SLIST.GET 0" "a" "${cli[@]}" slist.get l 0
expect "SLIST.GET -1" "d" "${cli[@]}" slist.get l -1
expect "SLIST.GET out of range" "" "${cli[@]}" slist.get l 9
expect "TYPE" "slist-str" "${cli[@]}" type l
expect "COPY" "1" "${cli[@]}" copy l l2
expect "SLIST.PUSH on the copy" "5" "${cli[@]}" slist.push l2 e
expect "the original is unchanged" "4" "${cli[@]}" slist.len l
usage=$("${cli[@]}" memory usage l)
[ "$usage" -gt 40 ] 2>/dev/null || fail "MEMORY USAGE l: expected > 40, got [$usage]"
expect "SET a string" "OK" "${cli[@]}" set s v
expect_contains "SLIST.PUSH on a string" "WRONGTYPE" "${cli[@]}" slist.push s x
expect_contains "GET on an slist" "WRONGTYPE" "${cli[@]}" get l
expect_contains "COMMAND GETKEYS" "k1" "${cli[@]}" command getkeys slist.push k1 v
expect_contains "MODULE UNLOAD with keys" "'slist' still owns 2 key(s)" "${cli[@]}" module unload slist
expect "DEL" "2" "${cli[@]}" del l l2
expect "EXPIRE on a new list" "1" bash -c "redis-cli -p $port slist.push t x >/dev/null; redis-cli -p $port pexpire t 1"
sleep 0.1
expect "the list expired" "0" "${cli[@]}" exists t
expect "MODULE UNLOAD slist" "OK" "${cli[@]}" module unload slist
expect_contains "SLIST.LEN after unload" "unknown command" "${cli[@]}" slist.len l

# configinfo: the config-file value, then CONFIG SET
expect "CONFIG GET from the file" $'configinfo.greeting\ngood day' "${cli[@]}" config get configinfo.greeting
expect "CONFIGINFO.GREET" "good day, world!" "${cli[@]}" configinfo.greet
expect "CONFIG SET" "OK" "${cli[@]}" config set configinfo.greeting hi
expect "CONFIGINFO.GREET bob" "hi, bob!" "${cli[@]}" configinfo.greet bob
info=$("${cli[@]}" info configinfo | tr -d '\r')
want=$'# configinfo\nconfiginfo_greeting:hi\nconfiginfo_greetings_served:2\nconfiginfo_greeting_changes:2'
[ "$info" = "$want" ] || fail "INFO configinfo: expected [$want], got [$info]"

# the template
expect "MYMODULE.PING" "PONG" "${cli[@]}" mymodule.ping
expect "MYMODULE.PING msg" "msg" "${cli[@]}" mymodule.ping msg
expect "MODULE UNLOAD mymodule" "OK" "${cli[@]}" module unload mymodule

stop_server
finish examples.sh
