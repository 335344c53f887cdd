/* check_list.c -- unit tests for core/types/list.c: the listpack and
 * quicklist encodings, each conversion boundary (by bytes and by count,
 * growing and shrinking with its hysteresis), plain nodes for large
 * elements, node splits and merges, copies, compression
 * (list-compress-depth), and 100k random operations per
 * list-max-listpack-size value and compress depth 0, 1 and 2 checked
 * against an array of strings, with the structure and the compression
 * verified after every operation. */
#include "types/list.h"

#include "common/strconv.h"
#include "keyspace_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_options opts;
static db_metrics stats;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 1, 0);
    opts.types.list_max_listpack_size = -2;
    list_type_setup();
    list_set_packed_threshold(0);
}

static void teardown(void) {
    list_set_packed_threshold(0);
    db_teardown();
}

static int fill(void) {
    return opts.types.list_max_listpack_size;
}

static const char *enc(const kobj *o) {
    return obj_encoding_name(o);
}

static void push_str(kobj *o, int where, const char *s) {
    list_push(o, where, s, strlen(s));
}

/* The element at index as a NUL-terminated string in buf. */
static const char *elem_at(const kobj *o, long long index, char *buf, size_t size) {
    pack_val v;
    if (!list_index(o, index, &v)) return NULL;
    if (!v.s) {
        ll_to_str(buf, v.v);
        return buf;
    }
    size_t n = v.len < size - 1 ? v.len : size - 1;
    memcpy(buf, v.s, n);
    buf[n] = '\0';
    return buf;
}

/* The list joined with ',' (small elements only). */
static const char *joined(const kobj *o) {
    static char out[4096];
    size_t n = 0;
    list_iter it;
    list_iter_init(&it, o, 0, LIST_TAIL);
    pack_val v;
    while (list_iter_next(&it, &v)) {
        if (n) out[n++] = ',';
        if (v.s) {
            memcpy(out + n, v.s, v.len);
            n += v.len;
        } else {
            n += ll_to_str(out + n, v.v);
        }
    }
    out[n] = '\0';
    return out;
}

START_TEST(test_basic_listpack) {
    kobj *o = list_new();
    ck_assert_str_eq(obj_type_name(o), "list");
    ck_assert_str_eq(enc(o), "listpack");
    push_str(o, LIST_TAIL, "b");
    push_str(o, LIST_TAIL, "12");
    push_str(o, LIST_HEAD, "a");
    ck_assert_uint_eq(list_len(o), 3);
    ck_assert_str_eq(joined(o), "a,b,12");
    char buf[64];
    ck_assert_str_eq(elem_at(o, 2, buf, sizeof(buf)), "12");
    ck_assert_ptr_null(elem_at(o, 3, buf, sizeof(buf)));
    ck_assert_ptr_null(elem_at(o, -1, buf, sizeof(buf)));
    ck_assert(list_set(o, 1, "B", 1));
    ck_assert(!list_set(o, 3, "x", 1));
    ck_assert(list_insert(o, "B", 1, 1, "c", 1));
    ck_assert(list_insert(o, "a", 1, 0, "0", 1));
    ck_assert(!list_insert(o, "zz", 2, 0, "q", 1));
    ck_assert_str_eq(joined(o), "0,a,B,c,12");
    ck_assert_uint_eq(list_remove(o, "B", 1, 0), 1);
    list_pop(o, LIST_HEAD, 1);
    list_pop(o, LIST_TAIL, 1);
    ck_assert_str_eq(joined(o), "a,c");
    /* Backward walk. */
    list_iter it;
    list_iter_init(&it, o, 1, LIST_HEAD);
    pack_val v;
    ck_assert(list_iter_next(&it, &v) && list_val_eq(&v, "c", 1));
    ck_assert(list_iter_next(&it, &v) && list_val_eq(&v, "a", 1));
    ck_assert(!list_iter_next(&it, &v));
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(list_node_count(o), 1);
    obj_decref(o);
}
END_TEST

