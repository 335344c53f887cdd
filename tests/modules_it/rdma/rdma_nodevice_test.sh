#!/usr/bin/env bash
# rdma_nodevice_test.sh -- the shipped rdma.so (the real librdmacm and
# libibverbs) in a real keel-server on a machine without an RDMA device, as
# this one is (ibv_get_device_list: NULL/ENOSYS; rdma_create_event_channel:
# ENODEV). MODULE LOADEX with rdma-port set fails with the reason, logged,
# and the server keeps serving; MODULE LOAD with rdma-port 0 loads with the
# listener off (INFO rdma, CONFIG GET of the directives and their defaults),
# CONFIG SET rdma-port then fails with the same reason and the port stays 0;
# the bounds of rdma-rx-size and rdma-completion-vector (Valkey's errors),
# rdma-rx-size fixed after load, too many rdma-bind addresses; MODULE
# UNLOAD; loadmodule in a config file with rdma-port 0 (starts) and with a
# port (start-up stops, saying why). On a machine that has a device the
# test says so and is skipped (exit 77 is not used by ctest here: it
# passes with the reason printed).
#
# Usage: rdma_nodevice_test.sh path/to/keel-server path/to/rdma.so
set -uo pipefail

server=${1:-}
module=${2:-}
[ -x "$server" ] && [ -f "$module" ] || {
    echo "usage: $0 keel-server rdma.so" >&2
    exit 2
}
server=$(realpath "$server")
module=$(realpath "$module")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    echo "rdma_nodevice_test: this machine has an RDMA device (/sys/class/infiniband): skipped"
    exit 0
fi

workdir=$(mktemp -d /tmp/keel-rdma-nodev-XXXXXX)
. "$here/../../sdk/lib.sh"

free_port() {
    local p
    while :; do
        p=$((10000 + RANDOM % 22000))
        port_in_use "$p" || { echo "$p"; return; }
    done
}
cli() { timeout 10 redis-cli -p "$port" "$@"; }
info_field() { cli info rdma | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2 }'; }
log_has() { grep -q -- "$1" "$workdir/server.log"; }

conf=$workdir/plain.conf
printf 'save ""\nappendonly no\nenable-module-command yes\nloglevel verbose\n' >"$conf"
start_server "$server" "$conf" "$workdir/server.log"
rport=$(free_port)

log "MODULE LOADEX with rdma-port $rport: refused, the server keeps serving"
expect_contains "LOADEX with a port" "no RDMA device" cli module loadex "$module" config rdma-port "$rport"
log_has "no RDMA device" || fail "the log does not say that no RDMA device exists"
expect "PING after the refused load" PONG cli ping
expect "MODULE LIST after the refused load" "" cli module list
expect "CONFIG GET rdma-port without the module" "" cli config get rdma-port
expect_contains "CONFIG SET rdma-port without the module" "belongs to the rdma module" \
    cli config set rdma-port "$rport"

log "MODULE LOAD with rdma-port 0: the listener is off"
expect "MODULE LOAD" OK cli module load "$module"
log_has "the listener is off" || fail "the log does not say that the listener is off"
expect "INFO rdma_enabled" 0 info_field rdma_enabled
expect "INFO rdma_port" 0 info_field rdma_port
expect "INFO rdma_device_ops" verbs info_field rdma_device_ops
expect "INFO rdma_connections_current" 0 info_field rdma_connections_current
expect "CONFIG GET rdma-port" "$(printf 'rdma-port\n0')" cli config get rdma-port
expect "CONFIG GET rdma-rx-size" "$(printf 'rdma-rx-size\n1048576')" cli config get rdma-rx-size
expect "CONFIG GET rdma-completion-vector" "$(printf 'rdma-completion-vector\n-1')" \
    cli config get rdma-completion-vector
expect "CONFIG GET rdma-bind" "$(printf 'rdma-bind\n')" cli config get rdma-bind

log "CONFIG SET rdma-port: the same reason, the port stays 0"
expect_contains "CONFIG SET rdma-port" "no RDMA device" cli config set rdma-port "$rport"
expect "CONFIG GET rdma-port after the refusal" "$(printf 'rdma-port\n0')" cli config get rdma-port
expect "INFO rdma_enabled after the refusal" 0 info_field rdma_enabled
expect "PING after the refused CONFIG SET" PONG cli ping

log "directives: bounds and mutability"
expect "CONFIG SET rdma-bind (listener off)" OK cli config set rdma-bind "127.0.0.1 -::1"
expect "CONFIG GET rdma-bind" "$(printf 'rdma-bind\n127.0.0.1 -::1')" cli config get rdma-bind
many=$(printf '127.0.0.%d ' $(seq 1 17))
expect_contains "17 rdma-bind addresses" "Too many bind addresses" cli config set rdma-bind "$many"
expect_contains "CONFIG SET rdma-rx-size (fixed at load)" "ERR" cli config set rdma-rx-size 65536
expect "rdma-rx-size unchanged" "$(printf 'rdma-rx-size\n1048576')" cli config get rdma-rx-size
expect "MODULE UNLOAD" OK cli module unload rdma
expect "MODULE LIST after unload" "" cli module list
expect_contains "rdma-rx-size below 64 KiB" "argument must be between 65536 and 16777216 inclusive" \
    cli module loadex "$module" config rdma-rx-size 65535
expect_contains "rdma-rx-size over 16 MiB" "argument must be between 65536 and 16777216 inclusive" \
    cli module loadex "$module" config rdma-rx-size 16777217
expect_contains "rdma-completion-vector 1025" "argument must be between -1 and 1024 inclusive" \
    cli module loadex "$module" config rdma-completion-vector 1025
expect_contains "rdma-completion-vector -2" "argument must be between -1 and 1024 inclusive" \
    cli module loadex "$module" config rdma-completion-vector -2
expect "LOADEX at the limits" OK cli module loadex "$module" config rdma-rx-size 16mb \
    config rdma-completion-vector 1024
expect "rdma-rx-size 16mb" "$(printf 'rdma-rx-size\n16777216')" cli config get rdma-rx-size
expect "INFO rdma_rx_size" 16777216 info_field rdma_rx_size
expect "MODULE UNLOAD again" OK cli module unload rdma
expect "PING at the end" PONG cli ping
stop_server

log "loadmodule in a config file, rdma-port 0: starts"
conf=$workdir/off.conf
printf 'save ""\nappendonly no\nloadmodule %s\nrdma-port 0\nrdma-rx-size 128kb\n' "$module" >"$conf"
start_server "$server" "$conf" "$workdir/server.log"
expect "INFO rdma_rx_size from the file" 131072 info_field rdma_rx_size
expect "INFO rdma_enabled from the file" 0 info_field rdma_enabled
stop_server

log "loadmodule in a config file with rdma-port: start-up stops, saying why"
conf=$workdir/on.conf
printf 'save ""\nappendonly no\nloadmodule %s\nrdma-port %s\n' "$module" "$rport" >"$conf"
p=$(free_port)
timeout 20 "$server" "$conf" --port "$p" --bind 127.0.0.1 >"$workdir/start.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "start-up with rdma-port and no device: exit status $rc"
grep -q "no RDMA device" "$workdir/start.log" || fail "the start-up log does not say that no RDMA device exists"

finish rdma_nodevice_test
