#!/usr/bin/env bash
# tls_clients_test.sh KEEL_SERVER TLS_MODULE GEN_CERTS -- the TLS module
# with real clients: redis-cli --tls (with and without a client
# certificate, with --cacertdir), redis-benchmark --tls, openssl s_client,
# a Python ssl-module client and a Node.js tls-module client, each doing
# commands on the module's TLS port of one keel-server. TLS_MODULE
# "builtin": a server with TLS built in (Valkey), to check the test itself.
# KEEL_TEST_IO_THREADS=N runs the server with N I/O threads taking every
# event, as the integration harness does. Exits non-zero on any failure.
set -euo pipefail
server=${1:?usage: tls_clients_test.sh KEEL_SERVER TLS_MODULE GEN_CERTS}
module=${2:?}
gen=${3:?}

for tool in redis-cli redis-benchmark openssl python3 node; do
    command -v "$tool" >/dev/null || { echo "tls_clients_test: $tool not found" >&2; exit 1; }
done
if [ "$module" != builtin ] && [ ! -f "$module" ]; then
    echo "tls_clients_test: the tls module $module is not built" >&2
    exit 1
fi

dir=$(mktemp -d /tmp/keel-tls-clients-XXXXXX)
pid=
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    echo "--- server log (tail) ---" >&2
    tail -n 30 "$dir/server.log" >&2 || true
    exit 1
}

bash "$gen" "$dir/certs" >/dev/null
c=$dir/certs

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
port=$(free_port)
tport=$(free_port)
args=(--port "$port" --bind 127.0.0.1 --tls-port "$tport" --tls-cert-file "$c/server.crt"
    --tls-key-file "$c/server.key" --tls-ca-cert-file "$c/ca.crt" --save "" --dir "$dir")
[ "$module" = builtin ] || args=(--loadmodule "$module" "${args[@]}")
if [ -n "${KEEL_TEST_IO_THREADS:-}" ]; then
    args+=(--io-threads "$KEEL_TEST_IO_THREADS" --events-per-io-thread 0)
fi
"$server" "${args[@]}" >"$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 500); do
    if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
    kill -0 "$pid" 2>/dev/null || fail "the server exited during start-up"
    sleep 0.02
done
redis-cli -p "$port" ping | grep -q PONG || fail "the server did not start"

tls=(--tls --cacert "$c/ca.crt" --cert "$c/client.crt" --key "$c/client.key")
cli() { timeout 20 redis-cli -p "$tport" "${tls[@]}" "$@"; }

# redis-cli: commands, SNI, a CA directory; no certificate is refused (tls-auth-clients yes).
[ "$(cli ping)" = PONG ] || fail "redis-cli --tls ping"
[ "$(cli set k1 hello)" = OK ] || fail "redis-cli --tls set"
[ "$(cli --sni localhost get k1)" = hello ] || fail "redis-cli --tls --sni get"
[ "$(timeout 20 redis-cli -p "$tport" --tls --cacertdir "$c/cadir" --cert "$c/client.crt" \
    --key "$c/client.key" get k1)" = hello ] || fail "redis-cli --tls --cacertdir get"
[ "$(redis-cli -p "$port" get k1)" = hello ] || fail "the plain port does not see the TLS write"
if out=$(timeout 20 redis-cli -p "$tport" --tls --cacert "$c/ca.crt" ping 2>&1) && [ "$out" = PONG ]; then
    fail "redis-cli without a client certificate was served"
fi
if out=$(timeout 20 redis-cli -p "$tport" --tls --cacert "$c/other-ca.crt" --cert "$c/client.crt" \
    --key "$c/client.key" ping 2>&1) && [ "$out" = PONG ]; then
    fail "redis-cli trusting another CA accepted the server"
fi

# redis-benchmark: completes with no errors.
bench=$(timeout 120 redis-benchmark -p "$tport" "${tls[@]}" -n 2000 -c 8 -P 4 -t set,get -q 2>&1) ||
    fail "redis-benchmark --tls exited non-zero: $bench"
bench=$(echo "$bench" | tr '\r' '\n')
echo "$bench" | grep -Eq '^ *SET: [0-9.]+ requests per second' || fail "redis-benchmark --tls: no SET result: $bench"
echo "$bench" | grep -Eq '^ *GET: [0-9.]+ requests per second' || fail "redis-benchmark --tls: no GET result: $bench"
if echo "$bench" | grep -qi 'error'; then fail "redis-benchmark --tls reported errors: $bench"; fi

# openssl s_client: PING and QUIT; -ign_eof reads until the server closes.
out=$(printf 'PING\r\nQUIT\r\n' | timeout 20 openssl s_client -connect "127.0.0.1:$tport" \
    -servername localhost -CAfile "$c/ca.crt" -cert "$c/client.crt" -key "$c/client.key" \
    -verify_return_error -quiet -ign_eof 2>/dev/null | tr -d '\r')
[ "$out" = $'+PONG\n+OK' ] || fail "openssl s_client: got '$out'"
for v in -tls1_2 -tls1_3; do
    out=$(printf 'PING\r\nQUIT\r\n' | timeout 20 openssl s_client "$v" -connect "127.0.0.1:$tport" \
        -CAfile "$c/ca.crt" -cert "$c/client.crt" -key "$c/client.key" -verify_return_error \
        -quiet -ign_eof 2>/dev/null | tr -d '\r')
    [ "$out" = $'+PONG\n+OK' ] || fail "openssl s_client $v: got '$out'"
done

# Python's ssl module: SET/GET of a 100 KB value, pipelined.
timeout 60 python3 - "$tport" "$c" <<'PY' || fail "python3 ssl client"
import socket, ssl, sys
port, c = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=c + "/ca.crt")
ctx.load_cert_chain(c + "/client.crt", c + "/client.key")
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
with socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
        val = bytes(i % 251 for i in range(100000))
        s.sendall(cmd("SET", "py", val) + cmd("GET", "py") + cmd("STRLEN", "py"))
        want = b"+OK\r\n$%d\r\n%s\r\n:%d\r\n" % (len(val), val, len(val))
        got = b""
        while len(got) < len(want):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        if got != want:
            sys.exit("python: unexpected reply %r..." % got[:80])
        print("python ok:", s.version())
PY

# Node.js's tls module: SET then GET.
timeout 60 node - "$tport" "$c" <<'JS' || fail "node tls client"
const tls = require('tls'), fs = require('fs');
const [port, c] = [Number(process.argv[2]), process.argv[3]];
const s = tls.connect({host: '127.0.0.1', port, servername: 'localhost',
    ca: fs.readFileSync(c + '/ca.crt'), cert: fs.readFileSync(c + '/client.crt'),
    key: fs.readFileSync(c + '/client.key')}, () => {
    s.write('*3\r\n$3\r\nSET\r\n$4\r\nnode\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$4\r\nnode\r\n');
});
let got = '';
const want = '+OK\r\n$5\r\nhello\r\n';
s.on('data', d => {
    got += d;
    if (got.length >= want.length) {
        if (got !== want) { console.error('node: unexpected reply ' + JSON.stringify(got)); process.exit(1); }
        console.log('node ok: ' + s.getProtocol());
        s.end();
    }
});
s.on('error', e => { console.error('node: ' + e.message); process.exit(1); });
JS
[ "$(cli get node)" = hello ] || fail "redis-cli does not see node's write"

# A clean exit.
kill -TERM "$pid"
for _ in $(seq 500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
if kill -0 "$pid" 2>/dev/null; then fail "the server did not exit within 10 s of SIGTERM"; fi
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "the server exited with status $status"
echo "tls_clients_test: all passed"