/* By count: N entries stay a listpack, N+1 convert; popping converts back
 * only at N/2. */
START_TEST(test_count_boundary) {
    opts.types.list_max_listpack_size = 6;
    kobj *o = list_new();
    for (int i = 0; i < 6; i++)
        push_str(o, LIST_TAIL, "x");
    ck_assert_str_eq(enc(o), "listpack");
    push_str(o, LIST_TAIL, "y");
    ck_assert_str_eq(enc(o), "quicklist");
    ck_assert_uint_eq(list_node_count(o), 2);
    ck_assert(list_verify(o, fill()));
    list_pop(o, LIST_TAIL, 1); /* one node of 6 */
    ck_assert_str_eq(enc(o), "quicklist");
    list_pop(o, LIST_TAIL, 2); /* 4 > 6/2 */
    ck_assert_str_eq(enc(o), "quicklist");
    list_pop(o, LIST_TAIL, 1); /* 3 <= 6/2 */
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(list_len(o), 3);
    obj_decref(o);
}
END_TEST

/* LSET and LINSERT convert where Valkey does: a replace counts as an
 * addition, and LINSERT decides before it looks for the pivot. */
START_TEST(test_set_insert_boundary) {
    opts.types.list_max_listpack_size = 3;
    kobj *o = list_new();
    for (int i = 0; i < 3; i++)
        push_str(o, LIST_TAIL, "x");
    ck_assert(list_set(o, 0, "y", 1));
    ck_assert_str_eq(enc(o), "quicklist");
    ck_assert(list_verify(o, fill()));
    obj_decref(o);
    o = list_new();
    for (int i = 0; i < 3; i++)
        push_str(o, LIST_TAIL, "x");
    ck_assert(!list_insert(o, "nope", 4, 0, "y", 1));
    ck_assert_str_eq(enc(o), "quicklist");
    ck_assert(list_insert(o, "x", 1, 0, "y", 1));
    ck_assert_str_eq(joined(o), "y,x,x,x");
    ck_assert(list_verify(o, fill()));
    obj_decref(o);
    /* 0 counts as 1: every element in a node of its own. */
    opts.types.list_max_listpack_size = 0;
    o = list_new();
    push_str(o, LIST_TAIL, "a");
    ck_assert_str_eq(enc(o), "listpack");
    push_str(o, LIST_TAIL, "b");
    push_str(o, LIST_HEAD, "c");
    ck_assert_uint_eq(list_node_count(o), 3);
    ck_assert(list_verify(o, fill()));
    /* Below -5 counts as -5 (64 KiB). */
    opts.types.list_max_listpack_size = -100;
    kobj *big = list_new();
    char elem[1000];
    memset(elem, 'b', sizeof(elem));
    for (int i = 0; i < 60; i++)
        list_push(big, LIST_TAIL, elem, sizeof(elem));
    ck_assert_str_eq(enc(big), "listpack");
    for (int i = 0; i < 10; i++)
        list_push(big, LIST_TAIL, elem, sizeof(elem));
    ck_assert_str_eq(enc(big), "quicklist");
    obj_decref(big);
    obj_decref(o);
}
END_TEST

/* By bytes: -1 is 4096 bytes a node. */
START_TEST(test_bytes_boundary) {
    opts.types.list_max_listpack_size = -1;
    kobj *o = list_new();
    char elem[100];
    memset(elem, 'a', sizeof(elem));
    size_t pushed = 0;
    while (pack_bytes((const pack *)o->v.ptr) + pack_entry_size(elem, sizeof(elem)) <= 4096) {
        list_push(o, LIST_TAIL, elem, sizeof(elem));
        pushed++;
        ck_assert_str_eq(enc(o), "listpack");
    }
    list_push(o, LIST_TAIL, elem, sizeof(elem));
    ck_assert_str_eq(enc(o), "quicklist");
    ck_assert_uint_eq(list_node_count(o), 2);
    ck_assert(list_verify(o, fill()));
    /* Back to a listpack only under 2048 bytes in one node. */
    list_pop(o, LIST_HEAD, pushed / 2 - 2);
    ck_assert_str_eq(enc(o), "quicklist");
    list_pop(o, LIST_HEAD, 6);
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert(list_verify(o, fill()));
    obj_decref(o);
}
END_TEST

