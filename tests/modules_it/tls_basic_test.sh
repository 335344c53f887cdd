#!/usr/bin/env bash
# tls_basic_test.sh -- the tls module's own smoke test in a real keel-server
# (the large TLS suite is tests/modules_it/tls/): certificates made at test
# time (tls/gen_certs.sh); plain TCP and tls-port side by side; redis-cli
# --tls PING/SET/GET with a client certificate (tls-auth-clients yes), and
# refused without one; INFO tls (the server certificate's serial and expiry
# as openssl reads them, handshake counts); CONFIG SET of a missing
# certificate fails and the old one keeps serving; CONFIG SET of another
# certificate and key swaps them; a certificate replaced on disk is
# reloaded by itself (and a mismatched one is not); CONFIG SET tls-port 0 closes the
# listener and a new port opens one; the server dials its own tls-port
# (the tlsdial fixture module: the transport's connect), with the server
# certificate as client certificate and then with tls-client-cert-file,
# by address and by name, and fails against a certificate of another CA; a
# tls-* line without the module stops start-up naming the module; a clean
# SHUTDOWN.
#
# Usage: tls_basic_test.sh path/to/keel-server path/to/tls.so path/to/tlsdial.so
# (KEEL_TEST_IO_THREADS=N runs the server with N-1 I/O threads taking every
# event, as the integration harness does in the CI's sanitizer runs.)
set -uo pipefail

server=${1:-}
module=${2:-}
dialmod=${3:-}
[ -x "$server" ] && [ -f "$module" ] && [ -f "$dialmod" ] || {
    echo "usage: $0 keel-server tls.so tlsdial.so" >&2
    exit 2
}
server=$(realpath "$server")
module=$(realpath "$module")
dialmod=$(realpath "$dialmod")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v openssl >/dev/null || { echo "tls_basic_test: openssl not found" >&2; exit 2; }

workdir=$(mktemp -d /tmp/keel-tls-XXXXXX)
certs=$workdir/certs
# cleanup (the EXIT trap), fail, port_in_use; expect is redefined below to
# count the checks.
. "$here/../sdk/lib.sh"
checks=0

ok() {
    local what=$1
    shift
    checks=$((checks + 1))
    "$@" || fail "$what"
}

expect() {
    local what=$1 want=$2 got
    shift 2
    checks=$((checks + 1))
    got=$("$@" 2>&1)
    [ "$got" = "$want" ] || fail "$what: expected [$want], got [$got]"
}

free_port() {
    local p
    while :; do
        p=$((10000 + RANDOM % 22000))
        port_in_use "$p" || { echo "$p"; return; }
    done
}

bash "$here/tls/gen_certs.sh" "$certs" || { echo "tls_basic_test: gen_certs.sh failed" >&2; exit 1; }

# As the integration harness: every event goes to the I/O threads.
io_args=()
[ -n "${KEEL_TEST_IO_THREADS:-}" ] && io_args=(--io-threads "$KEEL_TEST_IO_THREADS" --events-per-io-thread 0)

