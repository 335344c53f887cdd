/* hashtable.c -- the keyspace's hash table: open addressing over 64-byte
 * buckets, incremental rehashing, SCAN cursors, sampling and iterators.
 *
 * This file owns: the bucket and slot layout, the probing and deletion rules
 * that keep it consistent, the resize policy (fill factors below), the
 * incremental rehash state machine, the SipHash-1-2 hash and its process-wide
 * seed, the hash-space SCAN cursor, random sampling and the safe/unsafe
 * iterators. Entries belong to the caller; the table only stores their
 * pointers and asks the type for their keys.
 *
 * Slots. A bucket is one cache line of 8 uint64_t slots. A slot is 0 (empty)
 * or an entry pointer in its low 48 bits with a 16-bit tag on top: 4 bits of
 * displacement d and 12 bits of secondary hash (the hash's low 12 bits). A
 * lookup compares the tag first, so it almost never calls entry_key for an
 * entry that does not match. A bucket is full when all 8 slots are nonzero.
 *
 * Probing. An entry's home bucket is fastrange of the hash's top 32 bits:
 * ((h >> 32) * n) >> 32 for n home buckets (any n, not only powers of two).
 * It lives in bucket home + d, d = 0..15, and every bucket home..home+d-1 is
 * full (the invariant). Behind the n home buckets come `tail` more, at least
 * min(n, 15), so probing never wraps. Inserts place entries Robin Hood
 * style: passing a full bucket, the entry in hand takes the slot of the
 * bucket's entry nearest its own home if that one is nearer than the hand's,
 * and carries that one on, which keeps displacements short and even (this
 * moves entries forward, so it is not done while a walker pauses the table;
 * then an insert takes the first free slot). A lookup walks d = 0, 1, ... and stops
 * after the first bucket that is not full. Deletion shifts entries back
 * instead of leaving tombstones: after a slot of bucket q is emptied, the
 * first entry found in q+1, q+2, ... (while those are full) whose home is <= q
 * moves into the hole (its displacement shrinks) and the same is repeated for
 * the hole it left; entries only ever move backwards. An insert that finds no
 * free slot within displacement 15 (or the array's end) forces a resize.
 *
 * Tables. tables[0] is the table in use. While resizing, tables[1] is the new
 * table: new entries go there and each add/find/delete moves one home group of
 * tables[0] (home bucket rehash_idx, home buckets in increasing order) to
 * tables[1], deleting each entry from tables[0] with the backward shift, so
 * the invariant holds there throughout. A key whose old home is below
 * rehash_idx can only be in tables[1]; otherwise it is looked up in tables[0]
 * and then in tables[1] (where entries added meanwhile are). The new
 * home needs the whole hash, so the rehash recomputes it (entry_key and
 * SipHash, ~20 ns for a short key): the 12-bit secondary hash in the tag
 * cannot give it, and keeping 32 hash bits per slot would cost 4 more bytes
 * per entry for every entry all the time, to save work done once per entry
 * per resize.
 *
 * Sizes. Fill is entries / (8 * n home buckets); the tail is extra room.
 *   grow    when an add would take the fill over 90%, to the smallest table
 *           at or under 45% (or the type's grow_fill: collections' tables,
 *           which nothing compacts, grow 1.5x to 60%): a doubling, so a
 *           table being filled moves each
 *           entry about once (growing one allocator size class at a time,
 *           ~1.15x, kept the table tight but moved each entry about seven
 *           times and cost bulk loads 30% of their SET rate);
 *   compact (hashtable_compact_if_idle, from the cron) a table under 70%
 *           that has not grown for a second, to the smallest table at or
 *           under 80% (the next size class up from 90%): one more move per
 *           entry, done in the background, and the table is tight again;
 *   shrink  when the fill falls under 25%, to the smallest table at or under
 *           85% (rounding up to a size class lowers the fill by up to a fifth:
 *           a 72% target could end at 58%, 14 bytes per entry). The band
 *           between 25% and 90% is wide, so alternating adds and deletes never
 *           make the table thrash.
 * The compact target is 80% rather than "72%": asking for 72% and rounding
 * up could skip a class and end at 63%. Measured (jemalloc, 16-byte keys):
 * 8.9-11.1 bytes per entry, settled. Robin Hood placement (below) is what
 * lets the table reach 90%: with first-free-slot placement an insert found
 * no room within displacement 15 at 66-84% fill, forcing early resizes.
 * Allocations are 64-byte aligned and the table takes every bucket the
 * allocation holds (km_usable): jemalloc rounds large sizes up to classes
 * spaced four per doubling, which would otherwise waste up to 20%. An empty
 * table has no bucket array at all.
 *
 * Pausing. Scans and safe iterators hold a pause: while paused no rehash step
 * runs, no table is switched or shrunk. Deletions still shift entries back
 * within a table, which moves entries only from later positions into a hole
 * at or after the deleted slot: the iterator re-examines the slot it returned
 * from, and a scan finds home groups by displacement, so neither misses
 * anything. Only an insert that finds no room at all while paused and
 * rehashing (the new table filled up during the pause: more adds than the
 * table held) rebuilds the table at once; walkers notice (epoch) and are
 * safe in memory but may then return entries again. */
