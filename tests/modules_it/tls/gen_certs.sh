#!/usr/bin/env bash
# gen_certs.sh DIR -- the certificates of the TLS tests, generated at test
# time with the openssl command (EC P-256 keys: fast to make):
#   ca.{crt,key}              the test CA
#   server.{crt,key}          CN keel-server-1, SAN IP:127.0.0.1 DNS:localhost
#   server2.{crt,key}         CN keel-server-2, same SAN (certificate reload)
#   client.{crt,key}          CN keel-client, clientAuth
#   expired-server.{crt,key}  like server, valid only in 2020
#   expired-client.{crt,key}  like client, valid only in 2020
#   wrong-ca.{crt,key}        another CA, which the server does not trust
#   wrong-client.{crt,key}    a client certificate signed by wrong-ca
#   wrong-server.{crt,key}    a server certificate signed by wrong-ca
# Every certificate has its own serial. Exits non-zero on any failure.
set -euo pipefail
dir=${1:?usage: gen_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

san="subjectAltName=IP:127.0.0.1,DNS:localhost"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

# ca NAME CN
ca() {
    key "$1"
    openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/O=Keel test/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$1.crt"
}

# Signs NAME.key's request as NAME.crt with CA, serial SERIAL, subject CN,
# extensions EXT, valid from START to END (openssl ca dates, YYMMDDHHMMSSZ).
sign() {
    local name=$1 ca=$2 serial=$3 cn=$4 ext=$5 start=$6 end=$7
    key "$name"
    openssl req -new -key "$name.key" -subj "/O=Keel test/CN=$cn" -out "$name.csr"
    local db
    db=$(mktemp -d)
    : >"$db/index.txt"
    echo "$serial" >"$db/serial"
    printf '%s\n' "[ca]" "default_ca=ca_sect" "[ca_sect]" "dir=$db" "database=$db/index.txt" \
        "new_certs_dir=$db" "serial=$db/serial" "default_md=sha256" "policy=pol" \
        "unique_subject=no" "copy_extensions=none" "[pol]" "O=supplied" "CN=supplied" \
        "[ext]" "basicConstraints=CA:FALSE" "$ext" >"$db/ca.cnf"
    openssl ca -batch -notext -config "$db/ca.cnf" -extensions ext -cert "$ca.crt" \
        -keyfile "$ca.key" -startdate "$start" -enddate "$end" -in "$name.csr" \
        -out "$name.crt" 2>/dev/null
    rm -rf "$db" "$name.csr"
}

now=$(date -u -d '-1 day' +%y%m%d%H%M%SZ)
later=$(date -u -d '+3650 days' +%Y%m%d%H%M%SZ)
srv="extendedKeyUsage=serverAuth"$'\n'"$san"
cli="extendedKeyUsage=clientAuth"

ca ca "Keel test CA"
ca wrong-ca "Keel wrong CA"
sign server ca 1001 keel-server-1 "$srv" "$now" "$later"
sign server2 ca 1002 keel-server-2 "$srv" "$now" "$later"
sign client ca 1003 keel-client "$cli" "$now" "$later"
sign expired-server ca 1004 keel-expired-server "$srv" 200101000000Z 200201000000Z
sign expired-client ca 1005 keel-expired-client "$cli" 200101000000Z 200201000000Z
sign wrong-client wrong-ca 2001 keel-wrong-client "$cli" "$now" "$later"
sign wrong-server wrong-ca 2002 keel-wrong-server "$srv" "$now" "$later"
chmod 600 ./*.key