port=
tport=
start_server() {
    local attempt i
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        tport=$(free_port)
        [ "$port" != "$tport" ] || continue
        (cd "$workdir" && exec timeout 300 "$server" --port "$port" --bind 127.0.0.1 --save "" \
            --appendonly no --enable-module-command yes --loadmodule "$module" \
            --loadmodule "$dialmod" "${io_args[@]}" \
            --tls-port "$tport" --tls-cert-file "$certs/server.crt" \
            --tls-key-file "$certs/server.key" --tls-ca-cert-file "$certs/ca.crt" \
            >"$workdir/server.log" 2>&1) &
        pid=$!
        for i in $(seq 1 200); do
            kill -0 "$pid" 2>/dev/null || break
            [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        pid=
    done
    echo "tls_basic_test: could not start $server; log:" >&2
    cat "$workdir/server.log" >&2
    exit 1
}

cli() { timeout 10 redis-cli -p "$port" "$@"; }
# tcli CA [PORT] ARGS...: redis-cli over TLS with the client certificate.
tcli() {
    local ca=$1
    shift
    timeout 10 redis-cli --tls --cacert "$certs/$ca.crt" --cert "$certs/client.crt" \
        --key "$certs/client.key" -p "$tport" "$@"
}
info_field() { cli info tls | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2 }'; }
serial_of() { openssl x509 -in "$certs/$1.crt" -noout -serial | cut -d= -f2; }
expiry_of() { date -d "$(openssl x509 -in "$certs/$1.crt" -noout -enddate | cut -d= -f2)" +%s; }

SECONDS=0
start_server

# ---- plain TCP and TLS side by side ----
expect "plain PING" PONG cli ping
expect "TLS PING" PONG tcli ca ping
expect "TLS SET" OK tcli ca set k hello
expect "TLS GET" hello tcli ca get k
expect "plain GET of the TLS SET" hello cli get k
checks=$((checks + 1))
out=$(timeout 10 redis-cli --tls --cacert "$certs/ca.crt" -p "$tport" ping 2>&1)
[ "$out" != PONG ] || fail "TLS PING without a client certificate (tls-auth-clients yes) answered PONG"
checks=$((checks + 1))
out=$(timeout 10 redis-cli -p "$tport" ping 2>&1)
[ "$out" != PONG ] || fail "plain PING on the TLS port answered PONG"
expect "plain PING after the bad clients" PONG cli ping

# ---- INFO tls ----
expect "INFO server serial" "$(serial_of server)" info_field tls_server_cert_serial
expect "INFO server expiry" "$(expiry_of server)" info_field tls_server_cert_expire_time
expect "INFO ca expiry" "$(expiry_of ca)" info_field tls_ca_cert_expire_time
expect "INFO client serial (no client cert)" none info_field tls_client_cert_serial
checks=$((checks + 1))
done_hs=$(info_field tls_handshakes_completed)
failed_hs=$(info_field tls_handshakes_failed)
{ [ "${done_hs:-0}" -ge 3 ] && [ "${failed_hs:-0}" -ge 2 ]; } ||
    fail "handshake counts: completed [$done_hs] (want >= 3), failed [$failed_hs] (want >= 2)"
ok "INFO per-listener line" bash -c "redis-cli -p $port info tls | grep -q '^tls_listener_$tport:accepted='"

# ---- a bad certificate leaves the old one serving ----
checks=$((checks + 1))
out=$(cli config set tls-cert-file "$workdir/missing.crt" 2>&1)
case "$out" in
*missing.crt*) ;;
*) fail "CONFIG SET of a missing certificate: expected an error naming the file, got [$out]" ;;
esac
expect "tls-cert-file after the refused set" "$certs/server.crt" \
    bash -c "redis-cli -p $port config get tls-cert-file | sed -n 2p"
expect "TLS PING after the refused set" PONG tcli ca ping
expect "INFO serial after the refused set" "$(serial_of server)" info_field tls_server_cert_serial

# ---- another certificate and key: swapped in ----
expect "CONFIG SET another certificate" OK cli config set tls-cert-file "$certs/other-server.crt" \
    tls-key-file "$certs/other-server.key"
expect "INFO serial after the swap" "$(serial_of other-server)" info_field tls_server_cert_serial
checks=$((checks + 1))
out=$(tcli ca ping 2>&1)
[ "$out" != PONG ] || fail "the old CA still verifies the new certificate"
expect "TLS PING checked against the new certificate's CA" PONG \
    timeout 10 redis-cli --tls --cacert "$certs/other-ca.crt" --cert "$certs/client.crt" \
    --key "$certs/client.key" -p "$tport" ping
expect "CONFIG SET the first certificate back" OK cli config set tls-cert-file "$certs/server.crt" \
    tls-key-file "$certs/server.key"
expect "TLS PING after the swap back" PONG tcli ca ping

# ---- outgoing connections: the server dials its own tls-port ----
expect "dial with the server certificate as client certificate" +PONG cli tlsdial 127.0.0.1 "$tport"
expect "CONFIG SET tls-client-cert-file" OK cli config set tls-client-cert-file "$certs/client.crt" \
    tls-client-key-file "$certs/client.key"
expect "INFO client serial" "$(serial_of client)" info_field tls_client_cert_serial
expect "dial with the client certificate" +PONG cli tlsdial 127.0.0.1 "$tport"
expect "dial by name (SNI, host name checked)" +PONG cli tlsdial localhost "$tport"
expect "CONFIG SET a certificate without an IP SAN" OK cli config set \
    tls-cert-file "$certs/server-dns.crt" tls-key-file "$certs/server-dns.key"