/* Elements over the node limit live in plain nodes. */
START_TEST(test_plain_nodes) {
    static const int fills[] = {-2, 5};
    for (size_t f = 0; f < 2; f++) {
        opts.types.list_max_listpack_size = fills[f];
        size_t big = fills[f] < 0 ? 8193 : 8193;
        char *s = malloc(big);
        memset(s, 'z', big);
        kobj *o = list_new();
        push_str(o, LIST_TAIL, "a");
        list_push(o, LIST_TAIL, s, big);
        ck_assert_str_eq(enc(o), "quicklist");
        push_str(o, LIST_TAIL, "b");
        ck_assert_uint_eq(list_node_count(o), 3);
        ck_assert(list_verify(o, fill()));
        /* A large insert in the middle of a packed node splits it. */
        push_str(o, LIST_HEAD, "0");
        ck_assert(list_insert(o, "0", 1, 1, s, big));
        ck_assert_uint_eq(list_len(o), 5);
        ck_assert(list_verify(o, fill()));
        /* Replacing a plain element with a small one, and back. */
        ck_assert(list_set(o, 1, "small", 5));
        ck_assert(list_verify(o, fill()));
        ck_assert(list_set(o, 0, s, big));
        ck_assert(list_verify(o, fill()));
        pack_val v;
        ck_assert(list_index(o, 0, &v) && v.len == big);
        ck_assert(list_index(o, 1, &v) && list_val_eq(&v, "small", 5));
        ck_assert_uint_eq(list_remove(o, s, big, 0), 2);
        ck_assert(list_verify(o, fill()));
        ck_assert_str_eq(joined(o), "small,a,b");
        obj_decref(o);
        free(s);
    }
}
END_TEST

START_TEST(test_packed_threshold) {
    ck_assert(!list_set_packed_threshold((1ull << 32)));
    ck_assert(list_set_packed_threshold(10));
    kobj *o = list_new();
    push_str(o, LIST_TAIL, "short");
    push_str(o, LIST_TAIL, "0123456789");
    ck_assert_str_eq(enc(o), "quicklist");
    ck_assert_uint_eq(list_node_count(o), 2);
    ck_assert(list_verify(o, fill()));
    obj_decref(o);
}
END_TEST

/* Inserting into a full node splits it; deleting lets neighbours merge. */
START_TEST(test_split_merge) {
    opts.types.list_max_listpack_size = 4;
    kobj *o = list_new();
    char buf[16];
    for (int i = 0; i < 12; i++) {
        snprintf(buf, sizeof(buf), "e%d", i);
        push_str(o, LIST_TAIL, buf);
    }
    ck_assert_uint_eq(list_node_count(o), 3);
    ck_assert(list_insert(o, "e1", 2, 1, "mid", 3)); /* e0 e1 | mid | e2 e3 or merged */
    ck_assert(list_verify(o, fill()));
    ck_assert_uint_eq(list_node_count(o), 4);
    ck_assert_str_eq(joined(o), "e0,e1,mid,e2,e3,e4,e5,e6,e7,e8,e9,e10,e11");
    /* Emptying most of two neighbouring nodes merges them. */
    list_delete_range(o, 0, 3);
    ck_assert(list_verify(o, fill()));
    ck_assert_str_eq(joined(o), "e2,e3,e4,e5,e6,e7,e8,e9,e10,e11");
    size_t nodes = list_node_count(o);
    ck_assert_uint_eq(list_remove(o, "e4", 2, 1) + list_remove(o, "e5", 2, 1), 2);
    ck_assert(list_verify(o, fill()));
    ck_assert_uint_lt(list_node_count(o), nodes);
    ck_assert_str_eq(joined(o), "e2,e3,e6,e7,e8,e9,e10,e11");
    /* Inserts at node edges go to the neighbour with room. */
    ck_assert(list_insert(o, "e3", 2, 1, "x", 1));
    ck_assert(list_verify(o, fill()));
    ck_assert_str_eq(joined(o), "e2,e3,x,e6,e7,e8,e9,e10,e11");
    obj_decref(o);
}
END_TEST

