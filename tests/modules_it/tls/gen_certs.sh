#!/bin/bash
# gen_certs.sh OUTDIR -- the certificates of the TLS tests, made at test time
# with the openssl CLI (RSA 2048, like Valkey's utils/gen-test-certs.sh):
#
#   ca.{crt,key}                the test CA (self-signed, 10 years)
#   server.{crt,key}            server cert by ca, SAN DNS:localhost, IP:127.0.0.1, IP:::1
#   client.{crt,key}            client cert by ca (extendedKeyUsage clientAuth)
#   server-expired.{crt,key}    like server, but expired (notAfter yesterday)
#   client-expired.{crt,key}    like client, but expired
#   other-ca.{crt,key}          a second, unrelated CA ("wrong CA")
#   other-server.{crt,key}      server cert by other-ca (same SAN)
#   other-client.{crt,key}      client cert by other-ca
#   server-pass.key             server.key encrypted with the passphrase in
#                               server-pass.txt ("keel-test-pass")
#   cadir/                      ca.crt under its hash name (tls-ca-cert-dir)
#
# DH params are not generated (slow); `openssl dhparam -dsaparam -out dh.pem
# 2048` makes a file for tls-dh-params-file quickly if a test needs one.
set -euo pipefail

out=${1:?usage: gen_certs.sh OUTDIR}
mkdir -p "$out"
cd "$out"

cat > ext.cnf <<'_END_'
[ server_ext ]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1

[ client_ext ]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
_END_

make_ca() { # name cn
    openssl req -x509 -new -newkey rsa:2048 -nodes -sha256 -days 3650 \
        -subj "/O=Keel Test/CN=$2" -keyout "$1.key" -out "$1.crt" 2>/dev/null
}

# name ca cn extension days (negative days: already expired)
make_cert() {
    openssl req -new -newkey rsa:2048 -nodes -sha256 -subj "/O=Keel Test/CN=$3" \
        -keyout "$1.key" 2>/dev/null |
        openssl x509 -req -sha256 -CA "$2.crt" -CAkey "$2.key" -CAcreateserial \
            -days "$5" -extfile ext.cnf -extensions "$4" -out "$1.crt" 2>/dev/null
}

make_ca ca "Keel Test CA"
make_ca other-ca "Keel Other CA"
make_cert server ca "localhost" server_ext 365
make_cert client ca "Keel Client" client_ext 365
make_cert server-expired ca "localhost" server_ext -1
make_cert client-expired ca "Keel Client" client_ext -1
make_cert other-server other-ca "localhost" server_ext 365
make_cert other-client other-ca "Keel Other Client" client_ext 365

echo keel-test-pass > server-pass.txt
openssl pkey -in server.key -aes256 -passout pass:keel-test-pass -out server-pass.key

mkdir -p cadir
cp ca.crt "cadir/$(openssl x509 -in ca.crt -noout -hash).0"
