/* hashtable.c -- the keyspace's hash table: 64-byte buckets, incremental
 * rehashing, SCAN cursors, sampling and iterators.
 *
 * This file owns: the bucket layout and its chaining, the resize policy (load
 * factors below), the incremental rehash state machine, the SipHash-1-2 hash
 * and its process-wide seed, the reverse-binary SCAN cursor, random sampling
 * and the safe/unsafe iterators. Entries belong to the caller; the table only
 * stores their pointers and asks the type for their keys.
 *
 * Layout. A bucket is one cache line: a metadata byte (1 "chained" bit and 7
 * presence bits), 7 one-byte secondary hashes (the top 8 bits of the 64-bit
 * hash) and 7 entry pointers. A lookup compares the secondary hash first, so
 * it almost never calls entry_key for a non-matching entry. When a full bucket
 * needs one more entry, its last slot's entry moves into a new child bucket
 * and that slot holds the child pointer instead (chained bit set); a chained
 * bucket therefore has 6 entry positions.
 *
 * Tables. tables[0] is the table in use. While resizing, tables[1] is the new
 * table: new entries go there, lookups check both, and each add/find/delete
 * moves one bucket chain of tables[0] (index rehash_idx) to tables[1]. When
 * every bucket is moved, tables[1] becomes tables[0].
 *
 * Load factors (fraction of the 7 slots per bucket in use):
 *   grow   when entries would exceed 77% (about 5.4 entries per bucket); the
 *          new table is the smallest power of two under 77%, so a growth
 *          doubles the table and leaves it ~38% full;
 *   shrink when entries fall under 1/8 (12.5%), to the smallest power of two
 *          under 77%. Between the two there is a wide hysteresis band, so
 *          alternating adds and deletes never make the table thrash.
 *
 * Pausing. Scans and safe iterators hold a pause: while paused no entry
 * moves (no rehash steps, no chain compaction, no shrink), so a callback or
 * the iterator's user may delete entries without invalidating the position
 * being walked. Deletions during a pause only clear presence bits; the holes
 * are compacted by a later delete in the same chain, a scan, or the rehash. */
#include "ds/hashtable.h"

#include "common/kmem.h"

#include <assert.h>
#include <string.h>
#include <time.h>

#define SLOTS 7
#define CHILD_SLOT (SLOTS - 1)
#define ALL_SLOTS_MASK 0x7f
#define CHAINED_SLOTS_MASK 0x3f

#define MAX_FILL_PERCENT 77
#define MIN_FILL_DIVISOR 8
/* 2^48 buckets of 64 bytes is 16 PiB: beyond any real machine, and small
 * enough that buckets * SLOTS * MAX_FILL_PERCENT never overflows 64 bits. */
#define MAX_EXP 48
/* Rehash steps between clock reads in hashtable_rehash_micros(). */
#define REHASH_BATCH 100
/* hashtable_random() picks one entry out of a sample this big. */
#define RANDOM_SAMPLE 16

typedef struct bucket {
    uint8_t chained : 1;
    uint8_t presence : 7;
    uint8_t hashes[SLOTS];
    void *entries[SLOTS];
} bucket;

static_assert(sizeof(bucket) == 64, "a bucket must be exactly one 64-byte cache line");
static_assert(sizeof(size_t) == 8, "the scan cursor arithmetic assumes a 64-bit size_t");

struct hashtable {
    const hashtable_type *type;
    bucket *tables[2];
    size_t used[2];       /* entries in each table */
    size_t children[2];   /* child buckets allocated for each table's chains */
    int64_t rehash_idx;   /* next tables[0] bucket to move; -1: not rehashing */
    int32_t pause_rehash; /* >0: entries must not move (scan, safe iterator) */
    int32_t pause_shrink; /* >0: deletions must not start a shrink */
    int8_t exp[2];        /* log2 of each table's bucket count; -1: no table */
};

/* ---------------------------------------------------------------- hashing */