START_TEST(test_copy_and_usage) {
    opts.types.list_max_listpack_size = 3;
    kobj *o = list_new();
    for (int i = 0; i < 10; i++)
        push_str(o, LIST_TAIL, i % 2 ? "odd" : "1234");
    kobj *c = obj_copy(o);
    ck_assert_str_eq(joined(c), joined(o));
    ck_assert_str_eq(enc(c), "quicklist");
    ck_assert(list_verify(c, fill()));
    ck_assert_uint_eq(list_node_count(c), list_node_count(o));
    ck_assert_uint_eq(obj_type_of(o)->free_effort(o), list_node_count(o));
    ck_assert_uint_gt(obj_mem_usage(o), 10 * 4);
    list_pop(c, LIST_HEAD, 10);
    ck_assert_uint_eq(list_len(o), 10);
    obj_decref(c);
    kobj *small = list_new();
    push_str(small, LIST_TAIL, "a");
    kobj *sc = obj_copy(small);
    ck_assert_str_eq(enc(sc), "listpack");
    ck_assert_str_eq(joined(sc), "a");
    obj_decref(sc);
    obj_decref(small);
    obj_decref(o);
}
END_TEST

/* ---- the random model ---- */

typedef struct model {
    char **s;
    size_t *len;
    size_t n, cap;
} model;

static void model_insert(model *m, size_t at, const char *s, size_t len) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->s = realloc(m->s, m->cap * sizeof(*m->s));
        m->len = realloc(m->len, m->cap * sizeof(*m->len));
    }
    memmove(m->s + at + 1, m->s + at, (m->n - at) * sizeof(*m->s));
    memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof(*m->len));
    m->s[at] = malloc(len ? len : 1);
    memcpy(m->s[at], s, len);
    m->len[at] = len;
    m->n++;
}

static void model_delete(model *m, size_t at) {
    free(m->s[at]);
    memmove(m->s + at, m->s + at + 1, (m->n - at - 1) * sizeof(*m->s));
    memmove(m->len + at, m->len + at + 1, (m->n - at - 1) * sizeof(*m->len));
    m->n--;
}

static void model_free(model *m) {
    while (m->n)
        model_delete(m, m->n - 1);
    free(m->s);
    free(m->len);
}

static long long model_find(const model *m, const char *s, size_t len) {
    for (size_t i = 0; i < m->n; i++)
        if (m->len[i] == len && memcmp(m->s[i], s, len) == 0) return (long long)i;
    return -1;
}

/* A random element: mostly short strings from a small set (so that
 * LINSERT and LREM find them), integers, and now and then a large one. */
static size_t random_elem(char *buf, size_t size) {
    int r = rand() % 100;
    if (r < 55) return (size_t)snprintf(buf, size, "v%d", rand() % 40);
    if (r < 80) return (size_t)snprintf(buf, size, "%d", rand() % 2000 - 1000);
    if (r < 97) {
        size_t n = (size_t)(rand() % 300);
        memset(buf, 'a' + rand() % 3, n);
        return n;
    }
    size_t n = 3000 + (size_t)(rand() % 7000);
    memset(buf, 'A' + rand() % 2, n);
    return n;
}

