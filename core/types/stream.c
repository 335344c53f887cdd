/* stream.c -- the stream value's entry storage (see stream.h): entries
 * grouped in nodes, the sorted index of the nodes, appending, iteration,
 * deletion, trimming, XSETID's checks, and the type's operations.
 *
 * Layout (Keel's own). A node is one allocation: a fixed header (its
 * master ID, the last ID it holds, its live and deleted entry counts) and
 * a byte buffer: the master fields (the field names of the node's first
 * entry, each a varint length and the bytes), then the entries back to
 * back. An entry is
 *
 *     flags | ms - master.ms | seq part | [npairs | field value ...] | back
 *
 * where the numbers are LEB128 varints, the seq part is seq - master.seq
 * when the entry shares the master's ms and seq itself otherwise (both
 * non-negative: IDs grow), SAME in flags says the entry has the master's
 * fields (then only the values follow, one varint length and the bytes
 * each), and `back` is the entry's length up to it, a varint written
 * backwards so that a reverse walk finds the entry's start from its end.
 * A small entry with the master's fields (`XADD s * f v`) costs six bytes.
 *
 * Like Valkey, a deleted entry is only flagged (its bytes stay, so no
 * offset moves under an iterator) and a node whose entries are all deleted
 * is freed. The index is a ds/idmap B+tree keyed by the nodes' master
 * IDs: a lookup, an append at the tail, a trim at the head and the removal
 * of any emptied node are O(log n), and a growing stream keeps its leaves
 * full (about 25 bytes a node, a fraction of a byte an entry).
 *
 * A node is closed (no more appends) when it holds stream-node-max-entries
 * entries, deleted ones included, or when the next entry's bytes would
 * reach stream-node-max-bytes, Valkey's rules (0: no limit); an entry
 * bigger than the limit gets a node of its own. A closed node is shrunk
 * to its size.
 *
 * Threads: main thread; free_value touches only the value's own memory
 * (the lazy-free thread may run it). */
#include "types/stream.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "ds/idmap.h"
#include "ds/varint.h"
#include "keyspace/db.h"

#include <assert.h>
#include <string.h>

/* ---- IDs ---- */

int stream_id_incr(stream_id *id) {
    if (id->seq != UINT64_MAX) {
        id->seq++;
    } else if (id->ms != UINT64_MAX) {
        id->ms++;
        id->seq = 0;
    } else {
        return K_ERR;
    }
    return K_OK;
}

int stream_id_decr(stream_id *id) {
    if (id->seq != 0) {
        id->seq--;
    } else if (id->ms != 0) {
        id->ms--;
        id->seq = UINT64_MAX;
    } else {
        return K_ERR;
    }
    return K_OK;
}

/* Decimal digits fitting u64, after what Valkey's strtoull fallback also
 * takes: leading white space, a '+' and leading zeros (" +7" is 7; a '-'
 * is refused, where strtoull would wrap it around). */
static int parse_u64(const char *s, size_t len, uint64_t *out) {
    size_t i = 0;
    while (i < len && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')))
        i++;
    if (i < len && s[i] == '+') i++;
    if (i == len) return K_ERR;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return K_ERR;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return K_ERR;
        v = v * 10 + d;
    }
    *out = v;
    return K_OK;
}

/* Valkey reads an ID through a 128-byte buffer: longer text is invalid. */
#define STREAM_ID_TEXT_MAX 127

int stream_id_parse(const char *s, size_t len, uint64_t missing_seq, int allow_minmax,
                    stream_id *out, int *seq_given) {
    if (seq_given) *seq_given = 1;
    if (len > STREAM_ID_TEXT_MAX) return K_ERR;
    if (len == 1 && (s[0] == '-' || s[0] == '+')) {
        if (!allow_minmax) return K_ERR;
        *out = s[0] == '-' ? STREAM_ID_MIN : STREAM_ID_MAX;
        return K_OK;
    }
    const char *dash = memchr(s, '-', len);
    stream_id id;
    size_t mslen = dash ? (size_t)(dash - s) : len;
    if (parse_u64(s, mslen, &id.ms) != K_OK) return K_ERR;
    if (dash) {
        if (parse_u64(dash + 1, len - mslen - 1, &id.seq) != K_OK) return K_ERR;
    } else {
        id.seq = missing_seq;
        if (seq_given) *seq_given = 0;
    }
    *out = id;
    return K_OK;
}