#include "ds/hashtable.h"

#include "common/kmem.h"

#include <assert.h>
#include <string.h>
#include <time.h>

#define SLOTS 8
#define MAX_DISP 15
#define MAX_TAIL 15
#define PTR_BITS 48
#define PTR_MASK ((UINT64_C(1) << PTR_BITS) - 1)
#define H2_BITS 12
#define H2_MASK ((1u << H2_BITS) - 1)
#define BUCKET_BYTES 64

#define GROW_PERCENT 90        /* grow when an add would pass this fill */
#define GROW_MAX_PERCENT 96    /* ... or this one, when no growth fits the budget */
#define GROW_TARGET_PERCENT 80 /* the tight size: smallest table at or under this */
/* An add that passes GROW_PERCENT doubles the table (to this fill), so a
 * table being filled moves each entry about once, not once per size class;
 * the cron then tightens it (hashtable_compact_if_idle) to GROW_TARGET_PERCENT
 * once it has stopped growing for COMPACT_QUIET_US and is under
 * COMPACT_PERCENT full. */
#define GROW_FAST_PERCENT 45
#define COMPACT_PERCENT 70
#define COMPACT_QUIET_US 1000000
#define SHRINK_PERCENT 25      /* shrink when the fill falls under this */
#define SHRINK_TARGET_PERCENT 85
#define SHRINK_RETRY_US 1000000 /* see shrink_fits() */
/* fastrange of a 32-bit position needs n <= 2^32; 2^31 home buckets is
 * 128 GiB of table, 15 billion entries. */
#define MAX_HOME ((size_t)1 << 31)
/* Rehash steps between clock reads in hashtable_rehash_micros(). */
#define REHASH_BATCH 100
/* hashtable_random() picks one entry out of a sample this big. */
#define RANDOM_SAMPLE 16
#define POS_SPACE (UINT64_C(1) << 32)

typedef struct bucket {
    uint64_t slots[SLOTS];
} bucket;

static_assert(sizeof(bucket) == BUCKET_BYTES, "a bucket must be exactly one 64-byte cache line");
static_assert(sizeof(size_t) == 8, "the scan cursor arithmetic assumes a 64-bit size_t");
static_assert(sizeof(void *) == 8, "slots hold 48-bit pointers of a 64-bit address space");

typedef struct table {
    bucket *b;    /* NULL: no table */
    size_t n;     /* home buckets */
    size_t total; /* home + tail buckets */
    size_t used;  /* entries */
    size_t bytes; /* the allocation's usable size */
} table;

