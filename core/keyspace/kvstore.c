/* kvstore.c -- per-slot hash tables (see kvstore.h).
 *
 * Bookkeeping: `tables` is the slot-indexed array (NULL: no table), `counts`
 * the fenwick tree of entries per slot (slot_bits > 0 only). The rehash
 * queue is a ring of slots, each at most once (the `queued` bitmap), so its
 * capacity is the slot count and it never reallocates. A slot is queued when
 * an operation leaves its table rehashing; the cron walks only the queue and
 * drops slots whose table finished (or went away). Pins are the slots a scan
 * step or safe iterator is walking right now: a pinned table is not freed
 * when it empties, the walker frees it when it lets go. */
#include "keyspace/kvstore.h"

#include "common/kmem.h"
#include "ds/fenwick.h"
#include "event/event.h"
#include "keyspace/slot.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct kvstore {
    kvstore_head head; /* first: the header's inline lookups read it */
    const hashtable_type *type;
    int flags;
    fenwick *counts; /* NULL with slot_bits 0 */
    size_t total;
    int non_empty;
    int allocated;
    /* The rehash queue: a ring of num_slots slots. */
    uint16_t *queue;
    uint64_t *queued; /* bitmap: slot is in the queue */
    size_t q_head;
    size_t q_len;
    int shrink_cursor;
    kvstore_pin *pins; /* slots being walked */
};

/* ---------------------------------------------------------------- helpers */

static int is_queued(const kvstore *kvs, int slot) {
    return (int)((kvs->queued[slot >> 6] >> (slot & 63)) & 1);
}

static void set_queued(kvstore *kvs, int slot, int on) {
    uint64_t bit = 1ULL << (slot & 63);
    if (on)
        kvs->queued[slot >> 6] |= bit;
    else
        kvs->queued[slot >> 6] &= ~bit;
}

static void queue_push(kvstore *kvs, int slot) {
    assert(kvs->q_len < (size_t)kvs->head.num_slots);
    kvs->queue[(kvs->q_head + kvs->q_len) % (size_t)kvs->head.num_slots] = (uint16_t)slot;
    kvs->q_len++;
}

static int queue_pop(kvstore *kvs) {
    int slot = kvs->queue[kvs->q_head];
    kvs->q_head = (kvs->q_head + 1) % (size_t)kvs->head.num_slots;
    kvs->q_len--;
    return slot;
}

static int is_pinned(const kvstore *kvs, int slot) {
    for (const kvstore_pin *p = kvs->pins; p; p = p->next)
        if (p->slot == slot) return 1;
    return 0;
}

static void pin(kvstore *kvs, kvstore_pin *p, int slot) {
    p->slot = slot;
    p->next = kvs->pins;
    kvs->pins = p;
}

static void unpin(kvstore *kvs, kvstore_pin *p) {
    for (kvstore_pin **pp = &kvs->pins; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            return;
        }
    }
    assert(0 && "kvstore pin not found");
}

static hashtable *create_table_if_needed(kvstore *kvs, int slot) {
    if (!kvs->head.tables[slot]) {
        kvs->head.tables[slot] = hashtable_create(kvs->type);
        kvs->allocated++;
    }
    return kvs->head.tables[slot];
}

/* After anything that may have changed the slot's table: queue it if it is
 * rehashing, free it if it is empty and may go. */
static void after_change(kvstore *kvs, int slot) {
    hashtable *ht = kvs->head.tables[slot];
    if (!ht) return;
    if (hashtable_size(ht) == 0 && kvs->head.slot_bits > 0 &&
        (kvs->flags & KVSTORE_FREE_EMPTY_TABLES) && !is_pinned(kvs, slot)) {
        hashtable_release(ht);
        kvs->head.tables[slot] = NULL;
        kvs->allocated--;
        return; /* a queued slot stays queued; the cron drops it */
    }
    if (!is_queued(kvs, slot) && hashtable_is_rehashing(ht)) {
        set_queued(kvs, slot, 1);
        queue_push(kvs, slot);
    }
}

static void count_add(kvstore *kvs, int slot, long long delta) {
    size_t after = hashtable_size(kvs->head.tables[slot]);
    kvs->total = (size_t)((long long)kvs->total + delta);
    if (delta > 0 && after == (size_t)delta) kvs->non_empty++;
    if (delta < 0 && after == 0) kvs->non_empty--;
    if (kvs->counts) fenwick_add(kvs->counts, (size_t)slot, delta);
}