size_t stream_id_format(char *buf, stream_id id) {
    size_t n = ull_to_str(buf, id.ms);
    buf[n++] = '-';
    n += ull_to_str(buf + n, id.seq);
    buf[n] = '\0';
    return n;
}

/* ---- varints (ds/varint.h) at a node's offsets ---- */

/* Reads the varint at p[*off] and moves *off past it. */
static uint64_t off_varint_get(const unsigned char *p, uint32_t *off) {
    size_t n;
    uint64_t v = varint_get(p + *off, &n);
    *off += (uint32_t)n;
    return v;
}

/* ---- nodes ---- */

#define ENTRY_DELETED 0x1
#define ENTRY_SAME 0x2

typedef struct snode {
    stream_id master; /* the first entry's ID: the deltas' base */
    stream_id last;   /* the last entry's ID, deleted or not */
    uint32_t live;    /* entries not deleted */
    uint32_t deleted;
    uint32_t used;    /* bytes of data in use */
    uint32_t cap;     /* bytes of data allocated */
    uint32_t first;   /* offset of the first entry: the master fields end */
    uint32_t nfields; /* master fields */
    unsigned char data[];
} snode;

typedef struct stream {
    idmap index;       /* master ID -> snode */
    size_t node_bytes; /* km_usable of every node */
    uint64_t length;
    uint64_t entries_added;
    stream_id last_id, max_deleted_id;
    /* The first live entry's ID, computed when asked after a deletion
     * (the lag accounting asks often; deletions at the head leave flagged
     * entries to skip). */
    stream_id first_id;
    int first_known;
    void *groups;
} stream;

static const stream_cgroup_ops *cg_ops;

void stream_set_cgroup_ops(const stream_cgroup_ops *ops) {
    cg_ops = ops;
}

static stream *sget(const kobj *o) {
    return (stream *)(void *)o->v.ptr;
}

static snode *node_alloc(stream *s, uint32_t cap) {
    snode *n = km_alloc(sizeof(*n) + cap);
    memset(n, 0, sizeof(*n));
    n->cap = cap;
    s->node_bytes += km_usable(n);
    return n;
}

static snode *node_resize(stream *s, snode *n, uint32_t cap) {
    s->node_bytes -= km_usable(n);
    n = km_realloc(n, sizeof(*n) + cap);
    n->cap = cap;
    s->node_bytes += km_usable(n);
    return n;
}

static void node_free(stream *s, snode *n) {
    s->node_bytes -= km_usable(n);
    km_free(n);
}

/* ---- the index ---- */

static idmap_key index_key(stream_id id) {
    return (idmap_key){id.ms, id.seq};
}

static snode *index_node(const idmap_iter *it) {
    return idmap_iter_val(it);
}

/* The tail node (NULL when none); *it is left at it. */
static snode *index_last(const stream *s, idmap_iter *it) {
    idmap_seek_last(it, &s->index);
    return idmap_iter_valid(it) ? index_node(it) : NULL;
}

static snode *index_first(const stream *s) {
    idmap_iter it;
    idmap_seek_first(&it, &s->index);
    return idmap_iter_valid(&it) ? index_node(&it) : NULL;
}

/* Drops n from the index and frees it. */
static void index_remove(stream *s, snode *n) {
    idmap_delete(&s->index, index_key(n->master));
    node_free(s, n);
}

/* Positions *it at the last node whose master ID is <= id, or at the first
 * node when none is (the walk then starts there). */
static void index_find(idmap_iter *it, const stream *s, stream_id id) {
    idmap_seek_le(it, &s->index, index_key(id));
    if (!idmap_iter_valid(it)) idmap_seek_first(it, &s->index);
}

/* ---- reading an entry ---- */