static void model_check(const model *m, const kobj *o) {
    ck_assert_uint_eq(list_len(o), m->n);
    list_iter it;
    list_iter_init(&it, o, 0, LIST_TAIL);
    pack_val v;
    for (size_t i = 0; i < m->n; i++) {
        ck_assert(list_iter_next(&it, &v));
        ck_assert_msg(list_val_eq(&v, m->s[i], m->len[i]), "element %zu differs", i);
    }
    ck_assert(!list_iter_next(&it, &v));
    if (m->n) {
        list_iter_init(&it, o, (long long)m->n - 1, LIST_HEAD);
        for (size_t i = m->n; i-- > 0;) {
            ck_assert(list_iter_next(&it, &v));
            ck_assert(list_val_eq(&v, m->s[i], m->len[i]));
        }
    }
}

static void random_op(model *m, kobj *o, char *buf, size_t size) {
    size_t len = random_elem(buf, size);
    int op = rand() % 100;
    if (op < 30 || m->n == 0) {
        int where = rand() % 2 ? LIST_HEAD : LIST_TAIL;
        list_push(o, where, buf, len);
        model_insert(m, where == LIST_HEAD ? 0 : m->n, buf, len);
    } else if (op < 45) {
        int where = rand() % 2 ? LIST_HEAD : LIST_TAIL;
        size_t k = 1 + (size_t)(rand() % 3);
        list_pop(o, where, k);
        for (size_t i = 0; i < k && m->n; i++)
            model_delete(m, where == LIST_HEAD ? 0 : m->n - 1);
    } else if (op < 55) {
        size_t at = (size_t)rand() % m->n;
        ck_assert(list_set(o, (long long)at, buf, len));
        model_delete(m, at);
        model_insert(m, at, buf, len);
    } else if (op < 70) {
        /* LINSERT around the first match of an existing element. */
        size_t pick = (size_t)rand() % m->n;
        char *pivot = malloc(m->len[pick] ? m->len[pick] : 1);
        size_t plen = m->len[pick];
        memcpy(pivot, m->s[pick], plen);
        int after = rand() % 2;
        ck_assert(list_insert(o, pivot, plen, after, buf, len));
        long long at = model_find(m, pivot, plen);
        model_insert(m, (size_t)at + (size_t)after, buf, len);
        free(pivot);
    } else if (op < 80) {
        size_t pick = (size_t)rand() % m->n;
        char *val = malloc(m->len[pick] ? m->len[pick] : 1);
        size_t vlen = m->len[pick];
        memcpy(val, m->s[pick], vlen);
        long long count = rand() % 5 - 2;
        size_t removed = list_remove(o, val, vlen, count);
        size_t want = count < 0 ? (size_t)-count : (size_t)count, done = 0;
        if (count >= 0) {
            for (size_t i = 0; i < m->n && (!want || done < want);)
                if (m->len[i] == vlen && memcmp(m->s[i], val, vlen) == 0) {
                    model_delete(m, i);
                    done++;
                } else {
                    i++;
                }
        } else {
            for (size_t i = m->n; i-- > 0 && done < want;)
                if (m->len[i] == vlen && memcmp(m->s[i], val, vlen) == 0) {
                    model_delete(m, i);
                    done++;
                }
        }
        ck_assert_uint_eq(removed, done);
        free(val);
    } else if (op < 84) {
        /* LTRIM-like: drop a few from either end. */
        size_t head = (size_t)rand() % 4, tail = (size_t)rand() % 4;
        if (head + tail > m->n) head = tail = 0;
        list_delete_range(o, (long long)(m->n - tail), (long long)tail);
        list_delete_range(o, 0, (long long)head);
        for (size_t i = 0; i < tail; i++)
            model_delete(m, m->n - 1);
        for (size_t i = 0; i < head; i++)
            model_delete(m, 0);
    } else if (op < 87) {
        /* A range out of the middle. */
        size_t start = (size_t)rand() % m->n, k = (size_t)(rand() % 20);
        list_delete_range(o, (long long)start, (long long)k);
        for (size_t i = 0; i < k && start < m->n; i++)
            model_delete(m, start);
    } else {
        /* Reads: index, and a short range from a random start. */
        size_t at = (size_t)rand() % m->n;
        pack_val v;
        ck_assert(list_index(o, (long long)at, &v));
        ck_assert(list_val_eq(&v, m->s[at], m->len[at]));
        list_iter it;
        list_iter_init(&it, o, (long long)at, rand() % 2 ? LIST_TAIL : LIST_HEAD);
        int dir = it.dir;
        for (size_t i = 0; i < 10; i++) {
            size_t idx = dir == LIST_TAIL ? at + i : at - i;
            if (idx >= m->n) {
                ck_assert(!list_iter_next(&it, &v));
                break;
            }
            ck_assert(list_iter_next(&it, &v));
            ck_assert(list_val_eq(&v, m->s[idx], m->len[idx]));
            if (dir == LIST_HEAD && idx == 0) {
                ck_assert(!list_iter_next(&it, &v));
                break;
            }
        }
    }
}