/* The first non-empty slot >= slot, or -1. */
static int next_non_empty(const kvstore *kvs, int slot) {
    if (slot < 0) slot = 0;
    if (slot >= kvs->head.num_slots || kvs->total == 0) return -1;
    if (!kvs->counts) return kvstore_slot_size(kvs, 0) ? 0 : -1;
    long long before = slot ? fenwick_prefix(kvs->counts, (size_t)slot - 1) : 0;
    if (before >= fenwick_total(kvs->counts)) return -1;
    return (int)fenwick_find(kvs->counts, before);
}

static uint64_t random_u64(void) {
    /* rand() gives at least 15 bits (31 on glibc): fold several calls. */
    uint64_t r = 0;
    for (int i = 0; i < 5; i++)
        r = (r << 15) ^ (uint64_t)rand();
    return r;
}

/* --------------------------------------------------- create and destroy */

kvstore *kvstore_create(const hashtable_type *type, int slot_bits, int flags) {
    if (slot_bits < 0 || slot_bits > 16) return NULL;
    kvstore *kvs = km_calloc(1, sizeof(*kvs));
    kvs->type = type;
    kvs->flags = flags;
    kvs->head.slot_bits = slot_bits;
    kvs->head.num_slots = 1 << slot_bits;
    kvs->head.tables = km_calloc((size_t)kvs->head.num_slots, sizeof(*kvs->head.tables));
    if (slot_bits > 0) kvs->counts = fenwick_create((size_t)kvs->head.num_slots);
    kvs->queue = km_calloc((size_t)kvs->head.num_slots, sizeof(*kvs->queue));
    kvs->queued = km_calloc(((size_t)kvs->head.num_slots + 63) / 64, sizeof(*kvs->queued));
    if (!(flags & KVSTORE_ALLOCATE_TABLES_ON_DEMAND))
        for (int s = 0; s < kvs->head.num_slots; s++)
            create_table_if_needed(kvs, s);
    return kvs;
}

void kvstore_release(kvstore *kvs) {
    if (!kvs) return;
    assert(!kvs->pins && "kvstore released during a scan or safe iteration");
    for (int s = 0; s < kvs->head.num_slots; s++)
        if (kvs->head.tables[s]) hashtable_release(kvs->head.tables[s]);
    km_free(kvs->head.tables);
    fenwick_release(kvs->counts);
    km_free(kvs->queue);
    km_free(kvs->queued);
    km_free(kvs);
}

void kvstore_empty(kvstore *kvs, kvstore_entry_fn fn, void *priv) {
    assert(!kvs->pins && "kvstore emptied during a scan or safe iteration");
    int may_free = kvs->head.slot_bits > 0 && (kvs->flags & KVSTORE_FREE_EMPTY_TABLES);
    for (int s = 0; s < kvs->head.num_slots; s++) {
        hashtable *ht = kvs->head.tables[s];
        if (!ht) continue;
        size_t n = hashtable_size(ht);
        if (n && kvs->counts) fenwick_add(kvs->counts, (size_t)s, -(long long)n);
        if (n && fn) {
            hashtable_iter it;
            void *e;
            hashtable_iter_init(&it, ht, 0);
            while (hashtable_iter_next(&it, &e))
                fn(priv, e);
            hashtable_iter_reset(&it);
        }
        if (may_free) {
            hashtable_release(ht);
            kvs->head.tables[s] = NULL;
            kvs->allocated--;
        } else {
            hashtable_empty(ht);
        }
    }
    kvs->total = 0;
    kvs->non_empty = 0;
    kvs->q_head = kvs->q_len = 0;
    memset(kvs->queued, 0, ((size_t)kvs->head.num_slots + 63) / 64 * sizeof(*kvs->queued));
    kvs->shrink_cursor = 0;
}

/* ---------------------------------------------------------------- queries */

int kvstore_num_slots(const kvstore *kvs) {
    return kvs->head.num_slots;
}

int kvstore_slot_of_key(const kvstore *kvs, const void *key, size_t len) {
    return (int)(slot_of_key(key, len) & (unsigned)(kvs->head.num_slots - 1));
}

size_t kvstore_size(const kvstore *kvs) {
    return kvs->total;
}

