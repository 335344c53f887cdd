#!/usr/bin/env python3
"""geo_record.py -- records Valkey 8.0.1's replies to the geo cases, the
expected values of tests/unit/check_geohash.c and
tests/integration/check_it_geo.c.

Usage (a Valkey 8.0.1 server listening on PORT, e.g.
  /work/valkey-8.0.1/src/valkey-server --port 27100 --save ''):
  tests/integration/geo_record.py PORT
writes tests/unit/geohash_valkey.h (GEOADD scores, GEOHASH strings, GEOPOS
coordinates and GEODIST distances of fixed places) and
tests/integration/geo_valkey.h (the exact RESP2 and RESP3 bytes of each
case below). Nothing in those headers is written by hand: rerun this
script to change them. The BYPOLYGON cases (Valkey 9.0) cannot be recorded
from 8.0.1; check_it_geo.c checks them against GEOPOS/GEODIST instead."""
import socket
import sys

# Places for the unit test: name, longitude, latitude (the limits, both
# hemispheres, the antimeridian, the equator).
PLACES = [
    ("palermo", "13.361389", "38.115556"),
    ("catania", "15.087269", "37.502669"),
    ("origin", "0", "0"),
    ("ne_corner", "180", "85.05112878"),
    ("sw_corner", "-180", "-85.05112878"),
    ("nw_corner", "-180", "85.05112878"),
    ("se_corner", "180", "-85.05112878"),
    ("antimeridian", "179.9999999", "0.5"),
    ("south", "-70.6483", "-33.4569"),
    ("tiny", "0.000001", "-0.000001"),
    ("arctic", "25.0", "84.9"),
    ("sydney", "151.2093", "-33.8688"),
]
DISTANCES = [("palermo", "catania"), ("origin", "ne_corner"), ("sw_corner", "ne_corner"),
             ("antimeridian", "south"), ("tiny", "origin"), ("sydney", "palermo"),
             ("arctic", "nw_corner"), ("palermo", "palermo")]

SETUP = [
    ["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania",
     "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2"],
    ["GEOADD", "pts", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "0", "0", "zero",
     "179.999", "-85", "x1", "-0.0001", "0.0001", "x2", "-179.99", "10", "x3", "179.99", "10.1",
     "x4"],
    # An irregular 7x7 grid around (0, 0): no two members at the same
    # distance from the search centres, so the sorted replies are unique.
    ["GEOADD", "grid"] + [w for i in range(-3, 4) for j in range(-3, 4)
                          for w in ("%.4f" % (i * 1.1 + j * 0.173 + 0.0371 * i * i),
                                    "%.4f" % (j * 0.9 + i * 0.131 + 0.0213 * j * j),
                                    "g%d_%d" % (i, j))],
    # 600 members close together, a skiplist: COUNT ... ANY stops inside a
    # cell's range of many members.
    ["GEOADD", "dense"] + [w for i in range(600)
                           for w in ("%.5f" % (10 + 0.0001 * i), "%.5f" % (40 + 0.00005 * (i % 7)),
                                     "d%d" % i)],
    ["ZADD", "weird", "-1", "neg", "1e300", "big", "inf", "pinf", "4503599627370495", "top"],
    ["SET", "str", "x"],
]

