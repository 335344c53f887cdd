/* stream_cgroup.c -- a stream's consumer groups (types/stream_cgroup.h):
 * the groups and consumers by name, the pending entries lists, the lag
 * and entries-read accounting, and the groups' part of freeing, measuring
 * and copying a stream. */
#include "types/stream_cgroup.h"

#include "common/common.h"
#include "common/kmem.h"

#include <string.h>

/* ---- sorted names ---- */

/* What every item of an scg_names begins with. */
typedef struct scg_named {
    char *name;
    size_t len;
} scg_named;

static int name_cmp(const scg_named *a, const char *name, size_t len) {
    size_t n = a->len < len ? a->len : len;
    int r = memcmp(a->name, name, n);
    if (r) return r;
    return a->len < len ? -1 : a->len > len;
}

/* The first position whose name is >= name; *found when equal. */
static size_t names_lower(const scg_names *v, const char *name, size_t len, int *found) {
    size_t lo = 0, hi = v->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (name_cmp(v->items[mid], name, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < v->count && name_cmp(v->items[lo], name, len) == 0;
    return lo;
}

static void *names_find(const scg_names *v, const char *name, size_t len) {
    int found;
    size_t pos = names_lower(v, name, len, &found);
    return found ? v->items[pos] : NULL;
}

static void names_insert_at(scg_names *v, size_t pos, void *item) {
    if (v->count == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4;
        v->items = km_realloc(v->items, v->cap * sizeof(void *));
    }
    memmove(&v->items[pos + 1], &v->items[pos], (v->count - pos) * sizeof(void *));
    v->items[pos] = item;
    v->count++;
}

static void names_remove(scg_names *v, const char *name, size_t len) {
    int found;
    size_t pos = names_lower(v, name, len, &found);
    if (!found) return;
    memmove(&v->items[pos], &v->items[pos + 1], (v->count - pos - 1) * sizeof(void *));
    v->count--;
}

/* ---- consumers ---- */

static scg_consumer *consumer_new(const char *name, size_t len, int64_t now) {
    scg_consumer *c = km_alloc(sizeof(*c));
    c->name = km_strndup(name, len);
    c->len = len;
    c->seen_time = now;
    c->active_time = SCG_NEVER_ACTIVE;
    idmap_init(&c->pel);
    return c;
}

/* Frees the consumer; its pending entries belong to the group's PEL. */
static void consumer_free(scg_consumer *c) {
    idmap_clear(&c->pel, NULL);
    km_free(c->name);
    km_free(c);
}

scg_consumer *scg_consumer_lookup(const scg_group *g, const char *name, size_t len) {
    return names_find(&g->consumers, name, len);
}

scg_consumer *scg_consumer_create(scg_group *g, const char *name, size_t len, int64_t now) {
    int found;
    size_t pos = names_lower(&g->consumers, name, len, &found);
    if (found) return NULL;
    scg_consumer *c = consumer_new(name, len, now);
    names_insert_at(&g->consumers, pos, c);
    return c;
}

size_t scg_consumer_delete(scg_group *g, scg_consumer *c) {
    size_t pending = idmap_count(&c->pel);
    idmap_iter it;
    for (idmap_seek_first(&it, &c->pel); idmap_iter_valid(&it); idmap_iter_next(&it))
        km_free(idmap_delete(&g->pel, idmap_iter_key(&it)));
    names_remove(&g->consumers, c->name, c->len);
    consumer_free(c);
    return pending;
}

/* ---- pending entries ---- */

static scg_nack *nack_new(scg_consumer *c, int64_t now) {
    scg_nack *n = km_alloc(sizeof(*n));
    n->delivery_time = now;
    n->delivery_count = 1;
    n->consumer = c;
    return n;
}

scg_nack *scg_pel_add(scg_group *g, scg_consumer *c, stream_id id, int64_t now) {
    scg_nack *n = nack_new(c, now);
    idmap_insert(&g->pel, scg_key(id), n);
    idmap_insert(&c->pel, scg_key(id), n);
    return n;
}

void scg_pel_transfer(scg_group *g, scg_nack *n, stream_id id, scg_consumer *c) {
    K_UNUSED(g);
    if (n->consumer == c) return;
    idmap_delete(&n->consumer->pel, scg_key(id));
    idmap_insert(&c->pel, scg_key(id), n);
    n->consumer = c;
}

scg_nack *scg_deliver(scg_group *g, scg_consumer *c, stream_id id, int64_t now) {
    scg_nack *n = scg_pel_find(g, id);
    if (!n) return scg_pel_add(g, c, id, now);
    scg_pel_transfer(g, n, id, c);
    n->delivery_time = now;
    n->delivery_count = 1;
    return n;
}

int scg_pel_remove(scg_group *g, stream_id id) {
    scg_nack *n = idmap_delete(&g->pel, scg_key(id));
    if (!n) return 0;
    idmap_delete(&n->consumer->pel, scg_key(id));
    km_free(n);
    return 1;
}

/* ---- groups ---- */

static scg_names *groups_of(const kobj *s) {
    return stream_groups(s);
}

static void group_free(scg_group *g) {
    for (size_t i = 0; i < g->consumers.count; i++)
        consumer_free(g->consumers.items[i]);
    km_free(g->consumers.items);
    idmap_clear(&g->pel, km_free);
    km_free(g->name);
    km_free(g);
}

size_t scg_group_count(const kobj *s) {
    scg_names *v = groups_of(s);
    return v ? v->count : 0;
}

scg_group *scg_group_at(const kobj *s, size_t i) {
    return groups_of(s)->items[i];
}

scg_group *scg_lookup(const kobj *s, const char *name, size_t len) {
    scg_names *v = groups_of(s);
    return v ? names_find(v, name, len) : NULL;
}

scg_group *scg_create(kobj *s, const char *name, size_t len, stream_id last_id,
                      int64_t entries_read) {
    scg_names *v = groups_of(s);
    if (!v) {
        v = km_calloc(1, sizeof(*v));
        stream_set_groups(s, v);
    }
    int found;
    size_t pos = names_lower(v, name, len, &found);
    if (found) return NULL;
    scg_group *g = km_calloc(1, sizeof(*g));
    g->name = km_strndup(name, len);
    g->len = len;
    g->last_id = last_id;
    g->entries_read = entries_read;
    names_insert_at(v, pos, g);
    return g;
}

int scg_destroy(kobj *s, const char *name, size_t len) {
    scg_names *v = groups_of(s);
    scg_group *g = v ? names_find(v, name, len) : NULL;
    if (!g) return 0;
    names_remove(v, name, len);
    group_free(g);
    return 1;
}

/* ---- the group's position ---- */

static int id_is_zero(stream_id id) {
    return id.ms == 0 && id.seq == 0;
}

int scg_range_has_tombstones(const kobj *s, stream_id start, stream_id end) {
    stream_id maxdel = stream_max_deleted_id(s);
    if (stream_len(s) == 0 || id_is_zero(maxdel)) return 0;
    if (stream_id_cmp(stream_first_id(s), maxdel) > 0) return 0;
    return stream_id_cmp(start, maxdel) <= 0 && stream_id_cmp(maxdel, end) <= 0;
}

int64_t scg_estimate_entries_read(const kobj *s, stream_id id) {
    uint64_t added = stream_entries_added(s);
    if (added == 0) return 0;
    stream_id last = stream_last_id(s);
    int cmp_last = stream_id_cmp(id, last);
    /* An empty stream: every ID up to the last was read. */
    if (stream_len(s) == 0 && cmp_last <= 0) return (int64_t)added;
    if (cmp_last == 0) return (int64_t)added;
    if (cmp_last > 0) return SCG_INVALID_ENTRIES_READ;
    stream_id first = stream_first_id(s), maxdel = stream_max_deleted_id(s);
    if (id_is_zero(maxdel) || stream_id_cmp(maxdel, first) < 0) {
        /* No tombstone among the live entries: the distance is known
         * before or at the first one. */
        int cmp_first = stream_id_cmp(id, first);
        if (cmp_first < 0) return (int64_t)(added - stream_len(s));
        if (cmp_first == 0) return (int64_t)(added - stream_len(s) + 1);
    }
    return SCG_INVALID_ENTRIES_READ;
}

void scg_advance(const kobj *s, scg_group *g, stream_id id) {
    if (g->entries_read != SCG_INVALID_ENTRIES_READ &&
        !scg_range_has_tombstones(s, id, STREAM_ID_MAX))
        g->entries_read++;
    else if (stream_entries_added(s))
        g->entries_read = scg_estimate_entries_read(s, id);
    g->last_id = id;
}

int scg_lag(const kobj *s, const scg_group *g, int64_t *lag) {
    uint64_t added = stream_entries_added(s);
    if (added == 0) {
        *lag = 0;
        return 1;
    }
    if (g->entries_read != SCG_INVALID_ENTRIES_READ &&
        !scg_range_has_tombstones(s, g->last_id, STREAM_ID_MAX)) {
        *lag = (int64_t)added - g->entries_read;
        return 1;
    }
    int64_t read = scg_estimate_entries_read(s, g->last_id);
    if (read == SCG_INVALID_ENTRIES_READ) return 0;
    *lag = (int64_t)added - read;
    return 1;
}

/* ---- the stream type's side: free, measure, copy ---- */

static void groups_free(void *groups) {
    scg_names *v = groups;
    for (size_t i = 0; i < v->count; i++)
        group_free(v->items[i]);
    km_free(v->items);
    km_free(v);
}

static size_t consumer_mem(const scg_consumer *c) {
    return sizeof(*c) + c->len + 1 + idmap_mem_usage(&c->pel);
}

/* A group's bytes, its consumers estimated from `samples` of them. */
static size_t group_mem(const scg_group *g, size_t samples) {
    size_t bytes = sizeof(*g) + g->len + 1 + idmap_mem_usage(&g->pel) +
                   idmap_count(&g->pel) * sizeof(scg_nack) + g->consumers.cap * sizeof(void *);
    size_t n = g->consumers.count, seen = n < samples ? n : samples, sum = 0;
    for (size_t i = 0; i < seen; i++)
        sum += consumer_mem(g->consumers.items[i]);
    if (seen) bytes += sum / seen * n;
    return bytes;
}

static size_t groups_mem_usage(const void *groups, size_t samples) {
    const scg_names *v = groups;
    size_t bytes = sizeof(*v) + v->cap * sizeof(void *);
    size_t seen = v->count < samples ? v->count : samples, sum = 0;
    for (size_t i = 0; i < seen; i++)
        sum += group_mem(v->items[i], samples);
    if (seen) bytes += sum / seen * v->count;
    return bytes;
}

static scg_group *group_copy(const scg_group *src) {
    scg_group *g = km_calloc(1, sizeof(*g));
    g->name = km_strndup(src->name, src->len);
    g->len = src->len;
    g->last_id = src->last_id;
    g->entries_read = src->entries_read;
    for (size_t i = 0; i < src->consumers.count; i++) {
        const scg_consumer *sc = src->consumers.items[i];
        scg_consumer *c = consumer_new(sc->name, sc->len, sc->seen_time);
        c->active_time = sc->active_time;
        names_insert_at(&g->consumers, i, c);
    }
    idmap_iter it;
    for (idmap_seek_first(&it, &src->pel); idmap_iter_valid(&it); idmap_iter_next(&it)) {
        const scg_nack *sn = idmap_iter_val(&it);
        scg_consumer *c = scg_consumer_lookup(g, sn->consumer->name, sn->consumer->len);
        scg_nack *n = scg_pel_add(g, c, scg_id(idmap_iter_key(&it)), sn->delivery_time);
        n->delivery_count = sn->delivery_count;
    }
    return g;
}

static void *groups_copy(const void *groups) {
    const scg_names *src = groups;
    scg_names *v = km_calloc(1, sizeof(*v));
    for (size_t i = 0; i < src->count; i++)
        names_insert_at(v, i, group_copy(src->items[i]));
    return v;
}

/* Valkey's lazy-free effort for the groups: one per group, per consumer
 * and per pending entry. */
static size_t groups_free_effort(const void *groups) {
    const scg_names *v = groups;
    size_t effort = 0;
    for (size_t i = 0; i < v->count; i++) {
        const scg_group *g = v->items[i];
        effort += 1 + g->consumers.count + idmap_count(&g->pel);
    }
    return effort;
}

static const stream_cgroup_ops scg_ops = {
    .free_groups = groups_free,
    .mem_usage = groups_mem_usage,
    .copy = groups_copy,
    .free_effort = groups_free_effort,
};

void scg_setup(void) {
    stream_set_cgroup_ops(&scg_ops);
}