size_t kvstore_slot_size(const kvstore *kvs, int slot) {
    if (slot < 0 || slot >= kvs->head.num_slots || !kvs->head.tables[slot]) return 0;
    return hashtable_size(kvs->head.tables[slot]);
}

int kvstore_non_empty_slots(const kvstore *kvs) {
    return kvs->non_empty;
}

int kvstore_allocated_tables(const kvstore *kvs) {
    return kvs->allocated;
}

int kvstore_next_slot(const kvstore *kvs, int slot) {
    return next_non_empty(kvs, slot);
}

size_t kvstore_mem_usage(const kvstore *kvs) {
    size_t mem = sizeof(*kvs) + (size_t)kvs->head.num_slots * sizeof(*kvs->head.tables) +
                 (size_t)kvs->head.num_slots * sizeof(*kvs->queue) +
                 ((size_t)kvs->head.num_slots + 63) / 64 * sizeof(*kvs->queued) +
                 fenwick_mem_usage(kvs->counts);
    for (int s = 0; s < kvs->head.num_slots; s++)
        if (kvs->head.tables[s]) mem += hashtable_mem_usage(kvs->head.tables[s]);
    return mem;
}

size_t kvstore_rehashing_count(kvstore *kvs) {
    /* Keep the queue's order; drop the slots that are done. */
    size_t n = kvs->q_len;
    for (size_t i = 0; i < n; i++) {
        int slot = queue_pop(kvs);
        hashtable *ht = kvs->head.tables[slot];
        if (ht && hashtable_is_rehashing(ht))
            queue_push(kvs, slot);
        else
            set_queued(kvs, slot, 0);
    }
    return kvs->q_len;
}

int kvstore_is_rehashing(kvstore *kvs) {
    return kvstore_rehashing_count(kvs) > 0;
}

/* ------------------------------------------------------- per-key calls */

int kvstore_add(kvstore *kvs, int slot, void *entry, void **existing) {
    assert(slot >= 0 && slot < kvs->head.num_slots);
    hashtable *ht = create_table_if_needed(kvs, slot);
    if (!hashtable_add(ht, entry, existing)) return 0;
    count_add(kvs, slot, 1);
    after_change(kvs, slot);
    return 1;
}

int kvstore_delete(kvstore *kvs, int slot, const void *key, size_t len, void **popped) {
    hashtable *ht = kvstore_table(kvs, slot);
    if (!ht || !hashtable_delete(ht, key, len, popped)) return 0;
    count_add(kvs, slot, -1);
    after_change(kvs, slot);
    return 1;
}

/* --------------------------------------------------------------- sampling */

int kvstore_fair_slot(kvstore *kvs) {
    if (kvs->total == 0) return -1;
    if (!kvs->counts) return 0;
    long long k = (long long)(random_u64() % (uint64_t)kvs->total);
    return (int)fenwick_find(kvs->counts, k);
}

void *kvstore_random_entry(kvstore *kvs) {
    int slot = kvstore_fair_slot(kvs);
    return slot < 0 ? NULL : hashtable_random(kvs->head.tables[slot]);
}

size_t kvstore_sample(kvstore *kvs, void **out, size_t count) {
    int slot = kvstore_fair_slot(kvs);
    if (slot < 0 || count == 0) return 0;
    return hashtable_sample(kvs->head.tables[slot], out, count);
}

/* ------------------------------------------------------------------- scan */

/* One step of one slot's table, with the table pinned so a callback that
 * empties it does not free it under the scan. */
static size_t scan_table(kvstore *kvs, int slot, size_t cursor, hashtable_scan_fn fn, void *priv) {
    kvstore_pin p;
    pin(kvs, &p, slot);
    cursor = hashtable_scan(kvs->head.tables[slot], cursor, fn, priv);
    unpin(kvs, &p);
    after_change(kvs, slot);
    return cursor;
}

int kvstore_cursor_slot(const kvstore *kvs, size_t cursor) {
    return (int)(cursor & (size_t)(kvs->head.num_slots - 1));
}