/* An entry decoded up to its pairs. */
typedef struct entry_head {
    stream_id id;
    uint8_t flags;
    uint64_t npairs;
    uint32_t pairs; /* offset of its first field (or value, when SAME) */
} entry_head;

static void entry_read(const snode *n, uint32_t off, entry_head *e) {
    e->flags = n->data[off++];
    uint64_t dms = off_varint_get(n->data, &off);
    uint64_t seq = off_varint_get(n->data, &off);
    e->id.ms = n->master.ms + dms;
    e->id.seq = dms ? seq : n->master.seq + seq;
    e->npairs = (e->flags & ENTRY_SAME) ? n->nfields : off_varint_get(n->data, &off);
    e->pairs = off;
}

/* The offset past the entry at off (its back length included). */
static uint32_t entry_end(const snode *n, uint32_t off) {
    entry_head e;
    entry_read(n, off, &e);
    uint32_t p = e.pairs;
    uint64_t strings = (e.flags & ENTRY_SAME) ? e.npairs : 2 * e.npairs;
    for (uint64_t i = 0; i < strings; i++) {
        uint64_t len = off_varint_get(n->data, &p);
        p += (uint32_t)len;
    }
    /* The back length holds p - off; its size follows from it. */
    return p + (uint32_t)varint_len(p - off);
}

/* The offset of the entry that ends at end. */
static uint32_t entry_before(const snode *n, uint32_t end) {
    size_t bytes;
    uint64_t len = varint_back_get(n->data + end, VARINT_MAX, &bytes);
    return end - (uint32_t)bytes - (uint32_t)len;
}

/* ---- the value ---- */

kobj *stream_create(void) {
    stream *s = km_calloc(1, sizeof(*s));
    return obj_new_aggregate(OBJ_STREAM, OBJ_ENC_STREAM, s);
}

uint64_t stream_len(const kobj *o) {
    return sget(o)->length;
}

stream_id stream_last_id(const kobj *o) {
    return sget(o)->last_id;
}

stream_id stream_max_deleted_id(const kobj *o) {
    return sget(o)->max_deleted_id;
}

uint64_t stream_entries_added(const kobj *o) {
    return sget(o)->entries_added;
}

uint64_t stream_node_count(const kobj *o) {
    return idmap_count(&sget(o)->index);
}

void *stream_groups(const kobj *o) {
    return sget(o)->groups;
}

void stream_set_groups(kobj *o, void *groups) {
    sget(o)->groups = groups;
}

/* The first (or last) live entry's ID; 0 when the stream is empty. A node
 * always holds a live entry (an emptied one is freed), so the edge node
 * has it. */
static int stream_edge_id(const kobj *o, int last, stream_id *id) {
    stream_iter it;
    size_t npairs;
    stream_iter_start(&it, o, STREAM_ID_MIN, STREAM_ID_MAX, last);
    int found = stream_iter_next(&it, id, &npairs);
    stream_iter_stop(&it);
    return found;
}

stream_id stream_first_id(const kobj *o) {
    stream *s = sget(o);
    if (!s->first_known) {
        s->first_id = STREAM_ID_MIN;
        stream_edge_id(o, 0, &s->first_id);
        s->first_known = 1;
    }
    return s->first_id;
}

stream_id stream_last_live_id(const kobj *o) {
    stream_id id = STREAM_ID_MIN;
    stream_edge_id(o, 1, &id);
    return id;
}

/* ---- iteration ---- */

/* The iterator's state in stream_iter.opaque. */
typedef struct iter_state {
    idmap_iter node; /* the node walked: invalid past either end */
    uint32_t off;   /* forwards: the next entry's offset; backwards: the
                     * end of the next entry to read */
    uint32_t cur;   /* the current entry's offset */
    uint32_t pair;  /* stream_iter_pair's cursor in the entry */
    uint32_t field; /* its cursor in the master fields (SAME entries) */
    uint8_t same;
    uint8_t started; /* a node is being walked (off is valid) */
    uint8_t done;
} iter_state;

static_assert(sizeof(iter_state) <= sizeof(((stream_iter *)0)->opaque),
              "stream_iter.opaque holds the iterator's state");