checks=$((checks + 1))
out=$(cli tlsdial 127.0.0.1 "$tport" 2>&1)
[ "$out" != +PONG ] || fail "a dial to 127.0.0.1 accepted a certificate without that IP SAN"
expect "dial by name to a certificate without an IP SAN" +PONG cli tlsdial localhost "$tport"
expect "CONFIG SET a certificate of another CA" OK cli config set \
    tls-cert-file "$certs/other-server.crt" tls-key-file "$certs/other-server.key"
checks=$((checks + 1))
out=$(cli tlsdial 127.0.0.1 "$tport" 2>&1)
[ "$out" != +PONG ] || fail "a dial verified a certificate of another CA"
expect "CONFIG SET the first certificate back (again)" OK cli config set \
    tls-cert-file "$certs/server.crt" tls-key-file "$certs/server.key"
ok "the refused dial was logged" grep -q "TLS handshake to 127.0.0.1:$tport failed" "$workdir/server.log"

# ---- automatic reload when the files change on disk ----
live=$workdir/live
mkdir -p "$live"
cp "$certs/server.crt" "$live/cert.pem"
cp "$certs/server.key" "$live/key.pem"
expect "CONFIG SET files to be replaced" OK cli config set tls-cert-file "$live/cert.pem" \
    tls-key-file "$live/key.pem"
# wait_field NAME VALUE: polls INFO tls (the module checks the files once a
# second) until NAME is VALUE, 10 s at most.
wait_field() {
    local i
    for i in $(seq 1 100); do
        [ "$(info_field "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
failed_before=$(info_field tls_reloads_failed)
# A certificate without its key: the reload fails, the old one serves.
cp "$certs/other-server.crt" "$live/cert.new" && mv "$live/cert.new" "$live/cert.pem"
ok "a mismatched automatic reload is counted as failed" wait_field tls_reloads_failed $((failed_before + 1))
expect "INFO serial after the failed automatic reload" "$(serial_of server)" info_field tls_server_cert_serial
expect "TLS PING after the failed automatic reload" PONG tcli ca ping
# Then its key: the reload succeeds.
cp "$certs/other-server.key" "$live/key.new" && mv "$live/key.new" "$live/key.pem"
ok "the automatic reload swaps the certificate in" wait_field tls_server_cert_serial "$(serial_of other-server)"
ok "the automatic reload was logged" grep -q "TLS certificate files changed on disk" "$workdir/server.log"
expect "CONFIG SET the first certificate back (after the automatic reload)" OK cli config set \
    tls-cert-file "$certs/server.crt" tls-key-file "$certs/server.key"

# ---- tls-port at runtime ----
expect "INFO tls_enabled with a TLS listener" 1 info_field tls_enabled
expect "INFO tls_ca_cert_count" 1 info_field tls_ca_cert_count
expect "CONFIG SET tls-port 0" OK cli config set tls-port 0
expect "INFO tls_enabled without a TLS listener" 0 info_field tls_enabled
checks=$((checks + 1))
out=$(tcli ca ping 2>&1)
[ "$out" != PONG ] || fail "TLS PING after tls-port 0 answered PONG"
tport=$(free_port)
expect "CONFIG SET tls-port (new port)" OK cli config set tls-port "$tport"
expect "TLS PING on the new port" PONG tcli ca ping

# ---- clean shutdown ----
cli shutdown nosave >/dev/null 2>&1
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid"
rc=$?
pid=
expect "server exit status" "0" echo "$rc"
ok "no sanitizer report" bash -c "! grep -Eq 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error' $workdir/server.log"

# ---- a tls-* directive without the module ----
checks=$((checks + 1))
p=$(free_port)
out=$(cd "$workdir" && timeout 20 "$server" --port "$p" --bind 127.0.0.1 --save "" \
    --tls-port "$(free_port)" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] || ! grep -q 'tls' <<<"$out"; then
    fail "a tls-port line without the module: expected a refused start naming the module, got rc $rc [$out]"
fi

echo "tls_basic_test: $checks checks, $failures failed, ${SECONDS}s"
if [ "$failures" -ne 0 ]; then
    echo "---- server log (tail) ----" >&2
    tail -n 40 "$workdir/server.log" >&2
    exit 1
fi
exit 0