/* list-compress-depth 1: every inner node of compressible elements is
 * compressed, the ends are not; MEMORY USAGE drops; a copy keeps the
 * elements and the compression; depth 0 set later leaves nodes raw as they
 * are read, and depth 2 then applies to the nodes a write touches. */
START_TEST(test_compress_depth) {
    char big[500];
    memset(big, 'x', sizeof(big));
    kobj *plain = list_new(), *o = list_new();
    for (int i = 0; i < 200; i++)
        list_push(plain, LIST_TAIL, big, sizeof(big));
    opts.types.list_compress_depth = 1;
    for (int i = 0; i < 200; i++) {
        big[0] = (char)('a' + i % 26);
        list_push(o, LIST_TAIL, big, sizeof(big));
    }
    list_ql_info qi;
    ck_assert(list_quicklist_info(o, &qi));
    ck_assert_uint_gt(qi.nodes, 10);
    ck_assert_uint_eq(qi.compressed_nodes, qi.nodes - 2);
    ck_assert_uint_eq(qi.count, 200);
    ck_assert(list_verify(o, fill()) && list_verify_compression(o, 1));
    ck_assert_uint_lt(obj_mem_usage(o) * 3, obj_mem_usage(plain));

    kobj *c = obj_copy(o);
    ck_assert(list_quicklist_info(c, &qi) && qi.compressed_nodes == qi.nodes - 2);
    ck_assert(list_verify(c, fill()) && list_verify_compression(c, 1));
    pack_val v;
    for (int i = 0; i < 200; i++) {
        big[0] = (char)('a' + i % 26);
        ck_assert(list_index(c, i, &v) && list_val_eq(&v, big, sizeof(big)));
    }
    obj_decref(c);

    /* Depth 0: a walk leaves what it decompresses raw. */
    opts.types.list_compress_depth = 0;
    list_iter it;
    list_iter_init(&it, o, 0, LIST_TAIL);
    while (list_iter_next(&it, &v))
        ck_assert_uint_eq(v.len, sizeof(big));
    ck_assert(list_verify_compression(o, 0));
    ck_assert(list_quicklist_info(o, &qi) && qi.compressed_nodes == 0);

    /* Depth 2: a push that makes a node compresses the node pushed
     * inwards past the depth; a node a write touches is compressed. */
    opts.types.list_compress_depth = 2;
    for (int i = 0; i < 20; i++)
        list_push(o, LIST_HEAD, big, sizeof(big));
    ck_assert(list_quicklist_info(o, &qi));
    ck_assert_uint_ge(qi.compressed_nodes, 1);
    ck_assert(list_set(o, 100, "y", 1));
    ck_assert(list_index(o, 100, &v) && list_val_eq(&v, "y", 1));
    ck_assert(list_verify(o, fill()));
    obj_decref(o);
    obj_decref(plain);
    opts.types.list_compress_depth = 0;
}
END_TEST