/* Zero until hashtable_set_seed(); the server sets a random seed at startup
 * so that clients cannot aim keys at one bucket. */
static uint8_t hash_seed[16];

void hashtable_set_seed(const uint8_t seed[16]) {
    memcpy(hash_seed, seed, sizeof(hash_seed));
}

static inline uint64_t rotl64(uint64_t x, int bits) {
    return (x << bits) | (x >> (64 - bits));
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof(v)); /* memcpy: keys need not be aligned */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void sip_round(uint64_t v[4]) {
    v[0] += v[1];
    v[1] = rotl64(v[1], 13);
    v[1] ^= v[0];
    v[0] = rotl64(v[0], 32);
    v[2] += v[3];
    v[3] = rotl64(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = rotl64(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = rotl64(v[1], 17);
    v[1] ^= v[2];
    v[2] = rotl64(v[2], 32);
}

/* SipHash-1-2: one compression round per 8-byte word and two finalization
 * rounds. Weaker than 2-4 as a MAC but, keyed with a secret seed, plenty to
 * stop hash flooding, and about twice as fast on short keys. */
uint64_t hashtable_hash(const void *key, size_t len) {
    const uint8_t *in = key;
    uint64_t k0 = load_le64(hash_seed), k1 = load_le64(hash_seed + 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t m = load_le64(in + i);
        v[3] ^= m;
        sip_round(v);
        v[0] ^= m;
    }
    /* The last block: the remaining 0-7 bytes, with len's low byte on top. */
    uint64_t last = (uint64_t)len << 56;
    for (size_t j = 0; i + j < len; j++)
        last |= (uint64_t)in[i + j] << (8 * j);
    v[3] ^= last;
    sip_round(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    sip_round(v);
    sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ------------------------------------------------------------------ random */

/* splitmix64, one state per thread (tables are per thread, the PRNG need not
 * be shared), seeded from the clock on first use. Only sampling uses it. */
static _Thread_local uint64_t rng_state;
static _Thread_local int rng_seeded;

static uint64_t rng_next(void) {
    if (!rng_seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rng_state = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
        rng_state ^= (uint64_t)(uintptr_t)&rng_state;
        rng_seeded = 1;
    }
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ----------------------------------------------------------- small helpers */

static inline size_t num_buckets(int8_t exp) {
    return exp < 0 ? 0 : (size_t)1 << exp;
}

static inline size_t exp_mask(int8_t exp) {
    return exp < 0 ? 0 : num_buckets(exp) - 1;
}

static inline int is_rehashing(const hashtable *ht) {
    return ht->rehash_idx != -1;
}

static inline int num_positions(const bucket *b) {
    return b->chained ? CHILD_SLOT : SLOTS;
}

static inline int is_present(const bucket *b, int pos) {
    return (b->presence >> pos) & 1;
}

static inline void set_present(bucket *b, int pos) {
    b->presence = (uint8_t)(b->presence | (1u << pos));
}

static inline void clear_present(bucket *b, int pos) {
    b->presence = (uint8_t)(b->presence & ~(1u << pos));
}

static inline bucket *child_of(const bucket *b) {
    return b->chained ? (bucket *)b->entries[CHILD_SLOT] : NULL;
}

static inline uint8_t high_bits(uint64_t hash) {
    return (uint8_t)(hash >> 56);
}

/* First free entry position in b, or -1 if b is full. */
static inline int free_position(const bucket *b) {
    unsigned usable = b->chained ? CHAINED_SLOTS_MASK : ALL_SLOTS_MASK;
    unsigned free_bits = ~(unsigned)b->presence & usable;
    return free_bits ? __builtin_ctz(free_bits) : -1;
}

static uint64_t entry_hash(const hashtable *ht, const void *entry) {
    size_t len;
    const void *key = ht->type->entry_key(entry, &len);
    return hashtable_hash(key, len);
}

static int entry_has_key(const hashtable *ht, const void *entry, const void *key, size_t len) {
    size_t elen;
    const void *ekey = ht->type->entry_key(entry, &elen);
    return elen == len && (len == 0 || memcmp(ekey, key, len) == 0);
}

/* Smallest table (log2 buckets) holding n entries under the max fill. */
static int8_t exp_for(size_t n) {
    int8_t exp = 0;
    if (n > SIZE_MAX / 100) return MAX_EXP;
    while (exp < MAX_EXP && num_buckets(exp) * SLOTS * MAX_FILL_PERCENT < n * 100)
        exp++;
    return exp;
}

static int over_max_fill(size_t n, int8_t exp) {
    if (n > SIZE_MAX / 100) return exp < MAX_EXP;
    return n * 100 > num_buckets(exp) * SLOTS * MAX_FILL_PERCENT && exp < MAX_EXP;
}

static inline void pause_all(hashtable *ht) {
    ht->pause_rehash++;
    ht->pause_shrink++;
}

static inline void resume_all(hashtable *ht) {
    assert(ht->pause_rehash > 0 && ht->pause_shrink > 0);
    ht->pause_rehash--;
    ht->pause_shrink--;
    /* Deletions made while paused could not shrink; catch up now. */
    hashtable_shrink_if_needed(ht);
}

/* ------------------------------------------------------- buckets and chains */

/* b is full: move its last entry into a new child bucket so the slot can
 * hold the child pointer. */
static void add_child(hashtable *ht, int t, bucket *b) {
    bucket *child = km_calloc(1, sizeof(bucket));
    child->entries[0] = b->entries[CHILD_SLOT];
    child->hashes[0] = b->hashes[CHILD_SLOT];
    set_present(child, 0);
    clear_present(b, CHILD_SLOT);
    b->entries[CHILD_SLOT] = child;
    b->chained = 1;
    ht->children[t]++;
}

/* Stores entry in the first free position of its chain in table t. */
static void insert_entry(hashtable *ht, int t, uint64_t hash, void *entry) {
    bucket *b = &ht->tables[t][hash & exp_mask(ht->exp[t])];
    int pos;
    while ((pos = free_position(b)) < 0) {
        if (!b->chained) add_child(ht, t, b);
        b = child_of(b);
    }
    b->entries[pos] = entry;
    b->hashes[pos] = high_bits(hash);
    set_present(b, pos);
    ht->used[t]++;
}

/* Frees the last bucket of a chain; prev (its parent) gets its slot back. */
static void unchain(hashtable *ht, int t, bucket *prev, bucket *last) {
    km_free(last);
    prev->chained = 0;
    prev->entries[CHILD_SLOT] = NULL;
    ht->children[t]--;
}

/* First hole in the chain from head up to (not including) stop. */
static int find_hole(bucket *head, bucket *stop, bucket **hole_b) {
    for (bucket *b = head; b != stop; b = child_of(b)) {
        int pos = free_position(b);
        if (pos >= 0) {
            *hole_b = b;
            return pos;
        }
    }
    return -1;
}

/* Fills holes left by deletions with entries from the chain's last bucket
 * and frees child buckets that become empty, so chains stay as short as the
 * entries allow. Moves entries only within this chain: callers must not be
 * walking it (not paused, or a scan that is done with it). */
static void compact_chain(hashtable *ht, int t, bucket *head) {
    while (head->chained) {
        bucket *prev = head, *last = child_of(head);
        while (last->chained) {
            prev = last;
            last = child_of(last);
        }
        if (last->presence == 0) {
            unchain(ht, t, prev, last);
            continue;
        }
        bucket *hole_b;
        int hole = find_hole(head, last, &hole_b);
        if (hole < 0) return;
        int from = __builtin_ctz(last->presence);
        hole_b->entries[hole] = last->entries[from];
        hole_b->hashes[hole] = last->hashes[from];
        set_present(hole_b, hole);
        clear_present(last, from);
        last->entries[from] = NULL;
    }
}

/* Frees a chain's child buckets, optionally calling entry_free on entries. */
static void free_chain(hashtable *ht, int t, bucket *head, int free_entries) {
    bucket *b = head;
    while (b) {
        if (free_entries && ht->type->entry_free) {
            for (int pos = 0; pos < num_positions(b); pos++)
                if (is_present(b, pos)) ht->type->entry_free(b->entries[pos]);
        }
        bucket *next = child_of(b);
        if (b != head) {
            km_free(b);
            ht->children[t]--;
        }
        b = next;
    }
}

/* ------------------------------------------------------------- rehashing */

static void finish_rehash(hashtable *ht) {
    assert(ht->used[0] == 0 && ht->children[0] == 0);
    km_free(ht->tables[0]);
    ht->tables[0] = ht->tables[1];
    ht->exp[0] = ht->exp[1];
    ht->used[0] = ht->used[1];
    ht->children[0] = ht->children[1];
    ht->tables[1] = NULL;
    ht->exp[1] = -1;
    ht->used[1] = 0;
    ht->children[1] = 0;
    ht->rehash_idx = -1;
}

/* Moves the chain at rehash_idx from tables[0] to tables[1]. */
static void rehash_step(hashtable *ht) {
    bucket *head = &ht->tables[0][ht->rehash_idx];
    for (bucket *b = head; b; b = child_of(b)) {
        for (int pos = 0; pos < num_positions(b); pos++) {
            if (!is_present(b, pos)) continue;
            void *entry = b->entries[pos];
            insert_entry(ht, 1, entry_hash(ht, entry), entry);
            ht->used[0]--;
        }
    }
    free_chain(ht, 0, head, 0);
    memset(head, 0, sizeof(*head));
    ht->rehash_idx++;
    /* When the old table holds nothing more (common when shrinking a sparse
     * table) the remaining buckets are all empty: skip them. */
    if ((size_t)ht->rehash_idx == num_buckets(ht->exp[0]) ||
        (ht->used[0] == 0 && ht->children[0] == 0))
        finish_rehash(ht);
}

static void rehash_step_if_allowed(hashtable *ht) {
    if (is_rehashing(ht) && ht->pause_rehash == 0) rehash_step(ht);
}

/* Makes the table sized for min_entries: the first table is allocated
 * directly; otherwise a second table is allocated and rehashing starts. */
static void resize(hashtable *ht, size_t min_entries) {
    int8_t exp = exp_for(min_entries);
    if (!ht->tables[0]) {
        ht->tables[0] = km_calloc(num_buckets(exp), sizeof(bucket));
        ht->exp[0] = exp;
        return;
    }
    if (exp == ht->exp[0] || is_rehashing(ht)) return;
    ht->tables[1] = km_calloc(num_buckets(exp), sizeof(bucket));
    ht->exp[1] = exp;
    ht->rehash_idx = 0;
    /* Nothing to move: switch now, unless a paused walker is in tables[0]. */
    if (ht->used[0] == 0 && ht->children[0] == 0 && ht->pause_rehash == 0) finish_rehash(ht);
}

/* Called before adding one entry. */
static void grow_if_needed(hashtable *ht) {
    size_t want = hashtable_size(ht) + 1;
    if (!ht->tables[0]) {
        resize(ht, want);
        return;
    }
    if (!over_max_fill(want, ht->exp[is_rehashing(ht) ? 1 : 0])) return;
    if (is_rehashing(ht)) {
        /* Moving entries now would break a scan or safe iterator: let the
         * chains grow longer until the pause ends. */
        if (ht->pause_rehash) return;
        /* Only happens when adds flood a table that just started shrinking
         * (a growth's rehash always ends long before the new table fills):
         * finish that rehash so the table can grow. */
        while (is_rehashing(ht))
            rehash_step(ht);
        if (!over_max_fill(want, ht->exp[0])) return;
    }
    /* Growing while paused is fine: the old table is left untouched. */
    resize(ht, want);
}

void hashtable_shrink_if_needed(hashtable *ht) {
    if (!ht->tables[0] || is_rehashing(ht) || ht->pause_rehash || ht->pause_shrink) return;
    size_t nb = num_buckets(ht->exp[0]);
    if (nb == 1 || ht->used[0] * MIN_FILL_DIVISOR >= nb * SLOTS) return;
    resize(ht, ht->used[0]);
}

static uint64_t monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int hashtable_rehash_micros(hashtable *ht, uint64_t us) {
    if (!is_rehashing(ht)) return 0;
    if (ht->pause_rehash) return 1;
    uint64_t start = monotonic_us();
    while (is_rehashing(ht)) {
        for (int i = 0; i < REHASH_BATCH && is_rehashing(ht); i++)
            rehash_step(ht);
        if (monotonic_us() - start >= us) break;
    }
    return is_rehashing(ht);
}

/* --------------------------------------------------- create and destroy */

hashtable *hashtable_create(const hashtable_type *type) {
    assert(type && type->entry_key);
    hashtable *ht = km_calloc(1, sizeof(*ht));
    ht->type = type;
    ht->exp[0] = ht->exp[1] = -1;
    ht->rehash_idx = -1;
    return ht;
}

void hashtable_empty(hashtable *ht) {
    for (int t = 0; t < 2; t++) {
        if (!ht->tables[t]) continue;
        size_t nb = num_buckets(ht->exp[t]);
        for (size_t i = 0; i < nb; i++)
            free_chain(ht, t, &ht->tables[t][i], 1);
        km_free(ht->tables[t]);
        ht->tables[t] = NULL;
        ht->exp[t] = -1;
        ht->used[t] = 0;
    }
    ht->rehash_idx = -1;
}

void hashtable_release(hashtable *ht) {
    if (!ht) return;
    hashtable_empty(ht);
    km_free(ht);
}

size_t hashtable_size(const hashtable *ht) {
    return ht->used[0] + ht->used[1];
}

size_t hashtable_mem_usage(const hashtable *ht) {
    size_t nb = num_buckets(ht->exp[0]) + num_buckets(ht->exp[1]);
    return sizeof(*ht) + (nb + ht->children[0] + ht->children[1]) * sizeof(bucket);
}

int hashtable_is_rehashing(const hashtable *ht) {
    return is_rehashing(ht);
}

/* ------------------------------------------------ find, add and delete */

typedef struct position {
    bucket *head; /* first bucket of the chain */
    bucket *b;    /* bucket holding the entry */
    int pos;
    int table;
} position;

static int locate(hashtable *ht, const void *key, size_t len, position *out) {
    if (hashtable_size(ht) == 0) return 0;
    uint64_t hash = hashtable_hash(key, len);
    uint8_t h2 = high_bits(hash);
    for (int t = 0; t < 2; t++) {
        if (!ht->tables[t]) continue;
        size_t idx = hash & exp_mask(ht->exp[t]);
        if (t == 0 && is_rehashing(ht) && idx < (size_t)ht->rehash_idx) continue;
        bucket *head = &ht->tables[t][idx];
        for (bucket *b = head; b; b = child_of(b)) {
            for (int pos = 0; pos < num_positions(b); pos++) {
                if (!is_present(b, pos) || b->hashes[pos] != h2) continue;
                if (!entry_has_key(ht, b->entries[pos], key, len)) continue;
                *out = (position){head, b, pos, t};
                return 1;
            }
        }
    }
    return 0;
}

void *hashtable_find(hashtable *ht, const void *key, size_t len) {
    void **ref = hashtable_find_ref(ht, key, len);
    return ref ? *ref : NULL;
}

void **hashtable_find_ref(hashtable *ht, const void *key, size_t len) {
    rehash_step_if_allowed(ht);
    position p;
    return locate(ht, key, len, &p) ? &p.b->entries[p.pos] : NULL;
}

int hashtable_add(hashtable *ht, void *entry, void **existing) {
    assert(entry);
    rehash_step_if_allowed(ht);
    size_t len;
    const void *key = ht->type->entry_key(entry, &len);
    position p;
    if (locate(ht, key, len, &p)) {
        if (existing) *existing = p.b->entries[p.pos];
        return 0;
    }
    grow_if_needed(ht);
    insert_entry(ht, is_rehashing(ht) ? 1 : 0, hashtable_hash(key, len), entry);
    return 1;
}

int hashtable_delete(hashtable *ht, const void *key, size_t len, void **popped) {
    rehash_step_if_allowed(ht);
    position p;
    if (!locate(ht, key, len, &p)) return 0;
    void *entry = p.b->entries[p.pos];
    clear_present(p.b, p.pos);
    p.b->entries[p.pos] = NULL;
    ht->used[p.table]--;
    if (ht->pause_rehash == 0) compact_chain(ht, p.table, p.head);
    if (popped)
        *popped = entry;
    else if (ht->type->entry_free)
        ht->type->entry_free(entry);
    hashtable_shrink_if_needed(ht);
    return 1;
}

/* --------------------------------------------------------------- sampling */

static size_t collect_chain(const bucket *b, void **out, size_t room) {
    size_t n = 0;
    for (; b && n < room; b = child_of(b)) {
        for (int pos = 0; pos < num_positions(b) && n < room; pos++)
            if (is_present(b, pos)) out[n++] = b->entries[pos];
    }
    return n;
}

/* Walks forward from a random bucket index; while rehashing, each step looks
 * at the index in both tables. Stops when count entries are collected, or
 * after 2 * count + 8 bucket indexes once at least one entry is found (a
 * sparse table must still yield one). Wrapping around a small table repeats
 * entries, which the contract allows. */
size_t hashtable_sample(hashtable *ht, void **out, size_t count) {
    if (count == 0 || hashtable_size(ht) == 0) return 0;
    rehash_step_if_allowed(ht);
    int8_t big = ht->exp[0] > ht->exp[1] ? ht->exp[0] : ht->exp[1];
    size_t big_mask = exp_mask(big);
    size_t idx = rng_next() & big_mask;
    size_t n = 0, limit = 2 * count + 8;
    for (size_t steps = 0; n < count && (n == 0 || steps < limit); steps++) {
        for (int t = 0; t < 2 && n < count; t++) {
            if (!ht->tables[t]) continue;
            n += collect_chain(&ht->tables[t][idx & exp_mask(ht->exp[t])], out + n, count - n);
        }
        idx = (idx + 1) & big_mask;
    }
    return n;
}

void *hashtable_random(hashtable *ht) {
    void *sample[RANDOM_SAMPLE];
    size_t n = hashtable_sample(ht, sample, RANDOM_SAMPLE);
    return n ? sample[rng_next() % n] : NULL;
}

/* ------------------------------------------------------------------- scan */

static uint64_t reverse_bits(uint64_t v) {
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((v & 0x0f0f0f0f0f0f0f0fULL) << 4);
    return __builtin_bswap64(v);
}

/* Increments the cursor's masked bits starting from the most significant one.
 * Visiting indexes in this order means that when the table doubles (index
 * i splits into i and i + size) or halves (they merge), the indexes already
 * visited map onto indexes the new order also treats as visited, so nothing
 * present for the whole scan is skipped. */
static size_t next_cursor(size_t cursor, size_t mask) {
    uint64_t v = cursor | ~(uint64_t)mask;
    v = reverse_bits(v);
    v++;
    return (size_t)reverse_bits(v);
}

static void scan_chain(hashtable *ht, int t, size_t idx, hashtable_scan_fn fn, void *priv) {
    bucket *head = &ht->tables[t][idx];
    for (bucket *b = head; b; b = child_of(b)) {
        for (int pos = 0; pos < num_positions(b); pos++)
            if (is_present(b, pos) && fn) fn(priv, b->entries[pos]);
    }
    /* Compact what the callbacks deleted, unless an outer pause (a safe
     * iterator, a nested scan) is walking this table too. */
    if (ht->pause_rehash == 1) compact_chain(ht, t, head);
}

size_t hashtable_scan(hashtable *ht, size_t cursor, hashtable_scan_fn fn, void *priv) {
    if (hashtable_size(ht) == 0) return 0;
    pause_all(ht);
    if (!is_rehashing(ht)) {
        size_t mask = exp_mask(ht->exp[0]);
        scan_chain(ht, 0, cursor & mask, fn, priv);
        cursor = next_cursor(cursor, mask);
    } else {
        /* Visit the smaller table's bucket, then every bucket of the larger
         * table that folds onto it (those differing only in the extra high
         * bits), which are consecutive in reverse-binary order. */
        int small = ht->exp[0] <= ht->exp[1] ? 0 : 1, large = 1 - small;
        size_t small_mask = exp_mask(ht->exp[small]);
        size_t large_mask = exp_mask(ht->exp[large]);
        scan_chain(ht, small, cursor & small_mask, fn, priv);
        do {
            scan_chain(ht, large, cursor & large_mask, fn, priv);
            cursor = next_cursor(cursor, large_mask);
        } while (cursor & (small_mask ^ large_mask));
    }
    resume_all(ht);
    return cursor;
}

/* -------------------------------------------------------------- iterators */

/* Anything an unsafe iterator's user could change by modifying the table. */
static uint64_t fingerprint(const hashtable *ht) {
    uint64_t parts[] = {(uint64_t)(uintptr_t)ht->tables[0],
                        (uint64_t)(uintptr_t)ht->tables[1],
                        (uint64_t)ht->exp[0],
                        (uint64_t)ht->exp[1],
                        ht->used[0],
                        ht->used[1],
                        ht->children[0],
                        ht->children[1],
                        (uint64_t)ht->rehash_idx};
    uint64_t h = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        h = (h ^ parts[i]) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h;
}

void hashtable_iter_init(hashtable_iter *it, hashtable *ht, int safe) {
    memset(it, 0, sizeof(*it));
    it->ht = ht;
    it->safe = safe;
    it->pos = -1; /* not started: the pause or fingerprint is taken lazily */
}

static void iter_start(hashtable_iter *it) {
    hashtable *ht = it->ht;
    if (it->safe)
        pause_all(ht);
    else
        it->fingerprint = fingerprint(ht);
    it->table = 0;
    /* Buckets of tables[0] below rehash_idx are empty: skip them. */
    it->index = is_rehashing(ht) ? (size_t)ht->rehash_idx : 0;
    it->bucket = ht->tables[0] ? &ht->tables[0][it->index] : NULL;
    it->pos = 0;
}

/* Moves to the next bucket index, or the other table, or the end. */
static void iter_next_bucket(hashtable_iter *it) {
    hashtable *ht = it->ht;
    it->pos = 0;
    if (++it->index >= num_buckets(ht->exp[it->table])) {
        if (it->table == 1 || !is_rehashing(ht)) {
            it->bucket = NULL;
            return;
        }
        it->table = 1;
        it->index = 0;
    }
    it->bucket = &ht->tables[it->table][it->index];
}

int hashtable_iter_next(hashtable_iter *it, void **entry) {
    if (it->pos == -1) iter_start(it);
    assert(it->safe || it->fingerprint == fingerprint(it->ht));
    while (it->bucket) {
        bucket *b = it->bucket;
        while (it->pos < num_positions(b)) {
            int pos = it->pos++;
            if (is_present(b, pos)) {
                *entry = b->entries[pos];
                return 1;
            }
        }
        if (b->chained) {
            it->bucket = child_of(b);
            it->pos = 0;
        } else {
            iter_next_bucket(it);
        }
    }
    return 0;
}

void hashtable_iter_reset(hashtable_iter *it) {
    if (it->pos != -1) {
        if (it->safe)
            resume_all(it->ht);
        else
            assert(it->fingerprint == fingerprint(it->ht) &&
                   "table modified during unsafe iteration");
    }
    it->pos = -1;
    it->bucket = NULL;
}
