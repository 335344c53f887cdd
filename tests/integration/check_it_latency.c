/* check_it_latency.c -- LATENCY and INFO latencystats against a real
 * keel-server: HISTOGRAM's shape (calls, cumulative counts at doubling
 * microsecond buckets), subcommands, unknown names skipped, CONFIG
 * RESETSTAT clearing the histograms, latency-tracking off, the percentiles
 * INFO shows and their directive; the latency monitor's events from slow
 * commands (DEBUG SLEEP) above latency-monitor-threshold, LATEST, HISTORY,
 * GRAPH, DOCTOR, RESET, and the errors. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The element of a flat RESP2 map reply under key. */
static redisReply *map_get(redisReply *r, const char *key) {
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, key))
            return r->element[i + 1];
    return NULL;
}

/* Asserts a command's histogram: its calls, and cumulative counts that
 * grow over growing buckets up to the calls. */
static void check_histogram(redisReply *h, long long calls) {
    ck_assert_ptr_nonnull(h);
    redisReply *n = map_get(h, "calls");
    ck_assert_ptr_nonnull(n);
    ck_assert_int_eq(n->integer, calls);
    redisReply *b = map_get(h, "histogram_usec");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_ge(b->elements, 2);
    long long last_bucket = -1, last_count = 0;
    for (size_t i = 0; i + 1 < b->elements; i += 2) {
        ck_assert_int_gt(b->element[i]->integer, last_bucket);
        ck_assert_int_gt(b->element[i + 1]->integer, last_count);
        last_bucket = b->element[i]->integer;
        last_count = b->element[i + 1]->integer;
    }
    ck_assert_int_eq(last_count, calls);
}

START_TEST(test_histogram) {
    expect_ok(C, "CONFIG RESETSTAT");
    redisReply *r = it_cmd(C, "LATENCY HISTOGRAM");
    ck_assert_int_eq(r->elements, 2); /* the RESETSTAT itself */
    check_histogram(map_get(r, "config|resetstat"), 1);
    expect_ok(C, "SET a b");
    expect_ok(C, "SET c d");
    expect_bulk(C, "b", "GET a");
    r = it_cmd(C, "LATENCY HISTOGRAM set get nosuch");
    ck_assert_int_eq(r->elements, 4);
    check_histogram(map_get(r, "set"), 2);
    check_histogram(map_get(r, "get"), 1);
    it_cmd(C, "CLIENT ID");
    it_cmd(C, "CLIENT LIST");
    r = it_cmd(C, "LATENCY HISTOGRAM client");
    ck_assert_int_eq(r->elements, 4);
    check_histogram(map_get(r, "client|id"), 1);
    check_histogram(map_get(r, "client|list"), 1);
    r = it_cmd(C, "LATENCY HISTOGRAM client|id");
    ck_assert_int_eq(r->elements, 2);
    r = it_cmd(C, "LATENCY HISTOGRAM blabla");
    ck_assert_int_eq(r->elements, 0);
}
END_TEST

START_TEST(test_latencystats_and_tracking) {
    expect_ok(C, "CONFIG RESETSTAT");
    for (int i = 0; i < 10; i++)
        expect_ok(C, "SET k v");
    char *line = it_info_str(C, "latencystats", "latency_percentiles_usec_set");
    ck_assert_ptr_nonnull(line);
    double p50, p99, p999;
    ck_assert_int_eq(sscanf(line, "p50=%lf,p99=%lf,p99.9=%lf", &p50, &p99, &p999), 3);
    ck_assert(p50 > 0 && p50 <= p99 && p99 <= p999);
    expect_ok(C, "CONFIG SET latency-tracking-info-percentiles %s", "0 12.5 100");
    expect_reply(C, "[\"latency-tracking-info-percentiles\",\"0 12.5 100\"]",
                 "CONFIG GET latency-tracking-info-percentiles");
    line = it_info_str(C, "latencystats", "latency_percentiles_usec_set");
    ck_assert_msg(!strncmp(line, "p0=", 3) && strstr(line, ",p12.5=") && strstr(line, ",p100="),
                  "%s", line);
    expect_error_prefix(C, "ERR CONFIG SET failed",
                        "CONFIG SET latency-tracking-info-percentiles 101");
    expect_ok(C, "CONFIG SET latency-tracking-info-percentiles %s", "50 99 99.9");
    /* Off: no histogram is started. */
    expect_ok(C, "CONFIG SET latency-tracking no");
    expect_ok(C, "CONFIG RESETSTAT");
    expect_bulk(C, "v", "GET k");
    ck_assert_ptr_null(it_info_str(C, "latencystats", "latency_percentiles_usec_get"));
    ck_assert_int_eq(it_cmd(C, "LATENCY HISTOGRAM")->elements, 0);
    expect_ok(C, "CONFIG SET latency-tracking yes");
}
END_TEST

START_TEST(test_monitor_events) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    /* Off by default: a slow command records nothing. */
    expect_ok(c, "DEBUG SLEEP 0.06");
    ck_assert_int_eq(it_cmd(c, "LATENCY LATEST")->elements, 0);
    expect_ok(c, "CONFIG SET latency-monitor-threshold 50");
    expect_ok(c, "DEBUG SLEEP 0.01"); /* under the threshold */
    ck_assert_int_eq(it_cmd(c, "LATENCY LATEST")->elements, 0);
    expect_ok(c, "DEBUG SLEEP 0.08");
    redisReply *r = it_cmd(c, "LATENCY LATEST");
    ck_assert_int_eq(r->elements, 1);
    redisReply *e = r->element[0];
    ck_assert_int_eq(e->elements, 4);
    ck_assert_str_eq(e->element[0]->str, "command");
    ck_assert_int_ge(e->element[2]->integer, 80);
    ck_assert_int_ge(e->element[3]->integer, e->element[2]->integer);
    long long when = e->element[1]->integer;
    r = it_cmd(c, "LATENCY HISTORY command");
    ck_assert_int_eq(r->elements, 1);
    ck_assert_int_eq(r->element[0]->element[0]->integer, when);
    r = it_cmd(c, "LATENCY GRAPH command");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "command - high ") && strstr(r->str, " ms, low "), "%s", r->str);
    r = it_cmd(c, "LATENCY DOCTOR");
    ck_assert_msg(r->type == REDIS_REPLY_STRING && strstr(r->str, "command"), "%s", r->str);
    expect_error(c, "ERR No samples available for event 'nosuch'", "LATENCY GRAPH nosuch");
    ck_assert_int_eq(it_cmd(c, "LATENCY HISTORY nosuch")->elements, 0);
    expect_int(c, 0, "LATENCY RESET nosuch");
    expect_int(c, 1, "LATENCY RESET command");
    ck_assert_int_eq(it_cmd(c, "LATENCY LATEST")->elements, 0);
    expect_ok(c, "DEBUG SLEEP 0.06");
    expect_int(c, 1, "LATENCY RESET");
    expect_error(c, "ERR wrong number of arguments for 'latency|help' command", "LATENCY HELP xxx");
    r = it_cmd(c, "LATENCY HELP");
    ck_assert_int_gt(r->elements, 10);
}
END_TEST

static Suite *latency_suite(void) {
    Suite *s = suite_create("latency");
    TCase *tc = it_tcase(s, "latency");
    tcase_add_test(tc, test_histogram);
    tcase_add_test(tc, test_latencystats_and_tracking);
    tc = it_tcase_bare(s, "monitor");
    tcase_add_test(tc, test_monitor_events);
    return s;
}

int main(void) {
    return it_run(latency_suite());
}