/* A quicklist's nodes are estimated from `samples` of them: a first node
 * of small elements makes a one-node estimate low, a sample of all nodes
 * is exact, and the default is OBJ_MEM_SAMPLES. */
START_TEST(test_usage_samples) {
    opts.types.list_max_listpack_size = 2;
    kobj *o = list_new();
    push_str(o, LIST_TAIL, "a");
    push_str(o, LIST_TAIL, "b");
    char big[1000];
    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 100; i++)
        list_push(o, LIST_TAIL, big, sizeof(big));
    ck_assert_uint_eq(list_node_count(o), 51);
    size_t all = obj_mem_usage_sampled(o, OBJ_MEM_ALL_SAMPLES);
    size_t one = obj_mem_usage_sampled(o, 1);
    ck_assert_uint_gt(all, 100 * sizeof(big));
    ck_assert_uint_lt(one, 51 * 100);
    ck_assert_uint_eq(obj_mem_usage_sampled(o, 51), all);
    ck_assert_uint_eq(obj_mem_usage(o), obj_mem_usage_sampled(o, OBJ_MEM_SAMPLES));
    ck_assert_uint_gt(obj_mem_usage(o), one);
    ck_assert_uint_lt(obj_mem_usage(o), all);
    obj_decref(o);
}
END_TEST

static const int model_fills[] = {-2, -1, -5, 1, 3, 16, 128};
#define MODEL_FILLS ((int)(sizeof(model_fills) / sizeof(model_fills[0])))

/* Loop i: fill model_fills[i % MODEL_FILLS], compress depth i / MODEL_FILLS
 * (0, 1, 2); with a depth the compression is checked after every step and a
 * copy of the list now and then. */
START_TEST(test_random_model) {
    opts.types.list_max_listpack_size = model_fills[_i % MODEL_FILLS];
    size_t depth = (size_t)(_i / MODEL_FILLS);
    opts.types.list_compress_depth = (int)depth;
    srand(1234 + (unsigned)_i);
    char *buf = malloc(16384);
    model m = {0};
    kobj *o = list_new();
    for (int step = 0; step < 100000; step++) {
        random_op(&m, o, buf, 16384);
        ck_assert_msg(list_verify(o, fill()), "structure broken at step %d", step);
        ck_assert_msg(list_verify_compression(o, depth), "compression wrong at step %d", step);
        if (depth && step % 5000 == 0) {
            kobj *c = obj_copy(o);
            ck_assert(list_verify(c, fill()) && list_verify_compression(c, depth));
            model_check(&m, c);
            obj_decref(c);
        }
        /* Keep the list in a range where both encodings occur. */
        if (m.n > 600) {
            list_pop(o, LIST_HEAD, 300);
            for (int i = 0; i < 300; i++)
                model_delete(&m, 0);
        }
        if (step % 500 == 0) model_check(&m, o);
    }
    model_check(&m, o);
    obj_decref(o);
    model_free(&m);
    free(buf);
    opts.types.list_compress_depth = 0;
}
END_TEST

int main(void) {
    Suite *s = suite_create("list");
    TCase *tc = tcase_create("list");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_basic_listpack);
    tcase_add_test(tc, test_count_boundary);
    tcase_add_test(tc, test_bytes_boundary);
    tcase_add_test(tc, test_set_insert_boundary);
    tcase_add_test(tc, test_plain_nodes);
    tcase_add_test(tc, test_packed_threshold);
    tcase_add_test(tc, test_split_merge);
    tcase_add_test(tc, test_copy_and_usage);
    tcase_add_test(tc, test_usage_samples);
    tcase_add_test(tc, test_compress_depth);
    tcase_add_loop_test(tc, test_random_model, 0, 3 * MODEL_FILLS);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