size_t kvstore_scan(kvstore *kvs, size_t cursor, hashtable_scan_fn fn, void *priv) {
    int slot = kvstore_cursor_slot(kvs, cursor);
    size_t tcursor = cursor >> kvs->head.slot_bits;
    if (kvstore_slot_size(kvs, slot) == 0) {
        /* Emptied since the previous step (or never filled): nothing present
         * for the whole scan lives there, go on from the next slot. */
        slot = next_non_empty(kvs, slot);
        if (slot < 0) return 0;
        tcursor = 0;
    }
    tcursor = scan_table(kvs, slot, tcursor, fn, priv);
    if (tcursor == 0) {
        slot = next_non_empty(kvs, slot + 1);
        if (slot < 0) return 0;
    }
    return (tcursor << kvs->head.slot_bits) | (size_t)slot;
}

size_t kvstore_scan_slot(kvstore *kvs, int slot, size_t cursor, hashtable_scan_fn fn, void *priv) {
    if (kvstore_slot_size(kvs, slot) == 0) return 0;
    return scan_table(kvs, slot, cursor, fn, priv);
}

/* -------------------------------------------------------------- iterators */

void kvstore_iter_init(kvstore_iter *it, kvstore *kvs, int safe) {
    memset(it, 0, sizeof(*it));
    it->kvs = kvs;
    it->safe = safe;
    it->pin.slot = -1;
}

/* Lets go of the current table (freeing it if the user emptied it). */
static void iter_leave(kvstore_iter *it) {
    hashtable_iter_reset(&it->hit);
    if (it->safe) unpin(it->kvs, &it->pin);
    after_change(it->kvs, it->pin.slot);
}

int kvstore_iter_next(kvstore_iter *it, void **entry) {
    int slot;
    if (it->state == 2) return 0;
    if (it->state == 1) {
        if (hashtable_iter_next(&it->hit, entry)) return 1;
        iter_leave(it);
        slot = next_non_empty(it->kvs, it->pin.slot + 1);
    } else {
        slot = next_non_empty(it->kvs, 0);
    }
    while (slot >= 0) {
        it->state = 1;
        it->pin.slot = slot;
        if (it->safe) pin(it->kvs, &it->pin, slot);
        hashtable_iter_init(&it->hit, it->kvs->head.tables[slot], it->safe);
        if (hashtable_iter_next(&it->hit, entry)) return 1;
        iter_leave(it);
        slot = next_non_empty(it->kvs, slot + 1);
    }
    it->state = 2;
    return 0;
}

int kvstore_iter_slot(const kvstore_iter *it) {
    return it->pin.slot;
}

void kvstore_iter_reset(kvstore_iter *it) {
    if (it->state == 1) iter_leave(it);
    it->state = 0;
    it->pin.slot = -1;
}

/* ------------------------------------------------------------------- cron */

int kvstore_rehash_micros(kvstore *kvs, uint64_t us) {
    if (kvs->q_len == 0) return 0;
    uint64_t start = event_mono_us();
    size_t visits = kvs->q_len;
    for (size_t i = 0; i < visits && kvs->q_len; i++) {
        int slot = queue_pop(kvs);
        hashtable *ht = kvs->head.tables[slot];
        if (!ht || !hashtable_is_rehashing(ht)) {
            set_queued(kvs, slot, 0);
            continue;
        }
        uint64_t spent = event_mono_us() - start;
        if (spent >= us) {
            queue_push(kvs, slot); /* out of time: it stays queued (moves to the back) */
            break;
        }
        if (hashtable_rehash_micros(ht, us - spent))
            queue_push(kvs, slot);
        else
            set_queued(kvs, slot, 0);
    }
    return kvs->q_len > 0;
}

void kvstore_shrink_if_needed(kvstore *kvs, int limit, size_t compact_budget) {
    int slot = next_non_empty(kvs, kvs->shrink_cursor);
    if (slot < 0) slot = next_non_empty(kvs, 0); /* wrap */
    int first = slot;
    for (int n = 0; n < limit && slot >= 0; n++) {
        hashtable_shrink_if_needed(kvs->head.tables[slot]);
        hashtable_compact_if_idle(kvs->head.tables[slot], compact_budget);
        after_change(kvs, slot);
        kvs->shrink_cursor = slot + 1 < kvs->head.num_slots ? slot + 1 : 0;
        slot = next_non_empty(kvs, kvs->shrink_cursor);
        if (slot < 0) {
            kvs->shrink_cursor = 0;
            slot = next_non_empty(kvs, 0);
        }
        if (slot == first) break; /* every non-empty slot visited once */
    }
}
