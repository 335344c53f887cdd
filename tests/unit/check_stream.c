/* check_stream.c -- unit tests for core/types/stream.c: ID parsing,
 * formatting, increment and decrement at their edges; node boundaries
 * under stream-node-max-entries and stream-node-max-bytes (0 = no limit);
 * entries bigger than a node, entries with differing fields, fields that
 * look like integers; deletion and trimming metadata; and random appends,
 * deletions, trims and ranges in both directions checked against an array
 * of the live entries. */
#include "types/stream.h"

#include "keyspace_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_options opts;
static db_metrics stats;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 1, 0);
    opts.types.stream_node_max_entries = 100;
    opts.types.stream_node_max_bytes = 4096;
    stream_type_setup();
}

static void teardown(void) {
    db_teardown();
}

/* ---- IDs ---- */

static int parse(const char *s, uint64_t missing, int minmax, stream_id *id, int *seq_given) {
    return stream_id_parse(s, strlen(s), missing, minmax, id, seq_given);
}

START_TEST(test_id_parse) {
    stream_id id;
    int sg;
    ck_assert_int_eq(parse("1-2", 0, 0, &id, &sg), K_OK);
    ck_assert(id.ms == 1 && id.seq == 2 && sg);
    ck_assert_int_eq(parse("7", 9, 0, &id, &sg), K_OK);
    ck_assert(id.ms == 7 && id.seq == 9 && !sg);
    ck_assert_int_eq(parse("18446744073709551615-18446744073709551615", 0, 0, &id, NULL), K_OK);
    ck_assert(stream_id_cmp(id, STREAM_ID_MAX) == 0);
    ck_assert_int_eq(parse("18446744073709551616-0", 0, 0, &id, NULL), K_ERR);
    ck_assert_int_eq(parse("0-18446744073709551616", 0, 0, &id, NULL), K_ERR);
    ck_assert_int_eq(parse("007-01", 0, 0, &id, NULL), K_OK);
    ck_assert(id.ms == 7 && id.seq == 1);
    ck_assert_int_eq(parse("-", 0, 1, &id, NULL), K_OK);
    ck_assert(stream_id_cmp(id, STREAM_ID_MIN) == 0);
    ck_assert_int_eq(parse("+", 0, 1, &id, NULL), K_OK);
    ck_assert(stream_id_cmp(id, STREAM_ID_MAX) == 0);
    /* Leading white space and a '+' before either part, as Valkey's
     * strtoull fallback takes them (checked against Valkey 8.0.1). */
    ck_assert_int_eq(parse(" +5-\t+6", 0, 0, &id, NULL), K_OK);
    ck_assert(id.ms == 5 && id.seq == 6);
    ck_assert_int_eq(parse(" 1", 0, 0, &id, NULL), K_OK);
    ck_assert(id.ms == 1 && id.seq == 0);
    const char *bad_strict[] = {"-",   "+",   "",   "-1", "1-", "1--2", "1-2-3",
                                "a",   "1-x", "1 ", " ",  "+",  "1-+",  "++1",
                                " -1", "1-+-1"};
    for (size_t i = 0; i < sizeof(bad_strict) / sizeof(*bad_strict); i++)
        ck_assert_msg(parse(bad_strict[i], 0, 0, &id, NULL) == K_ERR, "%s", bad_strict[i]);
    char longid[200];
    memset(longid, '0', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = '\0';
    ck_assert_int_eq(parse(longid, 0, 0, &id, NULL), K_ERR); /* Valkey's 127-byte limit */
}
END_TEST

START_TEST(test_id_format_incr_decr) {
    char buf[STREAM_ID_STR_MAX];
    ck_assert_uint_eq(stream_id_format(buf, STREAM_ID_MAX), 41);
    ck_assert_str_eq(buf, "18446744073709551615-18446744073709551615");
    stream_id_format(buf, STREAM_ID_MIN);
    ck_assert_str_eq(buf, "0-0");
    stream_id id = {5, UINT64_MAX};
    ck_assert_int_eq(stream_id_incr(&id), K_OK);
    ck_assert(id.ms == 6 && id.seq == 0);
    ck_assert_int_eq(stream_id_decr(&id), K_OK);
    ck_assert(id.ms == 5 && id.seq == UINT64_MAX);
    id = STREAM_ID_MAX;
    ck_assert_int_eq(stream_id_incr(&id), K_ERR);
    ck_assert(stream_id_cmp(id, STREAM_ID_MAX) == 0);
    id = STREAM_ID_MIN;
    ck_assert_int_eq(stream_id_decr(&id), K_ERR);
    ck_assert(stream_id_cmp(id, STREAM_ID_MIN) == 0);
    ck_assert_int_lt(stream_id_cmp((stream_id){1, 9}, (stream_id){2, 0}), 0);
    ck_assert_int_gt(stream_id_cmp((stream_id){2, 1}, (stream_id){2, 0}), 0);
}
END_TEST

/* ---- helpers ---- */

static int add(kobj *o, stream_id id, const char *const *strs, size_t npairs) {
    stream_str elems[16];
    for (size_t i = 0; i < 2 * npairs; i++)
        elems[i] = (stream_str){strs[i], strlen(strs[i])};
    stream_add a = {.elems = elems, .npairs = npairs, .id = id, .id_given = 1, .seq_given = 1};
    stream_id got;
    int too_large;
    int rc = stream_append(o, &a, &got, &too_large);
    if (rc == K_OK) ck_assert(stream_id_cmp(got, id) == 0);
    return rc;
}

static void add_fv(kobj *o, uint64_t ms, uint64_t seq) {
    const char *fv[] = {"f", "v"};
    ck_assert_int_eq(add(o, (stream_id){ms, seq}, fv, 1), K_OK);
}

static int pv_eq(const pack_val *v, const char *s, size_t len) {
    ck_assert_ptr_nonnull(v->s);
    return v->len == len && memcmp(v->s, s, len) == 0;
}

/* ---- nodes ---- */

START_TEST(test_node_max_entries) {
    kobj *o = stream_create();
    for (uint64_t i = 1; i <= 250; i++)
        add_fv(o, i, 0);
    ck_assert_uint_eq(stream_node_count(o), 3);
    opts.types.stream_node_max_entries = 1;
    add_fv(o, 251, 0);
    add_fv(o, 252, 0);
    ck_assert_uint_eq(stream_node_count(o), 5);
    obj_decref(o);

    /* 0: no limit by count (the bytes still close nodes). */
    opts.types.stream_node_max_entries = 0;
    opts.types.stream_node_max_bytes = 0;
    o = stream_create();
    for (uint64_t i = 1; i <= 5000; i++)
        add_fv(o, i, 0);
    ck_assert_uint_eq(stream_node_count(o), 1);
    ck_assert_uint_eq(stream_len(o), 5000);
    obj_decref(o);
}
END_TEST

START_TEST(test_node_max_bytes) {
    opts.types.stream_node_max_entries = 0;
    opts.types.stream_node_max_bytes = 100;
    kobj *o = stream_create();
    char val[40];
    memset(val, 'x', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    const char *fv[] = {"f", val};
    for (uint64_t i = 1; i <= 10; i++)
        ck_assert_int_eq(add(o, (stream_id){i, 0}, fv, 1), K_OK);
    /* Two 40-byte values fit under 100 bytes, a third would not. */
    ck_assert_uint_ge(stream_node_count(o), 4);
    ck_assert_uint_le(stream_node_count(o), 5);

    /* A value bigger than the node limit gets a node of its own. */
    size_t big = 100000;
    char *b = malloc(big + 1);
    memset(b, 'y', big);
    b[big] = '\0';
    const char *fb[] = {"big", b};
    uint64_t before = stream_node_count(o);
    ck_assert_int_eq(add(o, (stream_id){11, 0}, fb, 1), K_OK);
    ck_assert_int_eq(add(o, (stream_id){12, 0}, fv, 1), K_OK);
    ck_assert_uint_eq(stream_node_count(o), before + 2);
    stream_iter it;
    stream_id id;
    size_t npairs;
    stream_iter_start(&it, o, (stream_id){11, 0}, (stream_id){11, 0}, 0);
    ck_assert(stream_iter_next(&it, &id, &npairs));
    ck_assert_uint_eq(npairs, 1);
    pack_val f, v;
    stream_iter_pair(&it, &f, &v);
    ck_assert(pv_eq(&f, "big", 3));
    ck_assert(pv_eq(&v, b, big));
    ck_assert(!stream_iter_next(&it, &id, &npairs));
    stream_iter_stop(&it);
    free(b);
    obj_decref(o);
}
END_TEST

/* Entries whose fields differ from the node's first entry, and integer-
 * looking strings, read back byte for byte. */
START_TEST(test_fields) {
    kobj *o = stream_create();
    const char *a[] = {"f", "v"};
    const char *b[] = {"f", "1", "g", "-0"};
    const char *c[] = {"0001", "18446744073709551616", "", ""};
    const char *d[] = {"g", "12"};
    ck_assert_int_eq(add(o, (stream_id){1, 0}, a, 1), K_OK);
    ck_assert_int_eq(add(o, (stream_id){1, 1}, b, 2), K_OK);
    ck_assert_int_eq(add(o, (stream_id){1, 2}, c, 2), K_OK);
    ck_assert_int_eq(add(o, (stream_id){1, 3}, d, 1), K_OK);
    ck_assert_int_eq(add(o, (stream_id){2, 0}, a, 1), K_OK);
    const char *const *want[] = {a, b, c, d, a};
    size_t wantn[] = {1, 2, 2, 1, 1};
    for (int rev = 0; rev < 2; rev++) {
        stream_iter it;
        stream_id id;
        size_t npairs;
        stream_iter_start(&it, o, STREAM_ID_MIN, STREAM_ID_MAX, rev);
        for (int k = 0; k < 5; k++) {
            int i = rev ? 4 - k : k;
            ck_assert(stream_iter_next(&it, &id, &npairs));
            ck_assert_uint_eq(npairs, wantn[i]);
            for (size_t p = 0; p < npairs; p++) {
                pack_val f, v;
                stream_iter_pair(&it, &f, &v);
                ck_assert(pv_eq(&f, want[i][2 * p], strlen(want[i][2 * p])));
                ck_assert(pv_eq(&v, want[i][2 * p + 1], strlen(want[i][2 * p + 1])));
            }
        }
        ck_assert(!stream_iter_next(&it, &id, &npairs));
        stream_iter_stop(&it);
    }
    obj_decref(o);
}
END_TEST

/* ---- appending rules and metadata ---- */

START_TEST(test_append_ids) {
    kobj *o = stream_create();
    const char *fv[] = {"f", "v"};
    stream_str e[2] = {{"f", 1}, {"v", 1}};
    stream_id got;
    int too_large;
    /* "*" takes now, then the next sequence while the clock stands. */
    stream_add a = {.elems = e, .npairs = 1, .now_ms = 100};
    ck_assert_int_eq(stream_append(o, &a, &got, &too_large), K_OK);
    ck_assert(got.ms == 100 && got.seq == 0);
    a.now_ms = 99;
    ck_assert_int_eq(stream_append(o, &a, &got, &too_large), K_OK);
    ck_assert(got.ms == 100 && got.seq == 1);
    /* "100-*" continues the sequence; "200-*" starts at 0. */
    a = (stream_add){.elems = e, .npairs = 1, .id = {100, 0}, .id_given = 1};
    ck_assert_int_eq(stream_append(o, &a, &got, &too_large), K_OK);
    ck_assert(got.ms == 100 && got.seq == 2);
    a.id.ms = 200;
    ck_assert_int_eq(stream_append(o, &a, &got, &too_large), K_OK);
    ck_assert(got.ms == 200 && got.seq == 0);
    /* Equal or smaller: refused, nothing changes. */
    ck_assert_int_eq(add(o, (stream_id){200, 0}, fv, 1), K_ERR);
    ck_assert_int_eq(add(o, (stream_id){150, 0}, fv, 1), K_ERR);
    ck_assert_uint_eq(stream_len(o), 4);
    ck_assert_uint_eq(stream_entries_added(o), 4);
    /* The sequence cannot overflow. */
    ck_assert_int_eq(add(o, (stream_id){300, UINT64_MAX}, fv, 1), K_OK);
    a.id.ms = 300;
    ck_assert_int_eq(stream_append(o, &a, &got, &too_large), K_ERR);
    ck_assert(!too_large);
    ck_assert(stream_id_cmp(stream_last_id(o), (stream_id){300, UINT64_MAX}) == 0);
    obj_decref(o);
}
END_TEST

START_TEST(test_delete_meta) {
    kobj *o = stream_create();
    for (uint64_t i = 1; i <= 300; i++)
        add_fv(o, i, 0);
    ck_assert(stream_id_cmp(stream_first_id(o), (stream_id){1, 0}) == 0);
    ck_assert_int_eq(stream_delete(o, (stream_id){1, 0}), 1);
    ck_assert_int_eq(stream_delete(o, (stream_id){1, 0}), 0);
    ck_assert_int_eq(stream_delete(o, (stream_id){1000, 0}), 0);
    ck_assert(stream_id_cmp(stream_first_id(o), (stream_id){2, 0}) == 0);
    ck_assert(stream_id_cmp(stream_max_deleted_id(o), (stream_id){1, 0}) == 0);
    ck_assert_int_eq(stream_delete(o, (stream_id){300, 0}), 1);
    ck_assert(stream_id_cmp(stream_last_id(o), (stream_id){300, 0}) == 0);
    ck_assert(stream_id_cmp(stream_last_live_id(o), (stream_id){299, 0}) == 0);
    ck_assert(stream_id_cmp(stream_max_deleted_id(o), (stream_id){300, 0}) == 0);
    ck_assert_int_eq(stream_delete(o, (stream_id){5, 0}), 1);
    ck_assert(stream_id_cmp(stream_max_deleted_id(o), (stream_id){300, 0}) == 0);
    /* A node whose entries are all deleted goes. */
    uint64_t nodes = stream_node_count(o);
    for (uint64_t i = 101; i <= 200; i++)
        ck_assert_int_eq(stream_delete(o, (stream_id){i, 0}), 1);
    ck_assert_uint_eq(stream_node_count(o), nodes - 1);
    ck_assert_uint_eq(stream_len(o), 197);
    ck_assert(stream_has_entry(o, (stream_id){100, 0}));
    ck_assert(!stream_has_entry(o, (stream_id){150, 0}));
    /* Trimming leaves max_deleted_id alone; emptied, the stream keeps its
     * counters. */
    stream_trim_args t = {.strategy = STREAM_TRIM_MAXLEN, .maxlen = 0};
    ck_assert_uint_eq(stream_trim(o, &t), 197);
    ck_assert_uint_eq(stream_len(o), 0);
    ck_assert_uint_eq(stream_node_count(o), 0);
    ck_assert(stream_id_cmp(stream_first_id(o), STREAM_ID_MIN) == 0);
    ck_assert(stream_id_cmp(stream_max_deleted_id(o), (stream_id){300, 0}) == 0);
    ck_assert_uint_eq(stream_entries_added(o), 300);
    uint64_t ea = 500;
    stream_id md = {400, 0};
    stream_set_meta(o, (stream_id){400, 1}, &ea, &md);
    ck_assert_uint_eq(stream_entries_added(o), 500);
    ck_assert(stream_id_cmp(stream_last_id(o), (stream_id){400, 1}) == 0);
    ck_assert_int_eq(add(o, (stream_id){400, 1}, (const char *[]){"f", "v"}, 1), K_ERR);
    obj_decref(o);
}
END_TEST

START_TEST(test_trim_approx) {
    kobj *o = stream_create();
    for (uint64_t i = 1; i <= 1000; i++)
        add_fv(o, i, 0); /* 10 nodes of 100 */
    /* ~ removes whole nodes only: keeping 950 removes none past 900... */
    stream_trim_args t = {.strategy = STREAM_TRIM_MAXLEN, .approx = 1, .maxlen = 850};
    ck_assert_uint_eq(stream_trim(o, &t), 100);
    ck_assert_uint_eq(stream_len(o), 900);
    /* ... and LIMIT caps it in whole nodes. */
    t = (stream_trim_args){.strategy = STREAM_TRIM_MAXLEN, .approx = 1, .maxlen = 0, .limit = 250};
    ck_assert_uint_eq(stream_trim(o, &t), 200);
    /* MINID: exact flags entries inside the node. */
    t = (stream_trim_args){.strategy = STREAM_TRIM_MINID, .minid = {350, 0}};
    ck_assert_uint_eq(stream_trim(o, &t), 49);
    ck_assert(stream_id_cmp(stream_first_id(o), (stream_id){350, 0}) == 0);
    t.approx = 1;
    t.minid = (stream_id){450, 0};
    ck_assert_uint_eq(stream_trim(o, &t), 51);
    ck_assert(stream_id_cmp(stream_first_id(o), (stream_id){401, 0}) == 0);
    ck_assert_uint_eq(stream_approx_limit(), 10000);
    opts.types.stream_node_max_entries = 0;
    ck_assert_uint_eq(stream_approx_limit(), 10000);
    opts.types.stream_node_max_entries = 20000;
    ck_assert_uint_eq(stream_approx_limit(), 1000000);
    obj_decref(o);
}
END_TEST

/* ---- random operations against a model ---- */

typedef struct model_entry {
    stream_id id;
    int nf;  /* pairs */
    int tag; /* what the values are made of */
} model_entry;

static void model_values(const model_entry *m, char bufs[][24], const char **strs) {
    for (int i = 0; i < m->nf; i++) {
        snprintf(bufs[2 * i], 24, "%s%d", m->tag % 3 ? "f" : "field", i);
        snprintf(bufs[2 * i + 1], 24, "%d", m->tag * 7 + i);
        strs[2 * i] = bufs[2 * i];
        strs[2 * i + 1] = bufs[2 * i + 1];
    }
}

static void check_entry(stream_iter *it, const model_entry *m, stream_id id, size_t npairs) {
    ck_assert(stream_id_cmp(id, m->id) == 0);
    ck_assert_uint_eq(npairs, (size_t)m->nf);
    char bufs[8][24];
    const char *strs[8];
    model_values(m, bufs, strs);
    for (size_t p = 0; p < npairs; p++) {
        pack_val f, v;
        stream_iter_pair(it, &f, &v);
        ck_assert(pv_eq(&f, strs[2 * p], strlen(strs[2 * p])));
        ck_assert(pv_eq(&v, strs[2 * p + 1], strlen(strs[2 * p + 1])));
    }
}

static stream_id random_id(uint64_t top) {
    return (stream_id){(uint64_t)rand() % (top + 2), (uint64_t)rand() % 4};
}

static void check_range(kobj *o, const model_entry *model, size_t n, stream_id lo, stream_id hi,
                        int rev) {
    stream_iter it;
    stream_id id;
    size_t npairs;
    stream_iter_start(&it, o, lo, hi, rev);
    for (size_t k = 0; k < n; k++) {
        const model_entry *m = &model[rev ? n - 1 - k : k];
        if (stream_id_cmp(m->id, lo) < 0 || stream_id_cmp(m->id, hi) > 0) continue;
        ck_assert(stream_iter_next(&it, &id, &npairs));
        check_entry(&it, m, id, npairs);
    }
    ck_assert(!stream_iter_next(&it, &id, &npairs));
    stream_iter_stop(&it);
}

static void random_run(long long max_entries, unsigned long long max_bytes, unsigned seed) {
    opts.types.stream_node_max_entries = max_entries;
    opts.types.stream_node_max_bytes = max_bytes;
    srand(seed);
    kobj *o = stream_create();
    size_t cap = 20000, n = 0;
    model_entry *model = malloc(cap * sizeof(*model));
    uint64_t ms = 1;
    for (int step = 0; step < 20000; step++) {
        int op = rand() % 100;
        if (op < 60 && n < cap) {
            ms += (uint64_t)(rand() % 3);
            model_entry m = {{ms, (uint64_t)(rand() % 2 ? 0 : rand())}, 1 + rand() % 3, rand() % 100000};
            if (stream_id_cmp(m.id, stream_last_id(o)) <= 0) {
                m.id = stream_last_id(o);
                stream_id_incr(&m.id);
            }
            char bufs[8][24];
            const char *strs[8];
            model_values(&m, bufs, strs);
            ck_assert_int_eq(add(o, m.id, strs, (size_t)m.nf), K_OK);
            model[n++] = m;
        } else if (op < 80 && n) {
            size_t k = (size_t)rand() % n;
            ck_assert_int_eq(stream_delete(o, model[k].id), 1);
            memmove(model + k, model + k + 1, (n - k - 1) * sizeof(*model));
            n--;
        } else if (op < 83) {
            /* Exact MAXLEN, sometimes MINID. */
            stream_trim_args t = {0};
            if (rand() % 2) {
                t.strategy = STREAM_TRIM_MAXLEN;
                t.maxlen = n ? (uint64_t)rand() % (n + 1) : 0;
                uint64_t got = stream_trim(o, &t);
                ck_assert_uint_eq(got, n - t.maxlen);
                memmove(model, model + got, (n - got) * sizeof(*model));
                n -= got;
            } else {
                t.strategy = STREAM_TRIM_MINID;
                t.minid = random_id(ms);
                size_t k = 0;
                while (k < n && stream_id_cmp(model[k].id, t.minid) < 0)
                    k++;
                ck_assert_uint_eq(stream_trim(o, &t), k);
                memmove(model, model + k, (n - k) * sizeof(*model));
                n -= k;
            }
        } else if (op < 85) {
            /* Approximate: whole nodes, the model follows the storage. */
            stream_trim_args t = {.strategy = STREAM_TRIM_MAXLEN, .approx = 1};
            t.maxlen = n ? (uint64_t)rand() % (n + 1) : 0;
            uint64_t got = stream_trim(o, &t);
            ck_assert_uint_ge(n - got, t.maxlen);
            if (got < n) ck_assert(stream_id_cmp(stream_first_id(o), model[got].id) == 0);
            memmove(model, model + got, (n - got) * sizeof(*model));
            n -= got;
        } else if (op < 95) {
            stream_id lo = random_id(ms), hi = random_id(ms);
            check_range(o, model, n, lo, hi, rand() % 2);
        } else {
            check_range(o, model, n, STREAM_ID_MIN, STREAM_ID_MAX, rand() % 2);
        }
        ck_assert_uint_eq(stream_len(o), n);
        stream_id first = n ? model[0].id : STREAM_ID_MIN;
        stream_id last = n ? model[n - 1].id : STREAM_ID_MIN;
        ck_assert(stream_id_cmp(stream_first_id(o), first) == 0);
        ck_assert(stream_id_cmp(stream_last_live_id(o), last) == 0);
    }
    check_range(o, model, n, STREAM_ID_MIN, STREAM_ID_MAX, 0);
    check_range(o, model, n, STREAM_ID_MIN, STREAM_ID_MAX, 1);
    /* A copy reads the same and is independent. */
    kobj *c = obj_copy(o);
    ck_assert_uint_eq(stream_len(c), n);
    check_range(c, model, n, STREAM_ID_MIN, STREAM_ID_MAX, 0);
    ck_assert_uint_eq(obj_mem_usage(c) > 0, 1);
    obj_decref(o);
    check_range(c, model, n, STREAM_ID_MIN, STREAM_ID_MAX, 1);
    obj_decref(c);
    free(model);
}

START_TEST(test_random_default) {
    random_run(100, 4096, 1);
}
END_TEST

START_TEST(test_random_small_nodes) {
    random_run(3, 0, 2);
    random_run(0, 60, 3);
}
END_TEST

START_TEST(test_random_unlimited) {
    random_run(0, 0, 4);
}
END_TEST

/* Deleting while walking backwards and forwards, nodes vanishing under
 * the iterator. */
START_TEST(test_iter_delete) {
    opts.types.stream_node_max_entries = 4;
    for (int rev = 0; rev < 2; rev++) {
        kobj *o = stream_create();
        for (uint64_t i = 1; i <= 40; i++)
            add_fv(o, i, 0);
        stream_iter it;
        stream_id id;
        size_t npairs;
        uint64_t seen = 0;
        stream_iter_start(&it, o, (stream_id){5, 0}, (stream_id){36, 0}, rev);
        while (stream_iter_next(&it, &id, &npairs)) {
            ck_assert_uint_eq(id.ms, rev ? 36 - seen : 5 + seen);
            seen++;
            stream_iter_delete(&it);
        }
        stream_iter_stop(&it);
        ck_assert_uint_eq(seen, 32);
        ck_assert_uint_eq(stream_len(o), 8);
        ck_assert_uint_eq(stream_node_count(o), 2);
        ck_assert(stream_id_cmp(stream_first_id(o), (stream_id){1, 0}) == 0);
        ck_assert(stream_id_cmp(stream_last_live_id(o), (stream_id){40, 0}) == 0);
        obj_decref(o);
    }
}
END_TEST

/* XDEL emptying nodes in the middle of a stream of 3000 one-entry nodes
 * (the index three levels deep): each goes from the index, the rest walk
 * the same both ways and a copy holds them all. */
START_TEST(test_delete_middle_nodes) {
    opts.types.stream_node_max_entries = 1;
    kobj *o = stream_create();
    for (uint64_t i = 1; i <= 3000; i++)
        add_fv(o, i, 0);
    ck_assert_uint_eq(stream_node_count(o), 3000);
    uint64_t left = 3000;
    for (uint64_t i = 1500; i <= 2500; i++, left--) {
        ck_assert_int_eq(stream_delete(o, (stream_id){i, 0}), 1);
        ck_assert_uint_eq(stream_node_count(o), left - 1);
    }
    for (uint64_t i = 1499; i >= 500; i -= 3, left--)
        ck_assert_int_eq(stream_delete(o, (stream_id){i, 0}), 1);
    kobj *c = obj_copy(o);
    for (int rev = 0; rev < 2; rev++) {
        stream_iter it;
        stream_id id, prev = rev ? STREAM_ID_MAX : STREAM_ID_MIN;
        size_t npairs;
        uint64_t seen = 0;
        stream_iter_start(&it, c, STREAM_ID_MIN, STREAM_ID_MAX, rev);
        while (stream_iter_next(&it, &id, &npairs)) {
            ck_assert_int_eq(stream_id_cmp(id, prev), rev ? -1 : 1);
            ck_assert(id.ms < 1500 || id.ms > 2500);
            prev = id;
            seen++;
        }
        stream_iter_stop(&it);
        ck_assert_uint_eq(seen, left);
    }
    ck_assert_uint_eq(stream_node_count(c), left);
    ck_assert_int_eq(stream_has_entry(o, (stream_id){2000, 0}), 0);
    ck_assert_int_eq(stream_has_entry(o, (stream_id){2501, 0}), 1);
    obj_decref(c);
    obj_decref(o);
}
END_TEST

static Suite *stream_suite(void) {
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("stream");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_id_parse);
    tcase_add_test(tc, test_id_format_incr_decr);
    tcase_add_test(tc, test_node_max_entries);
    tcase_add_test(tc, test_node_max_bytes);
    tcase_add_test(tc, test_fields);
    tcase_add_test(tc, test_append_ids);
    tcase_add_test(tc, test_delete_meta);
    tcase_add_test(tc, test_trim_approx);
    tcase_add_test(tc, test_random_default);
    tcase_add_test(tc, test_random_small_nodes);
    tcase_add_test(tc, test_random_unlimited);
    tcase_add_test(tc, test_iter_delete);
    tcase_add_test(tc, test_delete_middle_nodes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(stream_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
