/* check_it_geo.c -- the geo commands against a real keel-server.
 *
 * Every case of geo_valkey.h (GEOADD's options and errors, GEOPOS,
 * GEOHASH, GEODIST, the searches with each option, STORE/STOREDIST,
 * WRONGTYPE, missing keys) is sent over a raw connection in RESP2 and
 * RESP3, and the reply bytes must equal what Valkey 8.0.1 answered
 * (recorded by geo_record.py). BYPOLYGON (Valkey 9.0, not in 8.0.1) is
 * checked against the server's own answers: the members it finds against
 * an even-odd test of their GEOPOS positions, its distances against a
 * search from the polygon's centre, and its errors. Then the keyspace
 * events the writes publish. */
#include "harness.h"

#include "geo_valkey.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- recorded replies ---- */

static void send_command(it_raw *r, int argc, const char *const *argv) {
    char head[32];
    it_raw_send(r, head, (size_t)snprintf(head, sizeof(head), "*%d\r\n", argc));
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        it_raw_send(r, head, (size_t)snprintf(head, sizeof(head), "$%zu\r\n", n));
        it_raw_send(r, argv[i], n);
        it_raw_send(r, "\r\n", 2);
    }
}

/* Reads exactly len bytes from the connection (10 s at most). */
static char *read_exactly(it_raw *r, size_t len) {
    char *buf = it_alloc(len + 1);
    size_t got = 0;
    while (got < len) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        ck_assert_msg(poll(&p, 1, 10000) == 1, "reply timed out after %zu of %zu bytes", got, len);
        ssize_t n = read(r->fd, buf + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        ck_assert_msg(n > 0, "connection closed after %zu of %zu bytes", got, len);
        got += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* The reply to argv must be exactly want, and nothing more: a PING after
 * it answers at once. */
static void expect_bytes(it_raw *r, int argc, const char *const *argv, const char *want) {
    send_command(r, argc, argv);
    size_t len = strlen(want);
    char *got = read_exactly(r, len);
    ck_assert_msg(memcmp(got, want, len) == 0, "%s %s...: got\n%s\nwant\n%s", argv[0],
                  argc > 1 ? argv[1] : "", got, want);
    const char *ping[] = {"PING"};
    send_command(r, 1, ping);
    ck_assert_str_eq(read_exactly(r, 7), "+PONG\r\n");
}

static void run_recorded(int resp) {
    it_raw *r = resp == 3 ? it_raw_connect_resp3(S) : it_raw_connect(S);
    ck_assert_msg(r->pos == r->len, "unread bytes after the handshake");
    const char *flush[] = {"FLUSHALL"};
    expect_bytes(r, 1, flush, "+OK\r\n");
    for (size_t i = 0; i < sizeof(geo_setup) / sizeof(geo_setup[0]); i++) {
        send_command(r, geo_setup[i].argc, geo_setup[i].argv);
        ck_assert_ptr_nonnull(it_raw_read(r));
    }
    size_t n = 0;
    for (size_t i = 0; i < sizeof(geo_cases) / sizeof(geo_cases[0]); i++) {
        if (geo_cases[i].resp != resp) continue;
        expect_bytes(r, geo_cases[i].argc, geo_cases[i].argv, geo_cases[i].reply);
        n++;
    }
    ck_assert_uint_gt(n, 100);
}

START_TEST(test_recorded_resp2) {
    run_recorded(2);
}
END_TEST

START_TEST(test_recorded_resp3) {
    run_recorded(3);
}
END_TEST

/* ---- BYPOLYGON ---- */

/* A 9x9 grid of members p<i>_<j>, irregular enough that no two are at
 * the same distance from (0, 0). */
static void add_grid(void) {
    for (int i = -4; i <= 4; i++)
        for (int j = -4; j <= 4; j++)
            expect_int(C, 1, "GEOADD grid %.4f %.4f p%d_%d", i * 0.25 + j * 0.01 + 0.0017 * i * i,
                       j * 0.25 - i * 0.013 + 0.0023 * j * j, i, j);
}

/* The even-odd rule written out independently: the number of polygon
 * edges a ray going east from (x, y) crosses is odd. */
static int inside(const double (*v)[2], int n, double x, double y) {
    int crossings = 0;
    for (int i = 0; i < n; i++) {
        const double *a = v[i], *b = v[(i + 1) % n];
        if ((a[1] > y) == (b[1] > y)) continue;
        double at = a[0] + (y - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
        if (x < at) crossings++;
    }
    return crossings % 2;
}

/* "BYPOLYGON n lon lat ..." for the vertices. */
static char *polygon_args(const double (*v)[2], int n) {
    char *s = it_fmt("BYPOLYGON %d", n);
    for (int i = 0; i < n; i++)
        s = it_fmt("%s %.17g %.17g", s, v[i][0], v[i][1]);
    return s;
}

/* Sends a command given as one line of words (a polygon's many
 * arguments are formatted into it). */
static redisReply *cmd_line(const char *line) {
    char *copy = it_fmt("%s", line);
    const char *argv[256];
    size_t lens[256];
    int argc = 0;
    for (char *w = strtok(copy, " "); w && argc < 256; w = strtok(NULL, " ")) {
        argv[argc] = w;
        lens[argc++] = strlen(w);
    }
    return it_cmd_argv(C, argc, argv, lens);
}

/* The members of grid whose GEOPOS position is inside the polygon, sorted
 * and joined as it_sorted_join does. */
static char *expected_inside(const double (*v)[2], int n) {
    redisReply *all = it_cmd(C, "ZRANGE grid 0 -1");
    char **names = it_alloc(sizeof(char *) * (all->elements + 1));
    size_t k = 0;
    for (size_t i = 0; i < all->elements; i++) {
        redisReply *pos = it_cmd(C, "GEOPOS grid %s", all->element[i]->str);
        double x = atof(pos->element[0]->element[0]->str),
               y = atof(pos->element[0]->element[1]->str);
        if (inside(v, n, x, y)) names[k++] = all->element[i]->str;
    }
    /* Sort as it_sorted_join does (strcmp order). */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    char *out = it_fmt("%s", "");
    for (size_t i = 0; i < k; i++)
        out = it_fmt("%s%s%s", out, i ? "," : "", names[i]);
    return out;
}

START_TEST(test_polygon_members) {
    add_grid();
    /* A concave "C" open to the east, a triangle, a star-like hexagon. */
    static const double c_shape[][2] = {{-0.9, -0.9}, {0.9, -0.9}, {0.9, -0.4}, {-0.3, -0.4},
                                        {-0.3, 0.4},  {0.9, 0.4},  {0.9, 0.9},  {-0.9, 0.9}};
    static const double tri[][2] = {{-1.2, -1}, {1.1, -0.2}, {-0.1, 1.05}};
    static const double hex[][2] = {{0, -1}, {0.2, -0.1}, {1, 0}, {0.1, 0.15}, {0, 1}, {-0.3, 0}};
    const struct {
        const double (*v)[2];
        int n;
    } polys[] = {{c_shape, 8}, {tri, 3}, {hex, 6}};
    for (size_t p = 0; p < sizeof(polys) / sizeof(polys[0]); p++) {
        char *want = expected_inside(polys[p].v, polys[p].n);
        ck_assert_msg(strlen(want) > 0, "polygon %zu finds nothing", p);
        redisReply *got =
            cmd_line(it_fmt("GEOSEARCH grid %s", polygon_args(polys[p].v, polys[p].n)));
        ck_assert_str_eq(it_sorted_join(got), want);
        /* GEOSEARCHSTORE stores the same members. */
        redisReply *stored =
            cmd_line(it_fmt("GEOSEARCHSTORE dst grid %s", polygon_args(polys[p].v, polys[p].n)));
        ck_assert_int_eq(stored->integer, (long long)got->elements);
        ck_assert_str_eq(it_sorted_join(it_cmd(C, "ZRANGE dst 0 -1")), want);
    }
}
END_TEST

/* A square symmetric about (0, 0) has its centre there: WITHDIST and
 * STOREDIST (in metres: a polygon has no unit) are the distances a search
 * from (0, 0) gives. */
START_TEST(test_polygon_distances) {
    add_grid();
    static const double square[][2] = {{-0.6, -0.6}, {0.6, -0.6}, {0.6, 0.6}, {-0.6, 0.6}};
    char *poly = polygon_args(square, 4);
    redisReply *got = cmd_line(it_fmt("GEOSEARCH grid %s ASC WITHDIST", poly));
    redisReply *ref = it_cmd(C, "GEOSEARCH grid FROMLONLAT 0 0 BYBOX 200000 200000 m ASC WITHDIST");
    ck_assert_uint_gt(got->elements, 4);
    size_t j = 0;
    for (size_t i = 0; i < got->elements; i++) {
        const char *m = got->element[i]->element[0]->str;
        while (j < ref->elements && strcmp(ref->element[j]->element[0]->str, m))
            j++;
        ck_assert_msg(j < ref->elements, "%s missing from the centre's search (or out of order)",
                      m);
        ck_assert_str_eq(got->element[i]->element[1]->str, ref->element[j]->element[1]->str);
    }
    /* COUNT keeps the nearest, DESC the farthest first. */
    redisReply *two = cmd_line(it_fmt("GEOSEARCH grid %s COUNT 2", poly));
    ck_assert_uint_eq(two->elements, 2);
    ck_assert_str_eq(two->element[0]->str, got->element[0]->element[0]->str);
    ck_assert_str_eq(two->element[1]->str, got->element[1]->element[0]->str);
    redisReply *desc = cmd_line(it_fmt("GEOSEARCH grid %s DESC", poly));
    ck_assert_str_eq(desc->element[0]->str, got->element[got->elements - 1]->element[0]->str);
    char buf[256];
    redisReply *r = cmd_line(it_fmt("GEOSEARCH grid %s COUNT 3 STOREDIST", poly));
    ck_assert_str_eq(it_render(r, buf, sizeof(buf)), "-ERR syntax error");
    r = cmd_line(it_fmt("GEOSEARCHSTORE dst grid %s COUNT 3 STOREDIST", poly));
    ck_assert_int_eq(r->integer, 3);
    redisReply *stored = it_cmd(C, "ZRANGE dst 0 -1 WITHSCORES");
    ck_assert_uint_eq(stored->elements, 6);
    ck_assert_str_eq(stored->element[0]->str, got->element[0]->element[0]->str);
    ck_assert(fabs(atof(stored->element[1]->str) - atof(got->element[0]->element[1]->str)) < 1e-3);
}
END_TEST

START_TEST(test_polygon_errors) {
    add_grid();
#define VERTEX_ERR "ERR GEOSEARCH BYPOLYGON must have at least 3 vertices"
    expect_error(C, VERTEX_ERR, "GEOSEARCH grid BYPOLYGON 2 0 0 1 1");
    expect_error(C, VERTEX_ERR, "GEOSEARCH grid BYPOLYGON 4 0 0 1 1 1 0");
    expect_error(C, VERTEX_ERR, "GEOSEARCH grid BYPOLYGON -3 0 0 1 1 1 0");
    expect_error(C, "ERR invalid number of vertices", "GEOSEARCH grid BYPOLYGON x 0 0 1 1 1 0");
    expect_error(C, "ERR invalid number of vertices",
                 "GEOSEARCH grid BYPOLYGON 4294967299 0 0 1 1 1 0");
    expect_error(C, "ERR invalid longitude,latitude pair 181.000000,1.000000",
                 "GEOSEARCH grid BYPOLYGON 3 0 0 181 1 1 0");
    expect_error(C, "ERR value is not a valid float", "GEOSEARCH grid BYPOLYGON 3 0 0 1 y 1 0");
    expect_error(C, "ERR syntax error", "GEOSEARCH grid FROMLONLAT 0 0 BYPOLYGON 3 0 0 1 1 1 0");
    expect_error(C, "ERR syntax error", "GEOSEARCH grid BYPOLYGON 3 0 0 1 1 1 0 FROMMEMBER p0_0");
    expect_error(C, "ERR syntax error", "GEOSEARCH grid BYPOLYGON 3 0 0 1 1 1 0 BYRADIUS 1 km");
    expect_error(C, "ERR syntax error", "GEOSEARCH grid BYBOX 1 1 km BYPOLYGON 3 0 0 1 1 1 0");
    expect_error(C, "ERR syntax error",
                 "GEOSEARCH grid BYPOLYGON 3 0 0 1 1 1 0 BYPOLYGON 3 0 0 1 1 1 0");
    expect_error(C, "ERR syntax error", "GEOSEARCH grid ASC ASC ASC BYPOLYGON 3");
    expect_error(C, "ERR syntax error", "GEORADIUS grid 0 0 1 km BYPOLYGON 3 0 0 1 1 1 0");
    expect_error(
        C, "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        "GEOSEARCHSTORE dst grid BYPOLYGON 3 0 0 1 1 1 0 WITHDIST");
    expect_error(C, "ERR the ANY argument requires COUNT argument",
                 "GEOSEARCH grid BYPOLYGON 3 0 0 1 1 1 0 ANY");
    /* A missing source still checks the arguments, then finds nothing. */
    expect_error(C, VERTEX_ERR, "GEOSEARCH nokey BYPOLYGON 2 0 0 1 1");
    expect_reply(C, "[]", "GEOSEARCH nokey BYPOLYGON 3 0 0 1 1 1 0");
    expect_ok(C, "SET dst x");
    expect_int(C, 0, "GEOSEARCHSTORE dst nokey BYPOLYGON 3 0 0 1 1 1 0");
    expect_int(C, 0, "EXISTS dst");
    expect_ok(C, "SET str x");
    expect_error_prefix(C, "WRONGTYPE", "GEOSEARCH str BYPOLYGON 3 0 0 1 1 1 0");
}
END_TEST

/* A search through a set in the skiplist encoding gives the same replies
 * as through the compact one. */
START_TEST(test_encodings_agree) {
    add_grid();
    const char *queries[] = {
        "GEOSEARCH grid FROMLONLAT 0.1 0.1 BYRADIUS 80 km ASC WITHDIST WITHHASH",
        "GEOSEARCH grid FROMMEMBER p1_1 BYBOX 100 60 km DESC WITHCOORD",
        "GEOSEARCH grid BYPOLYGON 3 -1 -1 1 -0.5 0 1 ASC WITHDIST"};
    char *compact[3];
    for (int i = 0; i < 3; i++) {
        char buf[8192];
        compact[i] = it_fmt("%s", it_render(it_cmd(C, queries[i]), buf, sizeof(buf)));
    }
    expect_ok(C, "CONFIG SET zset-max-listpack-entries 0");
    expect_int(C, 1, "GEOADD grid 50 50 far");
    expect_bulk(C, "skiplist", "OBJECT ENCODING grid");
    for (int i = 0; i < 3; i++)
        expect_reply(C, compact[i], queries[i]);
    expect_ok(C, "CONFIG SET zset-max-listpack-entries 128");
}
END_TEST

/* ---- keyspace events ---- */

/* The next message on a keyspace subscriber: key's event in db 0. */
static void expect_event(it_raw *sub, const char *key, const char *event) {
    expect_raw(sub, it_fmt("[\"pmessage\",\"__keyspace@0__:*\",\"__keyspace@0__:%s\",\"%s\"]", key,
                           event));
}

/* Valkey's events: GEOADD is a ZADD, the stores name their command, an
 * empty result deletes the destination; a write that changes nothing and
 * the reads publish nothing (the PING's pong comes next). */
START_TEST(test_events) {
    expect_ok(C, "CONFIG SET notify-keyspace-events KA");
    it_raw *sub = it_raw_connect(S);
    it_raw_cmd(sub, "PSUBSCRIBE", "__keyspace@0__:*", NULL);
    expect_raw(sub, "[\"psubscribe\",\"__keyspace@0__:*\",:1]");
    expect_int(C, 2, "GEOADD g 1 1 a 1.1 1.1 b");
    expect_int(C, 0, "GEOADD g 1 1 a");
    expect_int(C, 1, "GEOADD g CH 1.2 1.2 a");
    expect_reply(C, "[\"b\",\"a\"]", "GEOSEARCH g FROMLONLAT 1 1 BYRADIUS 100 km ASC");
    expect_int(C, 2, "GEOSEARCHSTORE d g FROMLONLAT 1 1 BYRADIUS 100 km");
    expect_int(C, 2, "GEORADIUS g 1 1 100 km STORE d2");
    expect_int(C, 1, "GEORADIUSBYMEMBER g a 1 km STOREDIST d2");
    expect_int(C, 0, "GEOSEARCHSTORE d g FROMLONLAT 50 50 BYRADIUS 1 km");
    expect_int(C, 0, "GEOSEARCHSTORE d g FROMLONLAT 50 50 BYRADIUS 1 km");
    expect_int(C, 0, "GEORADIUSBYMEMBER nokey x 1 km STORE d2");
    expect_event(sub, "g", "zadd");
    expect_event(sub, "g", "zadd");
    expect_event(sub, "d", "geosearchstore");
    expect_event(sub, "d2", "georadiusstore");
    expect_event(sub, "d2", "georadiusstore");
    expect_event(sub, "d", "del");
    expect_event(sub, "d2", "del");
    it_raw_cmd(sub, "PING", NULL);
    expect_raw(sub, "[\"pong\",\"\"]");
}
END_TEST

int main(void) {
    Suite *s = suite_create("it_geo");
    TCase *tc = it_tcase(s, "recorded");
    tcase_add_test(tc, test_recorded_resp2);
    tcase_add_test(tc, test_recorded_resp3);
    tc = it_tcase(s, "polygon");
    tcase_add_test(tc, test_polygon_members);
    tcase_add_test(tc, test_polygon_distances);
    tcase_add_test(tc, test_polygon_errors);
    tcase_add_test(tc, test_encodings_agree);
    tcase_add_test(tc, test_events);
    return it_run(s);
}