static iter_state *ist(stream_iter *it) {
    return (iter_state *)(void *)it->opaque;
}

void stream_iter_start(stream_iter *it, const kobj *o, stream_id start, stream_id end, int rev) {
    it->o = o;
    it->start = start;
    it->end = end;
    it->rev = rev;
    iter_state *st = ist(it);
    memset(st, 0, sizeof(*st));
    const stream *s = sget(o);
    if (idmap_count(&s->index) == 0 || stream_id_cmp(start, end) > 0) {
        st->done = 1;
        return;
    }
    index_find(&st->node, s, rev ? end : start);
}

/* Positions the walk at the start of the current node in its direction,
 * or ends it when there is none left. */
static int iter_enter(stream_iter *it) {
    iter_state *st = ist(it);
    if (!idmap_iter_valid(&st->node)) return 0;
    const snode *n = index_node(&st->node);
    /* A node wholly outside the range ends the walk. */
    if (!it->rev && stream_id_cmp(n->master, it->end) > 0) return 0;
    if (it->rev && stream_id_cmp(n->last, it->start) < 0) return 0;
    st->off = it->rev ? n->used : n->first;
    st->started = 1;
    return 1;
}

static void iter_leave(stream_iter *it) {
    iter_state *st = ist(it);
    st->started = 0;
    if (it->rev)
        idmap_iter_prev(&st->node);
    else
        idmap_iter_next(&st->node);
}

int stream_iter_next(stream_iter *it, stream_id *id, size_t *npairs) {
    iter_state *st = ist(it);
    while (!st->done) {
        if (!st->started && !iter_enter(it)) break;
        const snode *n = index_node(&st->node);
        if (it->rev ? st->off == n->first : st->off == n->used) {
            iter_leave(it);
            continue;
        }
        uint32_t off = it->rev ? entry_before(n, st->off) : st->off;
        st->off = it->rev ? off : entry_end(n, off);
        entry_head e;
        entry_read(n, off, &e);
        if (e.flags & ENTRY_DELETED) continue;
        if (!it->rev) {
            if (stream_id_cmp(e.id, it->start) < 0) continue;
            if (stream_id_cmp(e.id, it->end) > 0) break;
        } else {
            if (stream_id_cmp(e.id, it->end) > 0) continue;
            if (stream_id_cmp(e.id, it->start) < 0) break;
        }
        st->cur = off;
        st->pair = e.pairs;
        st->field = 0;
        st->same = (e.flags & ENTRY_SAME) != 0;
        *id = e.id;
        *npairs = (size_t)e.npairs;
        return 1;
    }
    st->done = 1;
    return 0;
}

static void read_str(const snode *n, uint32_t *off, pack_val *v) {
    uint64_t len = off_varint_get(n->data, off);
    v->s = n->data + *off;
    v->len = (size_t)len;
    v->v = 0;
    *off += (uint32_t)len;
}

void stream_iter_pair(stream_iter *it, pack_val *field, pack_val *value) {
    iter_state *st = ist(it);
    const snode *n = index_node(&st->node);
    if (st->same)
        read_str(n, &st->field, field);
    else
        read_str(n, &st->pair, field);
    read_str(n, &st->pair, value);
}

void stream_iter_delete(stream_iter *it) {
    iter_state *st = ist(it);
    stream *s = sget(it->o);
    snode *n = index_node(&st->node);
    n->data[st->cur] |= ENTRY_DELETED;
    n->live--;
    n->deleted++;
    s->length--;
    s->first_known = 0;
    if (n->live) return;
    /* The node goes, and with it the index position: the walk goes on at
     * its neighbour in the direction, found again by its master ID. */
    idmap_key k = index_key(n->master);
    index_remove(s, n);
    st->started = 0;
    if (it->rev)
        idmap_seek_le(&st->node, &s->index, k);
    else
        idmap_seek_ge(&st->node, &s->index, k);
}

void stream_iter_stop(stream_iter *it) {
    K_UNUSED(it);
}