CASES = [
    ["GEOPOS", "Sicily", "Palermo", "Catania", "nosuch"],
    ["GEOPOS", "pts", "ne", "sw", "zero", "x1", "x2", "x3", "x4"],
    ["GEOPOS", "nokey", "a", "b"],
    ["GEOPOS", "Sicily"],
    ["GEOHASH", "Sicily", "Palermo", "Catania", "nosuch"],
    ["GEOHASH", "pts", "ne", "sw", "zero", "x1", "x2", "x3", "x4"],
    ["GEOHASH", "nokey", "a"],
    ["GEOHASH", "Sicily"],
    ["GEOPOS", "weird", "neg", "big", "pinf", "top"],
    ["GEOHASH", "weird", "neg", "big", "pinf", "top"],
    ["GEODIST", "Sicily", "Palermo", "Catania"],
    ["GEODIST", "Sicily", "Palermo", "Catania", "km"],
    ["GEODIST", "Sicily", "Palermo", "Catania", "MI"],
    ["GEODIST", "Sicily", "Palermo", "Catania", "ft"],
    ["GEODIST", "pts", "ne", "sw"],
    ["GEODIST", "pts", "x3", "x4"],
    ["GEODIST", "Sicily", "Palermo", "nosuch"],
    ["GEODIST", "nokey", "a", "b"],
    ["GEODIST", "Sicily", "a", "b", "parsec"],
    ["GEODIST", "Sicily", "a", "b", "km", "x"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHCOORD", "WITHDIST", "WITHHASH"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "DESC", "COUNT", "2"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY"],
    ["GEORADIUS", "Sicily", "15", "37", "20000", "km"],
    ["GEORADIUS", "Sicily", "15", "37", "0", "km"],
    ["GEORADIUS_RO", "Sicily", "15", "37", "300", "km", "ASC", "WITHHASH"],
    ["GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHDIST"],
    ["GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "500", "km", "WITHCOORD", "DESC"],
    ["GEORADIUSBYMEMBER", "Sicily", "nosuch", "200", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC",
     "WITHCOORD", "WITHDIST"],
    ["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "100", "mi", "WITHDIST"],
    ["GEOSEARCH", "Sicily", "FROMMEMBER", "nosuch", "BYRADIUS", "100", "mi"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "180", "10", "BYRADIUS", "100", "km", "WITHDIST"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "-180", "10", "BYBOX", "200", "200", "km", "DESC"],
    ["GEOSEARCH", "pts", "FROMLONLAT", "0", "85", "BYRADIUS", "3000", "km", "WITHCOORD"],
    ["GEOSEARCH", "grid", "FROMLONLAT", "0", "0", "BYRADIUS", "200", "km", "ASC", "WITHDIST"],
    ["GEOSEARCH", "grid", "FROMLONLAT", "0.3", "-0.2", "BYBOX", "300", "100", "km"],
    ["GEOSEARCH", "grid", "FROMMEMBER", "g0_0", "BYBOX", "1000", "1000", "km", "COUNT", "5",
     "WITHHASH"],
    ["GEOSEARCH", "grid", "FROMMEMBER", "g1_1", "BYRADIUS", "150", "km", "COUNT", "3", "ANY"],
    ["GEOSEARCH", "grid", "FROMLONLAT", "0", "0", "BYRADIUS", "2000", "km", "COUNT", "4", "DESC",
     "WITHDIST"],
    ["GEOSEARCH", "grid", "FROMLONLAT", "10", "10", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "dense", "FROMLONLAT", "10.03", "40", "BYRADIUS", "1", "km", "COUNT", "150",
     "ANY"],
    ["GEOSEARCH", "dense", "FROMLONLAT", "10.03", "40", "BYRADIUS", "2", "km", "COUNT", "300",
     "ANY", "WITHDIST"],
    ["GEOSEARCH", "dense", "FROMLONLAT", "10.05", "40.0001", "BYBOX", "3", "1", "km", "COUNT",
     "500", "ANY", "ASC"],
    ["GEORADIUS", "dense", "10", "40", "100", "km", "COUNT", "260", "ANY", "DESC"],
    ["GEOSEARCH", "dense", "FROMMEMBER", "d300", "BYRADIUS", "500", "m", "COUNT", "7", "WITHHASH"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "BYBOX", "1", "1",
     "km"],
    ["GEOSEARCH", "Sicily", "BYRADIUS", "200", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37"],
    ["geosearch", "Sicily", "FROMLONLAT", "15", "37"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1",
     "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "200", "37", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "86", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "parsec"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "x", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "x", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT", "0"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT", "x"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "x"],
    ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYBOX", "1", "1", "km", "WITHHASH"],
    ["GEOSEARCH", "str", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
    ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
    ["OBJECT", "ENCODING", "dst"],
    ["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
     "STOREDIST"],
    ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
    ["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
     "WITHDIST"],
    ["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
     "STORE", "x"],
    ["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
    ["EXISTS", "dst"],
    ["GEOSEARCHSTORE", "dst", "grid", "FROMLONLAT", "0", "0", "BYBOX", "500", "500", "km",
     "COUNT", "3", "DESC", "STOREDIST"],
    ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
    ["GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "0", "0", "BYBOX", "500", "500", "km"],
    ["EXISTS", "dst"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst2", "WITHDIST"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "dst2"],
    ["ZRANGE", "dst2", "0", "-1", "WITHSCORES"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst2", "ASC", "COUNT", "1"],
    ["ZRANGE", "dst2", "0", "-1", "WITHSCORES"],
    ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE"],
    ["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "dst2"],
    ["GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "200", "km", "STOREDIST", "dst2"],
    ["GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "STOREDIST", "dst3"],
    ["ZRANGE", "dst3", "0", "-1", "WITHSCORES"],
    ["GEORADIUSBYMEMBER", "nokey", "nosuch", "x", "km"],
    ["GEORADIUSBYMEMBER", "nokey", "nosuch", "1", "km", "STORE", "dst3"],
    ["EXISTS", "dst3"],
    ["GEORADIUS", "Sicily", "200", "100", "1", "km"],
    ["GEORADIUS", "nokey", "15", "37", "x", "km"],
    ["GEORADIUS", "str", "x", "x", "x", "km"],
    ["GEOADD", "Sicily", "200", "100", "bad"],
    ["GEOADD", "Sicily", "10", "85.06", "bad"],
    ["GEOADD", "Sicily", "x", "1", "bad"],
    ["GEOADD", "Sicily", "1", "x", "bad"],
    ["GEOADD", "Sicily", "NX", "XX", "1", "1", "bad"],
    ["GEOADD", "Sicily", "1", "1"],
    ["GEOADD", "Sicily", "GT", "1", "1", "bad"],
    ["GEOADD", "Sicily", "CH", "CH", "CH"],
    ["GEOADD", "Sicily", "1", "1", "ok", "200", "1", "bad"],
    ["EXISTS", "bad", "ok"],
    ["ZSCORE", "Sicily", "ok"],
    ["GEOADD", "Sicily", "CH", "13.361389", "38.115556", "Palermo", "1", "1", "new"],
    ["GEOADD", "Sicily", "XX", "CH", "2", "2", "Palermo", "3", "3", "new2"],
    ["GEOADD", "Sicily", "NX", "2", "2", "Palermo", "3", "3", "new2"],
    ["GEOADD", "Sicily", "XX", "1", "1", "Palermo"],
    ["GEOADD", "nokey", "XX", "1", "1", "a"],
    ["EXISTS", "nokey"],
    ["ZRANGE", "Sicily", "0", "-1", "WITHSCORES"],
    ["GEOADD", "str", "1", "1", "a"],
    ["GEOADD", "str", "1", "100", "a"],
    ["GEOPOS", "str", "a"],
    ["GEOHASH", "str", "a"],
    ["GEODIST", "str", "a", "b"],
]


def resp_command(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(65536)
        i = self.buf.index(b"\r\n") + 2
        ln, self.buf = self.buf[:i], self.buf[i:]
        return ln

    def take(self, n):
        while len(self.buf) < n:
            self.buf += self.s.recv(65536)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self):
        """One complete reply, as its raw bytes."""
        ln = self.line()
        t, rest = ln[:1], ln[1:-2]
        if t in b"$=!" and rest != b"-1":
            return ln + self.take(int(rest) + 2)
        if t in b"*~>" and rest != b"-1":
            return ln + b"".join(self.reply() for _ in range(int(rest)))
        if t == b"%":
            return ln + b"".join(self.reply() for _ in range(2 * int(rest)))
        return ln

    def call(self, args):
        self.s.sendall(resp_command(args))
        return self.reply()


def c_bytes(b):
    out = '"'
    for ch in b:
        c = chr(ch)
        if c == '"' or c == '\\':
            out += '\\' + c
        elif 32 <= ch < 127:
            out += c
        elif c == '\r':
            out += '\\r'
        elif c == '\n':
            out += '\\n'
        else:
            out += '\\x%02x""' % ch
    return out + '"'


HEADER = """/* %s -- generated by tests/integration/geo_record.py from the replies
 * of Valkey 8.0.1; do not edit, rerun the script. */
"""


def unit_header(conn):
    conn.call(["FLUSHALL"])
    rows = []
    for name, lon, lat in PLACES:
        conn.call(["GEOADD", "p", lon, lat, name])
    for name, lon, lat in PLACES:
        score = conn.call(["ZSCORE", "p", name]).split(b"\r\n")[1].decode()
        hash_ = conn.call(["GEOHASH", "p", name]).split(b"\r\n")[2].decode()
        pos = conn.call(["GEOPOS", "p", name]).split(b"\r\n")
        rows.append('    {"%s", %s, %s, %s, "%s", "%s", "%s"},'
                    % (name, lon, lat, score, hash_, pos[3].decode(), pos[5].decode()))
    dists = []
    for a, b in DISTANCES:
        d = conn.call(["GEODIST", "p", a, b]).split(b"\r\n")[1].decode()
        dists.append('    {"%s", "%s", "%s"},' % (a, b, d))
    return (HEADER % "geohash_valkey.h" +
            "/* name, lon, lat (as given), score, GEOHASH, GEOPOS lon, GEOPOS lat */\n"
            "static const struct valkey_place {\n    const char *name;\n"
            "    double lon, lat, score;\n    const char *hash, *pos_lon, *pos_lat;\n"
            "} valkey_places[] = {\n%s\n};\n\n" % "\n".join(rows) +
            "/* GEODIST a b, in metres */\n"
            "static const struct valkey_dist {\n    const char *a, *b, *dist;\n"
            "} valkey_dists[] = {\n%s\n};\n" % "\n".join(dists))


def it_header(port):
    rows = []
    for resp in (2, 3):
        conn = Conn(port)
        if resp == 3:
            conn.call(["HELLO", "3"])
        conn.call(["FLUSHALL"])
        for cmd in SETUP:
            conn.call(cmd)
        for cmd in CASES:
            got = conn.call(cmd)
            args = ", ".join(c_bytes(a.encode()) for a in cmd)
            rows.append("    {%d, %d, {%s},\n     %s}," % (resp, len(cmd), args, c_bytes(got)))
    setup = ",\n".join("    {%d, {%s}}" % (len(cmd), ", ".join(c_bytes(a.encode()) for a in cmd))
                       for cmd in SETUP)
    return (HEADER % "geo_valkey.h" +
            "#define GEO_SETUP_MAX_ARGS %d\n" % max(len(c) for c in SETUP) +
            "#define GEO_CASE_MAX_ARGS %d\n\n" % max(len(c) for c in CASES) +
            "/* The data every case runs on, in this order. */\n"
            "static const struct geo_setup {\n    int argc;\n"
            "    const char *argv[GEO_SETUP_MAX_ARGS];\n} geo_setup[] = {\n%s\n};\n\n" % setup +
            "/* Each case in order (its writes feed the next ones): protocol, argv and\n"
            " * the exact reply bytes. */\n"
            "static const struct geo_case {\n    int resp, argc;\n"
            "    const char *argv[GEO_CASE_MAX_ARGS];\n    const char *reply;\n"
            "} geo_cases[] = {\n%s\n};\n" % "\n".join(rows))


def main():
    port = int(sys.argv[1])
    root = __file__.rsplit("/tests/", 1)[0]
    with open(root + "/tests/unit/geohash_valkey.h", "w") as f:
        f.write(unit_header(Conn(port)))
    with open(root + "/tests/integration/geo_valkey.h", "w") as f:
        f.write(it_header(port))


main()