struct hashtable {
    const hashtable_type *type;
    table t[2];
    int64_t rehash_idx;       /* next tables[0] home bucket to move; -1: not rehashing */
    int32_t pause_rehash;     /* >0: no rehash step, no switch (scan, safe iterator) */
    int32_t pause_shrink;     /* >0: deletions must not start a shrink */
    uint64_t epoch;           /* bumped when a paused table had to be rebuilt */
    size_t shrink_retry;      /* >0: a shrink did not fit; try again at this size */
    uint64_t shrink_check_us; /* ... or this long after (monotonic us) */
    uint64_t grown_us;        /* when an add last grew the table (monotonic us) */
    int deleted;              /* a delete happened since the last resize */
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

static inline int is_rehashing(const hashtable *ht) {
    return ht->rehash_idx != -1;
}

static inline void *slot_entry(uint64_t v) {
    return (void *)(uintptr_t)(v & PTR_MASK);
}

static inline unsigned slot_disp(uint64_t v) {
    return (unsigned)(v >> (PTR_BITS + H2_BITS));
}

/* The secondary hash is never 0, so no occupied slot has a zero tag: an
 * empty slot (all zero) never matches, and "tag == 0" means empty, which
 * lets a lookup test a whole bucket for both with one kind of compare. */
static inline unsigned secondary_hash(uint64_t hash) {
    unsigned h2 = (unsigned)(hash & H2_MASK);
    return h2 + (h2 == 0);
}

static inline uint64_t make_tag(unsigned disp, uint64_t hash) {
    return (uint64_t)((disp << H2_BITS) | secondary_hash(hash)) << PTR_BITS;
}

/* Which slots of b carry the 16-bit tag `tag16` (their top 16 bits): bit
 * 8*s+7 for slot s. With SSE2 (every x86-64) the eight tags are compared
 * four 16-byte loads at a time; elsewhere one slot at a time. */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline uint64_t bucket_tag_mask(const bucket *b, uint16_t tag16) {
    const __m128i want = _mm_set1_epi16((short)tag16);
    const __m128i *line = (const __m128i *)(const void *)b->slots;
    uint64_t m = 0;
    for (int i = 0; i < 4; i++) {
        __m128i eq = _mm_cmpeq_epi16(_mm_loadu_si128(line + i), want);
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(eq) << (16 * i);
    }
    /* The top byte of each slot's top 16-bit word (little endian). */
    return m & UINT64_C(0x8080808080808080);
}
#else
static inline uint64_t bucket_tag_mask(const bucket *b, uint16_t tag16) {
    uint64_t m = 0;
    for (int s = 0; s < SLOTS; s++)
        m |= (uint64_t)((uint16_t)(b->slots[s] >> PTR_BITS) == tag16) << (8 * s + 7);
    return m;
}
#endif

static inline uint64_t make_slot(void *entry, unsigned disp, uint64_t hash) {
    uint64_t p = (uint64_t)(uintptr_t)entry;
    /* User-space pointers on x86-64 and aarch64 (48-bit or 4-level paging)
     * are below 2^48; see the header. */
    assert(p != 0 && (p & ~PTR_MASK) == 0);
    return p | make_tag(disp, hash);
}

static inline uint64_t with_disp(uint64_t v, unsigned disp) {
    uint64_t keep = ~((uint64_t)0xf << (PTR_BITS + H2_BITS));
    return (v & keep) | ((uint64_t)disp << (PTR_BITS + H2_BITS));
}

static inline size_t home_of(uint64_t hash, size_t n) {
    return (size_t)(((hash >> 32) * (uint64_t)n) >> 32);
}

static inline int bucket_full(const bucket *b) {
    for (int s = 0; s < SLOTS; s++)
        if (!b->slots[s]) return 0;
    return 1;
}

/* Last bucket index an entry homed at `home` may occupy. */
static inline size_t probe_end(const table *t, size_t home) {
    size_t end = home + MAX_DISP;
    return end < t->total ? end : t->total - 1;
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

/* Home buckets needed so that `entries` fill at most `percent`. */
static size_t homes_for(size_t entries, unsigned percent) {
    if (entries > MAX_HOME) return MAX_HOME;
    size_t n = (entries * 100 + (size_t)SLOTS * percent - 1) / ((size_t)SLOTS * percent);
    if (n < 1) n = 1;
    return n > MAX_HOME ? MAX_HOME : n;
}

static inline int over_fill(size_t entries, size_t n, unsigned percent) {
    return entries * 100 > n * SLOTS * percent;
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

/* ------------------------------------------------------------- tables */

/* Bytes a table of n home buckets asks the allocator for. */
static size_t table_bytes_for(size_t n) {
    return (n + (n < MAX_TAIL ? n : MAX_TAIL)) * BUCKET_BYTES;
}

/* Allocates a table of at least min_n home buckets, using the whole of the
 * allocation: of its B buckets, the tail takes 15, or half when B < 30. */
static table table_alloc(size_t min_n) {
    size_t want = table_bytes_for(min_n);
    table t = {0};
    /* Big arrays come from the large-buffer arena, whose freed pages (the
     * old array after a resize) go back to the kernel once allocations
     * pause, instead of staying resident on an idle server. */
    t.b = km_alloc_large_aligned(BUCKET_BYTES, want);
    t.bytes = km_usable(t.b);
    size_t nb = t.bytes / BUCKET_BYTES;
    t.n = nb >= 2 * MAX_TAIL ? nb - MAX_TAIL : nb / 2;
    if (t.n > MAX_HOME) t.n = MAX_HOME;
    t.total = nb;
    assert(t.n >= min_n);
    memset(t.b, 0, nb * BUCKET_BYTES);
    return t;
}

static void table_free(table *t) {
    km_free_large(t->b);
    memset(t, 0, sizeof(*t));
}

/* Stores entry in table t, Robin Hood style when evict is set (not while a
 * walker pauses the table: eviction moves entries forward). Returns NULL, or the entry left
 * in hand when there is no room within displacement 15: then another entry
 * than `entry` may be the one left out, and the table holds the rest. */
static void *table_insert(table *t, uint64_t hash, void *entry, int evict) {
    uint64_t hand = make_slot(entry, 0, hash);
    size_t home = home_of(hash, t->n);
    for (size_t i = home; i < t->total; i++) {
        unsigned d = (unsigned)(i - home);
        if (d > MAX_DISP) break;
        bucket *b = &t->b[i];
        int richest = -1;
        unsigned rich_d = d;
        for (int s = 0; s < SLOTS; s++) {
            uint64_t v = b->slots[s];
            if (!v) {
                b->slots[s] = with_disp(hand, d);
                t->used++;
                return NULL;
            }
            if (evict && slot_disp(v) < rich_d) {
                rich_d = slot_disp(v);
                richest = s;
            }
        }
        if (richest >= 0) {
            uint64_t v = b->slots[richest];
            b->slots[richest] = with_disp(hand, d);
            hand = v;
            home = i - rich_d;
        }
    }
    return slot_entry(hand);
}

/* Empties slot s of bucket q and shifts entries back to keep the invariant. */
static void table_remove(table *t, size_t q, int s) {
    t->b[q].slots[s] = 0;
    t->used--;
    for (;;) {
        size_t end = q + MAX_DISP < t->total ? q + MAX_DISP : t->total - 1;
        size_t from_b = 0;
        int from_s = -1;
        for (size_t r = q + 1; r <= end && from_s < 0; r++) {
            bucket *b = &t->b[r];
            int full = 1;
            for (int j = 0; j < SLOTS; j++) {
                uint64_t v = b->slots[j];
                if (!v) {
                    full = 0;
                    continue;
                }
                if (from_s < 0 && slot_disp(v) >= r - q) {
                    from_b = r;
                    from_s = j;
                }
            }
            if (!full) break;
        }
        if (from_s < 0) return;
        uint64_t v = t->b[from_b].slots[from_s];
        t->b[q].slots[s] = with_disp(v, slot_disp(v) - (unsigned)(from_b - q));
        t->b[from_b].slots[from_s] = 0;
        q = from_b;
        s = from_s;
    }
}

typedef struct position {
    int table;
    size_t b;
    int s;
} position;

static inline __attribute__((always_inline)) int table_locate(const hashtable *ht, const table *t,
                                                              uint64_t hash, const void *key,
                                                              size_t len, position *out, int ti) {
    size_t home = home_of(hash, t->n), end = probe_end(t, home);
    for (size_t i = home; i <= end; i++) {
        const bucket *b = &t->b[i];
        uint16_t tag16 = (uint16_t)(make_tag((unsigned)(i - home), hash) >> PTR_BITS);
        for (uint64_t match = bucket_tag_mask(b, tag16); match; match &= match - 1) {
            int s = __builtin_ctzll(match) >> 3;
            if (!entry_has_key(ht, slot_entry(b->slots[s]), key, len)) continue;
            *out = (position){ti, i, s};
            return 1;
        }
        if (bucket_tag_mask(b, 0)) break; /* not full: the probe ends here */
    }
    return 0;
}

static inline __attribute__((always_inline)) int locate(hashtable *ht, const void *key, size_t len,
                                                        position *out) {
    if (ht->t[0].used + ht->t[1].used == 0) return 0;
    uint64_t hash = hashtable_hash(key, len);
    if (is_rehashing(ht)) {
        /* A home group below rehash_idx has moved; one at or past it may
         * still be in tables[0], and new entries are in tables[1]. */
        if (home_of(hash, ht->t[0].n) >= (size_t)ht->rehash_idx &&
            table_locate(ht, &ht->t[0], hash, key, len, out, 0))
            return 1;
        return table_locate(ht, &ht->t[1], hash, key, len, out, 1);
    }
    return ht->t[0].b && table_locate(ht, &ht->t[0], hash, key, len, out, 0);
}

/* ------------------------------------------------------------- rehashing */

static void finish_rehash(hashtable *ht) {
    assert(ht->t[0].used == 0);
    table_free(&ht->t[0]);
    ht->t[0] = ht->t[1];
    memset(&ht->t[1], 0, sizeof(ht->t[1]));
    ht->rehash_idx = -1;
}

/* Puts every entry of both tables into one new table of at least min_n home
 * buckets, at once (doubling until every entry fits), and ends any rehash.
 * Only for an insert that found no room where an incremental resize cannot
 * help. Entries are copied first, so a failed attempt loses nothing. */
static void rebuild(hashtable *ht, size_t min_n, void *extra, uint64_t extra_hash) {
    for (;;) {
        table nt = table_alloc(min_n);
        int ok = !extra || !table_insert(&nt, extra_hash, extra, 1);
        for (int ti = 0; ti < 2 && ok; ti++) {
            table *t = &ht->t[ti];
            for (size_t i = 0; i < t->total && ok; i++) {
                for (int s = 0; s < SLOTS && ok; s++) {
                    void *e = slot_entry(t->b[i].slots[s]);
                    if (e) ok = !table_insert(&nt, entry_hash(ht, e), e, 1);
                }
            }
        }
        if (ok) {
            table_free(&ht->t[0]);
            table_free(&ht->t[1]);
            ht->t[0] = nt;
            ht->rehash_idx = -1;
            ht->epoch++;
            return;
        }
        table_free(&nt);
        assert(min_n < MAX_HOME);
        min_n = min_n * 2 < MAX_HOME ? min_n * 2 : MAX_HOME;
    }
}

/* Moves the home group rehash_idx of tables[0] to tables[1]. */
static void rehash_step(hashtable *ht) {
    table *old = &ht->t[0], *nt = &ht->t[1];
    size_t home = (size_t)ht->rehash_idx, end = probe_end(old, home);
    for (size_t i = home; i <= end; i++) {
        bucket *b = &old->b[i];
        unsigned d = (unsigned)(i - home);
        for (int s = 0; s < SLOTS; s++) {
            /* The backward shift may bring another entry of this group into
             * the slot just emptied: look at it again. */
            while (b->slots[s] && slot_disp(b->slots[s]) == d) {
                void *entry = slot_entry(b->slots[s]);
                void *left = table_insert(nt, entry_hash(ht, entry), entry, 1);
                /* entry is in tables[1] unless it is the one left out. */
                if (left != entry) table_remove(old, i, s);
                if (left) {
                    /* Left out: entry (still in tables[0], copied from there)
                     * or one it evicted from tables[1] (then in neither). */
                    void *extra = left == entry ? NULL : left;
                    rebuild(ht, homes_for(old->used + nt->used + 1, GROW_TARGET_PERCENT), extra,
                            extra ? entry_hash(ht, extra) : 0);
                    return;
                }
            }
        }
        if (!bucket_full(b)) break;
    }
    ht->rehash_idx++;
    /* When the old table holds nothing more (common when shrinking a sparse
     * table) the remaining home groups are all empty: skip them. */
    if ((size_t)ht->rehash_idx == old->n || old->used == 0) finish_rehash(ht);
}

static void rehash_step_if_allowed(hashtable *ht) {
    if (is_rehashing(ht) && ht->pause_rehash == 0) rehash_step(ht);
}

/* Starts using a table of at least min_n home buckets: the first table is
 * allocated directly; otherwise a second one is and rehashing starts. */
static void resize(hashtable *ht, size_t min_n) {
    if (!ht->t[0].b) {
        ht->t[0] = table_alloc(min_n);
        return;
    }
    if (is_rehashing(ht)) return;
    table nt = table_alloc(min_n);
    if (nt.n == ht->t[0].n) { /* the same size class: nothing to gain */
        table_free(&nt);
        return;
    }
    ht->deleted = 0;
    ht->t[1] = nt;
    ht->rehash_idx = 0;
    /* Nothing to move: switch now, unless a paused walker is in tables[0]. */
    if (ht->t[0].used == 0 && ht->pause_rehash == 0) finish_rehash(ht);
}

static uint64_t monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Called before adding one entry. */
static void grow_if_needed(hashtable *ht) {
    size_t want = hashtable_size(ht) + 1;
    if (!ht->t[0].b) {
        resize(ht, homes_for(want, GROW_TARGET_PERCENT));
        return;
    }
    if (!over_fill(want, ht->t[is_rehashing(ht) ? 1 : 0].n, GROW_PERCENT)) return;
    if (is_rehashing(ht)) {
        /* Moving entries now would break a scan or safe iterator: let the
         * new table fill further until the pause ends. */
        if (ht->pause_rehash) return;
        /* Only happens when adds flood a table that just started shrinking
         * or outrun a growth's rehash: finish it so the table can grow. */
        while (is_rehashing(ht))
            rehash_step(ht);
        if (!over_fill(want, ht->t[0].n, GROW_PERCENT)) return;
    }
    if (ht->t[0].n >= MAX_HOME) return;
    /* Growing while paused is fine: the old table is left untouched. Near
     * a memory limit the doubling would push the server over (and make it
     * evict keys): the tight size is the smallest growth that makes room. */
    size_t n = homes_for(want, ht->type->grow_fill ? ht->type->grow_fill : GROW_FAST_PERCENT);
    if (ht->type->grow_budget) {
        size_t budget = ht->type->grow_budget();
        if (table_bytes_for(n) > budget) n = homes_for(want, GROW_TARGET_PERCENT);
        /* Not even the tight size fits: fill on towards GROW_MAX_PERCENT
         * first, as Valkey's dict declines to expand past maxmemory (CI: a
         * growth by one size class 4 KB under the limit made the next SET
         * evict). A placement that finds no room still grows the table
         * (insert_forced). */
        if (table_bytes_for(n) > budget && !over_fill(want, ht->t[0].n, GROW_MAX_PERCENT)) return;
    }
    resize(ht, n);
    ht->grown_us = monotonic_us();
}

/* No room for entry (not in the table) in the table it belongs to: make
 * some. Never fails. */
static void insert_forced(hashtable *ht, void *entry) {
    uint64_t hash = entry_hash(ht, entry);
    size_t want = hashtable_size(ht) + 1;
    size_t bigger = homes_for(want, GROW_TARGET_PERCENT);
    if (!ht->pause_rehash) {
        while (is_rehashing(ht))
            rehash_step(ht);
        entry = table_insert(&ht->t[0], hash, entry, 1);
        if (!entry) return;
        hash = entry_hash(ht, entry);
    } else if (is_rehashing(ht)) {
        /* An old home at or past rehash_idx is still looked up in tables[0]. */
        if (home_of(hash, ht->t[0].n) >= (size_t)ht->rehash_idx &&
            !table_insert(&ht->t[0], hash, entry, 0))
            return;
        size_t n1 = ht->t[1].n + ht->t[1].n / 4 + 1;
        rebuild(ht, bigger > n1 ? bigger : n1, entry, hash);
        return;
    }
    size_t n0 = ht->t[0].n + ht->t[0].n / 4 + 1;
    if (bigger < n0) bigger = n0;
    if (bigger > MAX_HOME) bigger = MAX_HOME;
    resize(ht, bigger);
    /* The new table is empty (or, if nothing had to move, it is tables[0]
     * and its entries fit at under 80%), so this succeeds but for the cap. */
    int ti = is_rehashing(ht) ? 1 : 0;
    if (!table_insert(&ht->t[ti], hash, entry, !ht->pause_rehash)) return;
    rebuild(ht, bigger, entry, hash);
}

/* Whether the entries of t would fit a table of n2 home buckets. They are
 * not spread evenly when deletions followed the hash order (active expiry
 * deletes keys in SCAN order, which is home order): below the scan's cursor
 * the table is sparse, above it as full as before, and a table sized for the
 * average would overflow there. Entries are in home order, so walking t's
 * buckets, each mapped to the same relative place of the smaller table,
 * gives the load of each new bucket; what does not fit is carried on, and
 * more than half of 15 buckets' worth carried means no. Reads every bucket
 * once: the caller does not ask again until 1/8 of the entries are gone or
 * a second has passed (the cron's calls then find the pass over). */
static int shrink_fits(const table *t, size_t n2) {
    size_t carry = 0, load = 0, cur = 0;
    for (size_t i = 0; i < t->total; i++) {
        size_t nb = (size_t)(((uint64_t)i * n2) / t->n);
        for (; cur < nb; cur++) {
            carry = carry + load > SLOTS ? carry + load - SLOTS : 0;
            load = 0;
            if (carry > SLOTS * MAX_DISP / 2) return 0;
        }
        for (int s = 0; s < SLOTS; s++)
            load += t->b[i].slots[s] != 0;
    }
    return carry + load <= SLOTS * (MAX_DISP / 2 + 1);
}

void hashtable_shrink_if_needed(hashtable *ht) {
    if (!ht->t[0].b || is_rehashing(ht) || ht->pause_rehash || ht->pause_shrink) return;
    table *t = &ht->t[0];
    if (t->used == 0) {
        table_free(t);
        ht->shrink_retry = 0;
        return;
    }
    if (t->n == 1 || t->used * 100 >= t->n * SLOTS * SHRINK_PERCENT) return;
    if (ht->shrink_retry && t->used > ht->shrink_retry &&
        monotonic_us() - ht->shrink_check_us < SHRINK_RETRY_US)
        return;
    size_t n = homes_for(t->used, SHRINK_TARGET_PERCENT);
    if (n >= t->n) return;
    if (!shrink_fits(t, n)) {
        ht->shrink_retry = t->used - t->used / 8;
        ht->shrink_check_us = monotonic_us();
        return;
    }
    ht->shrink_retry = 0;
    resize(ht, n);
}

void hashtable_compact(hashtable *ht, size_t budget);

void hashtable_compact_if_idle(hashtable *ht, size_t budget) {
    if (monotonic_us() - ht->grown_us < COMPACT_QUIET_US) return;
    hashtable_compact(ht, budget);
}

void hashtable_compact(hashtable *ht, size_t budget) {
    table *t = &ht->t[0];
    if (!t->b || is_rehashing(ht) || ht->pause_rehash || ht->pause_shrink) return;
    if (t->used * 100 >= t->n * SLOTS * COMPACT_PERCENT) return;
    size_t n = homes_for(t->used, GROW_TARGET_PERCENT);
    if (n >= t->n) return;
    /* The new array is held beside the old one until the move ends. */
    if (table_bytes_for(n) > budget) return;
    /* Entries added in any order sit evenly by hash; after deletes (active
     * expiry deletes in home order) check that they fit, as a shrink does. */
    if (ht->deleted && !shrink_fits(t, n)) return;
    resize(ht, n);
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
    ht->rehash_idx = -1;
    return ht;
}

void hashtable_empty(hashtable *ht) {
    for (int ti = 0; ti < 2; ti++) {
        table *t = &ht->t[ti];
        if (!t->b) continue;
        if (ht->type->entry_free) {
            for (size_t i = 0; i < t->total; i++)
                for (int s = 0; s < SLOTS; s++)
                    if (t->b[i].slots[s]) ht->type->entry_free(slot_entry(t->b[i].slots[s]));
        }
        table_free(t);
    }
    ht->rehash_idx = -1;
}

void hashtable_release(hashtable *ht) {
    if (!ht) return;
    hashtable_empty(ht);
    km_free(ht);
}

size_t hashtable_size(const hashtable *ht) {
    return ht->t[0].used + ht->t[1].used;
}

size_t hashtable_mem_usage(const hashtable *ht) {
    return sizeof(*ht) + ht->t[0].bytes + ht->t[1].bytes;
}

size_t hashtable_buckets(const hashtable *ht) {
    return ht->t[0].total + ht->t[1].total;
}

int hashtable_is_rehashing(const hashtable *ht) {
    return is_rehashing(ht);
}

/* ------------------------------------------------ find, add and delete */

void *hashtable_find(hashtable *ht, const void *key, size_t len) {
    rehash_step_if_allowed(ht);
    position p;
    if (!locate(ht, key, len, &p)) return NULL;
    return slot_entry(ht->t[p.table].b[p.b].slots[p.s]);
}

void *hashtable_find_pos(hashtable *ht, const void *key, size_t len, hashtable_pos *pos) {
    rehash_step_if_allowed(ht);
    position p;
    if (!locate(ht, key, len, &p)) return NULL;
    uint64_t *slot = &ht->t[p.table].b[p.b].slots[p.s];
    pos->slot = slot;
    pos->table = p.table;
    return slot_entry(*slot);
}

void hashtable_store_at(hashtable *ht, const hashtable_pos *pos, void *entry) {
    uint64_t *slot = pos->slot;
    assert(pos->table >= 0 && pos->table < 2 && ht->t[pos->table].b);
    assert(*slot != 0);
    uint64_t p = (uint64_t)(uintptr_t)entry;
    assert(p != 0 && (p & ~PTR_MASK) == 0);
    *slot = (*slot & ~PTR_MASK) | p;
}

int hashtable_add(hashtable *ht, void *entry, void **existing) {
    assert(entry);
    /* Two steps: a growth is only ~1.15x, and the rehash (one home group of
     * the old table per step) must end before adds fill the new table. */
    rehash_step_if_allowed(ht);
    rehash_step_if_allowed(ht);
    size_t len;
    const void *key = ht->type->entry_key(entry, &len);
    position p;
    if (locate(ht, key, len, &p)) {
        if (existing) *existing = slot_entry(ht->t[p.table].b[p.b].slots[p.s]);
        return 0;
    }
    grow_if_needed(ht);
    uint64_t hash = hashtable_hash(key, len);
    void *left = table_insert(&ht->t[is_rehashing(ht) ? 1 : 0], hash, entry, !ht->pause_rehash);
    if (left) insert_forced(ht, left);
    return 1;
}

int hashtable_delete(hashtable *ht, const void *key, size_t len, void **popped) {
    rehash_step_if_allowed(ht);
    position p;
    if (!locate(ht, key, len, &p)) return 0;
    table *t = &ht->t[p.table];
    void *entry = slot_entry(t->b[p.b].slots[p.s]);
    table_remove(t, p.b, p.s);
    ht->deleted = 1;
    if (popped)
        *popped = entry;
    else if (ht->type->entry_free)
        ht->type->entry_free(entry);
    hashtable_shrink_if_needed(ht);
    return 1;
}

/* --------------------------------------------------------------- sampling */

/* Walks forward from a random point, the same relative point of each table
 * while rehashing, collecting whole buckets. Stops when count entries are
 * collected, or after 2 * count + 8 buckets once at least one entry is found
 * (a sparse table must still yield one). Wrapping around a small table
 * repeats entries, which the contract allows. */
size_t hashtable_sample(hashtable *ht, void **out, size_t count) {
    if (count == 0 || hashtable_size(ht) == 0) return 0;
    rehash_step_if_allowed(ht);
    uint64_t r = rng_next() >> 32;
    size_t idx[2];
    for (int ti = 0; ti < 2; ti++)
        idx[ti] = (size_t)((r * ht->t[ti].total) >> 32);
    size_t n = 0, limit = 2 * count + 8;
    for (size_t steps = 0; n < count && (n == 0 || steps < limit); steps++) {
        for (int ti = 0; ti < 2 && n < count; ti++) {
            table *t = &ht->t[ti];
            if (!t->used) continue;
            const bucket *b = &t->b[idx[ti]];
            for (int s = 0; s < SLOTS && n < count; s++)
                if (b->slots[s]) out[n++] = slot_entry(b->slots[s]);
            if (++idx[ti] == t->total) idx[ti] = 0;
        }
    }
    return n;
}

void *hashtable_random(hashtable *ht) {
    void *sample[RANDOM_SAMPLE];
    size_t n = hashtable_sample(ht, sample, RANDOM_SAMPLE);
    return n ? sample[rng_next() % n] : NULL;
}

/* Uniform pick: a random slot of all the buckets (both tables while
 * rehashing) is drawn until one holds an entry, so every entry has the same
 * chance (hashtable_sample favours entries after empty stretches and
 * repeats a small table's). Tables are at least a quarter full outside a
 * paused shrink, so few draws are needed; after FAIR_TRIES misses the
 * sample decides. */
#define FAIR_TRIES 64

void *hashtable_fair_random(hashtable *ht) {
    if (hashtable_size(ht) == 0) return NULL;
    rehash_step_if_allowed(ht);
    size_t slots[2];
    for (int ti = 0; ti < 2; ti++)
        slots[ti] = ht->t[ti].b ? ht->t[ti].total * SLOTS : 0;
    for (int i = 0; i < FAIR_TRIES; i++) {
        uint64_t r = rng_next() % (slots[0] + slots[1]);
        const table *t = &ht->t[r < slots[0] ? 0 : 1];
        if (r >= slots[0]) r -= slots[0];
        uint64_t v = t->b[r / SLOTS].slots[r % SLOTS];
        if (v) return slot_entry(v);
    }
    return hashtable_random(ht);
}

/* ------------------------------------------------------------------- scan */

/* First position (of the 2^32 of the hash's top bits) of home bucket b. */
static inline uint64_t bucket_start(size_t b, size_t n) {
    return ((uint64_t)b * POS_SPACE + n - 1) / n;
}

/* Calls fn on every entry whose home is bucket `home` of table ti, collected
 * first (the callback may delete the entry it is given). Returns 0 if the
 * table was rebuilt meanwhile. */
static int scan_group(hashtable *ht, int ti, size_t home, hashtable_scan_fn fn, void *priv) {
    void *group[SLOTS * (MAX_DISP + 1)];
    size_t k = 0;
    table *t = &ht->t[ti];
    if (!t->b || home >= t->n) return 1;
    size_t end = probe_end(t, home);
    for (size_t i = home; i <= end; i++) {
        const bucket *b = &t->b[i];
        for (int s = 0; s < SLOTS; s++)
            if (b->slots[s] && slot_disp(b->slots[s]) == i - home)
                group[k++] = slot_entry(b->slots[s]);
        if (!bucket_full(b)) break;
    }
    uint64_t epoch = ht->epoch;
    for (size_t j = 0; j < k && fn; j++) {
        fn(priv, group[j]);
        if (ht->epoch != epoch) return 0;
    }
    return 1;
}

/* The cursor is a position p in the hash's top 32 bits. One call visits the
 * home bucket b holding p in the smaller table (while rehashing) and every
 * home bucket of the larger one overlapping b's range of positions, and
 * returns the first position after that range. Positions only grow, and
 * every call covers all positions from its cursor up to the one returned in
 * both tables, whatever their sizes: an entry present for the whole scan is
 * seen at least once across any number of resizes. */
size_t hashtable_scan(hashtable *ht, size_t cursor, hashtable_scan_fn fn, void *priv) {
    if (hashtable_size(ht) == 0 || cursor >= POS_SPACE) return 0;
    pause_all(ht);
    int small = 0;
    if (is_rehashing(ht) && ht->t[1].n < ht->t[0].n) small = 1;
    size_t ns = ht->t[small].n;
    size_t b = (size_t)(((uint64_t)cursor * ns) >> 32);
    uint64_t lo = bucket_start(b, ns), hi = bucket_start(b + 1, ns);
    uint64_t next = hi >= POS_SPACE ? 0 : hi;
    if (!scan_group(ht, small, b, fn, priv)) {
        next = cursor;
    } else if (is_rehashing(ht)) {
        int large = 1 - small;
        size_t nl = ht->t[large].n;
        size_t first = (size_t)((lo * nl) >> 32), last = (size_t)(((hi - 1) * nl) >> 32);
        for (size_t i = first; i <= last; i++) {
            if (!scan_group(ht, large, i, fn, priv)) {
                next = cursor; /* rebuilt under us: this range again */
                break;
            }
            if (!is_rehashing(ht)) break;
        }
    }
    resume_all(ht);
    return (size_t)next;
}

/* -------------------------------------------------------------- iterators */

/* Anything an unsafe iterator's user could change by modifying the table. */
static uint64_t fingerprint(const hashtable *ht) {
    uint64_t parts[] = {(uint64_t)(uintptr_t)ht->t[0].b,
                        (uint64_t)(uintptr_t)ht->t[1].b,
                        ht->t[0].n,
                        ht->t[1].n,
                        ht->t[0].used,
                        ht->t[1].used,
                        ht->epoch,
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
    it->slot = -1; /* not started: the pause or fingerprint is taken lazily */
}

static void iter_rewind(hashtable_iter *it) {
    hashtable *ht = it->ht;
    it->table = 0;
    /* Buckets of tables[0] below rehash_idx are empty: skip them. */
    it->index = is_rehashing(ht) ? (size_t)ht->rehash_idx : 0;
    it->slot = 0;
    it->last = NULL;
    it->epoch = ht->epoch;
}

int hashtable_iter_next(hashtable_iter *it, void **entry) {
    hashtable *ht = it->ht;
    if (it->slot == -1) {
        if (it->safe)
            pause_all(ht);
        else
            it->fingerprint = fingerprint(ht);
        iter_rewind(it);
    }
    assert(it->safe || it->fingerprint == fingerprint(ht));
    /* A rebuild (see the top of hashtable.c) moved everything: start over. */
    if (it->epoch != ht->epoch) iter_rewind(it);
    if (it->last) {
        /* Still there: go past it. Deleted: the backward shift may have
         * moved a later entry into its slot, which is then looked at. */
        table *t = &ht->t[it->table];
        if (it->index < t->total && slot_entry(t->b[it->index].slots[it->slot]) == it->last)
            it->slot++;
        it->last = NULL;
    }
    for (;;) {
        table *t = &ht->t[it->table];
        if (it->slot == SLOTS) {
            it->slot = 0;
            it->index++;
        }
        if (it->index >= t->total) {
            if (it->table == 1 || !is_rehashing(ht)) return 0;
            it->table = 1;
            it->index = 0;
            it->slot = 0;
            continue;
        }
        uint64_t v = t->b[it->index].slots[it->slot];
        if (v) {
            it->last = slot_entry(v);
            *entry = it->last;
            return 1;
        }
        it->slot++;
    }
}

void hashtable_iter_reset(hashtable_iter *it) {
    if (it->slot != -1) {
        if (it->safe)
            resume_all(it->ht);
        else
            assert(it->fingerprint == fingerprint(it->ht) &&
                   "table modified during unsafe iteration");
    }
    it->slot = -1;
    it->last = NULL;
}