int stream_has_entry(const kobj *o, stream_id id) {
    stream_iter it;
    stream_id got;
    size_t npairs;
    stream_iter_start(&it, o, id, id, 0);
    int found = stream_iter_next(&it, &got, &npairs);
    stream_iter_stop(&it);
    return found;
}

/* ---- appending ---- */

static size_t node_max_entries(void) {
    long long v = db_opts()->types.stream_node_max_entries;
    return v > 0 ? (size_t)v : 0;
}

static size_t node_max_bytes(void) {
    unsigned long long v = db_opts()->types.stream_node_max_bytes;
    return v == 0 || v > STREAM_ELEMENTS_MAX ? STREAM_ELEMENTS_MAX : (size_t)v;
}

/* Whether n's master fields are exactly the entry's fields. */
static int node_same_fields(const snode *n, const stream_str *elems, size_t npairs) {
    if (n->nfields != npairs) return 0;
    uint32_t off = 0;
    for (size_t i = 0; i < npairs; i++) {
        uint64_t len = off_varint_get(n->data, &off);
        const stream_str *f = &elems[2 * i];
        if (len != f->len || memcmp(n->data + off, f->ptr, f->len) != 0) return 0;
        off += (uint32_t)len;
    }
    return 1;
}

static size_t str_bytes(const stream_str *e) {
    return varint_len(e->len) + e->len;
}

/* A new tail node whose master fields are the entry's; the previous tail
 * is closed and shrunk. */
static snode *node_open(stream *s, stream_id id, const stream_str *elems, size_t npairs,
                        size_t entry_bytes) {
    idmap_iter it;
    snode *last = index_last(s, &it);
    if (last && last->used < last->cap) idmap_iter_set_val(&it, node_resize(s, last, last->used));
    size_t fbytes = 0;
    for (size_t i = 0; i < npairs; i++)
        fbytes += str_bytes(&elems[2 * i]);
    size_t need = fbytes + entry_bytes;
    size_t cap = need < 64 ? 64 : need;
    snode *n = node_alloc(s, (uint32_t)cap);
    n->master = id;
    n->nfields = (uint32_t)npairs;
    uint32_t off = 0;
    for (size_t i = 0; i < npairs; i++) {
        const stream_str *f = &elems[2 * i];
        off += (uint32_t)varint_put(n->data + off, f->len);
        memcpy(n->data + off, f->ptr, f->len);
        off += (uint32_t)f->len;
    }
    n->first = n->used = off;
    idmap_insert(&s->index, index_key(id), n);
    return n;
}

/* The entry's bytes before its back length. */
static size_t entry_body_bytes(const snode *n, stream_id id, const stream_str *elems, size_t npairs,
                               int same) {
    uint64_t dms = id.ms - n->master.ms;
    size_t b = 1 + varint_len(dms) + varint_len(dms ? id.seq : id.seq - n->master.seq);
    if (!same) b += varint_len(npairs);
    for (size_t i = 0; i < npairs; i++) {
        if (!same) b += str_bytes(&elems[2 * i]);
        b += str_bytes(&elems[2 * i + 1]);
    }
    return b;
}

static uint32_t put_str(unsigned char *p, const stream_str *e) {
    size_t n = varint_put(p, e->len);
    memcpy(p + n, e->ptr, e->len);
    return (uint32_t)(n + e->len);
}

/* The ID XADD asks for, checked against the last one. */
static int append_id(const stream *s, const stream_add *a, stream_id *id) {
    if (!a->id_given) {
        if (a->now_ms > s->last_id.ms) {
            *id = (stream_id){a->now_ms, 0};
        } else {
            *id = s->last_id;
            if (stream_id_incr(id) != K_OK) return K_ERR;
        }
    } else if (!a->seq_given && s->last_id.ms == a->id.ms) {
        if (s->last_id.seq == UINT64_MAX) return K_ERR;
        *id = (stream_id){a->id.ms, s->last_id.seq + 1};
    } else {
        *id = a->id;
        if (!a->seq_given) id->seq = 0;
    }
    return stream_id_cmp(*id, s->last_id) > 0 ? K_OK : K_ERR;
}

int stream_append(kobj *o, const stream_add *a, stream_id *added, int *too_large) {
    stream *s = sget(o);
    *too_large = 0;
    stream_id id;
    if (append_id(s, a, &id) != K_OK) return K_ERR;
    size_t total = 0;
    for (size_t i = 0; i < 2 * a->npairs; i++)
        total += a->elems[i].len;
    if (total > STREAM_ELEMENTS_MAX) {
        *too_large = 1;
        return K_ERR;
    }
    idmap_iter tail;
    snode *n = index_last(s, &tail);
    if (n) {
        size_t max_entries = node_max_entries();
        if (n->used + total >= node_max_bytes() ||
            (max_entries && (size_t)n->live + n->deleted >= max_entries))
            n = NULL;
    }
    int same = n ? node_same_fields(n, a->elems, a->npairs) : 1;
    size_t body = n ? entry_body_bytes(n, id, a->elems, a->npairs, same) : 0;
    if (!n || (size_t)n->used + body + VARINT_MAX > UINT32_MAX) {
        /* The first entry's deltas are zero: three bytes of head. */
        size_t vbytes = 0;
        for (size_t i = 0; i < a->npairs; i++)
            vbytes += str_bytes(&a->elems[2 * i + 1]);
        n = node_open(s, id, a->elems, a->npairs, 3 + vbytes + VARINT_MAX);
        index_last(s, &tail);
        same = 1;
        body = entry_body_bytes(n, id, a->elems, a->npairs, 1);
    }
    size_t need = n->used + body + varint_len(body);
    if (need > n->cap) {
        size_t cap = (size_t)n->cap * 2;
        if (cap < need) cap = need;
        size_t limit = node_max_bytes();
        if (cap > limit && need <= limit) cap = limit;
        if (cap > UINT32_MAX) cap = need;
        n = node_resize(s, n, (uint32_t)cap);
        idmap_iter_set_val(&tail, n);
    }
    unsigned char *p = n->data;
    uint32_t off = n->used;
    uint64_t dms = id.ms - n->master.ms;
    p[off++] = same ? ENTRY_SAME : 0;
    off += (uint32_t)varint_put(p + off, dms);
    off += (uint32_t)varint_put(p + off, dms ? id.seq : id.seq - n->master.seq);
    if (!same) off += (uint32_t)varint_put(p + off, a->npairs);
    for (size_t i = 0; i < a->npairs; i++) {
        if (!same) off += put_str(p + off, &a->elems[2 * i]);
        off += put_str(p + off, &a->elems[2 * i + 1]);
    }
    off += (uint32_t)varint_back_put(p + off, off - n->used);
    n->used = off;
    n->live++;
    n->last = id;
    if (s->length == 0) {
        s->first_id = id;
        s->first_known = 1;
    }
    s->length++;
    s->entries_added++;
    s->last_id = id;
    *added = id;
    return K_OK;
}

/* ---- trimming ---- */

/* Flags the entries of node i from its start while keep_going says so;
 * returns how many it deleted. The node is freed when none is left. */
static uint64_t trim_node_exact(stream *s, snode *n, const stream_trim_args *t) {
    uint64_t deleted = 0;
    uint32_t off = n->first;
    while (off < n->used) {
        entry_head e;
        entry_read(n, off, &e);
        if (t->strategy == STREAM_TRIM_MAXLEN ? s->length <= t->maxlen
                                              : stream_id_cmp(e.id, t->minid) >= 0)
            break;
        uint32_t next = entry_end(n, off);
        if (!(e.flags & ENTRY_DELETED)) {
            n->data[off] |= ENTRY_DELETED;
            n->live--;
            n->deleted++;
            s->length--;
            deleted++;
        }
        off = next;
    }
    if (!n->live) index_remove(s, n);
    return deleted;
}

uint64_t stream_trim(kobj *o, const stream_trim_args *t) {
    stream *s = sget(o);
    if (t->strategy == STREAM_TRIM_NONE) return 0;
    uint64_t deleted = 0;
    snode *n;
    while ((n = index_first(s)) != NULL) {
        if (t->strategy == STREAM_TRIM_MAXLEN && s->length <= t->maxlen) break;
        if (t->limit && deleted + n->live > t->limit) break;
        int whole = t->strategy == STREAM_TRIM_MAXLEN ? s->length - n->live >= t->maxlen
                                                      : stream_id_cmp(n->last, t->minid) < 0;
        if (whole) {
            deleted += n->live;
            s->length -= n->live;
            index_remove(s, n);
            continue;
        }
        if (!t->approx) deleted += trim_node_exact(s, n, t);
        break;
    }
    if (deleted) s->first_known = 0;
    return deleted;
}

uint64_t stream_approx_limit(void) {
    long long v = 100 * db_opts()->types.stream_node_max_entries;
    if (v <= 0) return 10000;
    return v > 1000000 ? 1000000 : (uint64_t)v;
}

/* ---- XDEL and XSETID ---- */

int stream_delete(kobj *o, stream_id id) {
    stream *s = sget(o);
    stream_iter it;
    stream_id got;
    size_t npairs;
    stream_iter_start(&it, o, id, id, 0);
    int found = stream_iter_next(&it, &got, &npairs);
    if (found) stream_iter_delete(&it);
    stream_iter_stop(&it);
    if (found && stream_id_cmp(id, s->max_deleted_id) > 0) s->max_deleted_id = id;
    return found;
}

void stream_set_meta(kobj *o, stream_id last_id, const uint64_t *entries_added,
                     const stream_id *max_deleted_id) {
    stream *s = sget(o);
    s->last_id = last_id;
    if (entries_added) s->entries_added = *entries_added;
    if (max_deleted_id) s->max_deleted_id = *max_deleted_id;
}

/* ---- the type's operations ---- */

static const char *stream_type_name(const kobj *o) {
    K_UNUSED(o);
    return "stream";
}

static const char *stream_encoding_name(const kobj *o) {
    K_UNUSED(o);
    return "stream";
}

static void stream_free_value(kobj *o) {
    stream *s = sget(o);
    idmap_clear(&s->index, km_free);
    if (s->groups) cg_ops->free_groups(s->groups);
    km_free(s);
}

/* Exact for the entries (the nodes' bytes are counted as they change);
 * the groups estimate theirs from samples. */
static size_t stream_mem_usage(const kobj *o, size_t samples) {
    const stream *s = sget(o);
    size_t b = km_usable(s) + s->node_bytes + idmap_mem_usage(&s->index);
    if (s->groups) b += cg_ops->mem_usage(s->groups, samples);
    return b;
}

static kobj *stream_copy(const kobj *o) {
    const stream *s = sget(o);
    kobj *c = stream_create();
    stream *d = sget(c);
    d->length = s->length;
    d->entries_added = s->entries_added;
    d->last_id = s->last_id;
    d->max_deleted_id = s->max_deleted_id;
    d->first_id = s->first_id;
    d->first_known = s->first_known;
    idmap_iter it;
    for (idmap_seek_first(&it, &s->index); idmap_iter_valid(&it); idmap_iter_next(&it)) {
        const snode *n = index_node(&it);
        snode *m = node_alloc(d, n->used);
        memcpy(m, n, sizeof(*n) + n->used);
        m->cap = n->used;
        idmap_insert(&d->index, index_key(m->master), m);
    }
    if (s->groups) d->groups = cg_ops->copy(s->groups);
    return c;
}

static size_t stream_free_effort(const kobj *o) {
    const stream *s = sget(o);
    size_t e = idmap_count(&s->index) + 1;
    if (s->groups) e += cg_ops->free_effort(s->groups);
    return e;
}

static const obj_type stream_type = {
    .type_name = stream_type_name,
    .encoding_name = stream_encoding_name,
    .free_value = stream_free_value,
    .mem_usage = stream_mem_usage,
    .copy = stream_copy,
    .free_effort = stream_free_effort,
};

void stream_type_setup(void) {
    obj_set_type(OBJ_STREAM, &stream_type);
}
