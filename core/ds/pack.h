/* pack.h -- Keel's compact encoding: a sequence of entries, each a byte
 * string or a 64-bit integer, in one contiguous allocation.
 *
 * Small hashes, sets and sorted sets are one pack (a hash as field, value,
 * field, value...; a sorted set as member, score...), and a list is a chain
 * of packs (types/quicklist). OBJECT ENCODING calls it "listpack", as Valkey
 * calls its own compact encoding, so tools that read the name work.
 *
 * Layout (Keel's own; see pack.c): an 8-byte header (total bytes, entry
 * count), then the entries back to back. Each entry is a type/length
 * prefix, its payload, and a trailing length byte sequence that lets the
 * entry before any position be found, so both ends are O(1) and a walk
 * works in either direction. A string that is a canonical decimal integer
 * is stored as an integer (1 to 9 bytes), as Valkey's listpack does, and
 * read back as the same digits. Entries hold up to 2^32-1 bytes.
 *
 * Conversion to and from Valkey's listpack (for RDB) is one linear pass:
 * both are sequences of the same logical entries.
 *
 * Positions are byte offsets of entries inside the pack (size_t). 0 is
 * never a valid position (the header is there) and means "none": past the
 * end, before the start, not found. A position stays valid until the pack
 * is next modified; a function that modifies the pack returns the pack to
 * use from then on (it may have moved), as realloc does.
 *
 * Threads: a pack is plain memory; no locking, one thread at a time. */
#ifndef KEEL_PACK_H
#define KEEL_PACK_H

#include <stddef.h>
#include <stdint.h>

typedef unsigned char pack;

/* An entry as read: a string (s, len) or, when s is NULL, an integer v.
 * s points into the pack and is valid until the pack is modified. */
typedef struct pack_val {
    const unsigned char *s;
    size_t len;
    long long v;
} pack_val;

/* A new empty pack (8 bytes). Never fails (allocation failure aborts, as
 * every allocation in Keel). */
pack *pack_new(void);
void pack_free(pack *p);
/* Entries in the pack. */
size_t pack_count(const pack *p);
/* Bytes the pack uses (header and entries): MEMORY USAGE, the
 * *-max-listpack-* byte checks. */
size_t pack_bytes(const pack *p);

/* Walking: the first and last entries, the one after or before pos, the
 * entry at index i (negative: from the end, -1 the last). 0 when there is
 * none. pack_seek is O(n) from the nearer end. */
size_t pack_first(const pack *p);
size_t pack_last(const pack *p);
size_t pack_next(const pack *p, size_t pos);
size_t pack_prev(const pack *p, size_t pos);
size_t pack_seek(const pack *p, long long index);

/* Reads the entry at pos. */
void pack_get(const pack *p, size_t pos, pack_val *out);
/* Whether the entry at pos equals the bytes s[0..len) (an integer entry
 * equals its decimal digits). */
int pack_eq(const pack *p, size_t pos, const char *s, size_t len);
/* The first entry equal to s[0..len), starting at pos and then every
 * (skip+1)-th entry (skip 1 walks a hash's fields and jumps its values).
 * 0 if none. */
size_t pack_find(const pack *p, size_t pos, const char *s, size_t len, unsigned skip);

/* Modifications; each returns the pack (it may have moved) and, where it
 * says so, the position of the entry it wrote through *pos.
 * Inserts s[0..len) before the entry at *pos, or appends when *pos is 0;
 * *pos becomes the new entry's position. */
pack *pack_insert(pack *p, size_t *pos, const char *s, size_t len);
/* The same for an integer. */
pack *pack_insert_int(pack *p, size_t *pos, long long v);
/* Appends and prepends (no position needed). */
pack *pack_append(pack *p, const char *s, size_t len);
pack *pack_append_int(pack *p, long long v);
pack *pack_prepend(pack *p, const char *s, size_t len);
/* Replaces the entry at *pos with s[0..len) (or v); *pos is its new
 * position (the same offset: entries before it do not move). */
pack *pack_replace(pack *p, size_t *pos, const char *s, size_t len);
pack *pack_replace_int(pack *p, size_t *pos, long long v);
/* Deletes n entries starting at *pos (fewer if the pack ends first); *pos
 * becomes the position of the entry that followed them, or 0. */
pack *pack_delete(pack *p, size_t *pos, size_t n);
/* Deletes n entries starting at index i (negative: from the end). */
pack *pack_delete_range(pack *p, long long index, size_t n);
/* Appends every entry of src to dst in one copy (list node merges). */
pack *pack_merge(pack *dst, const pack *src);

/* Bytes an entry holding s[0..len) would take: lets a caller check a
 * byte limit before inserting. */
size_t pack_entry_size(const char *s, size_t len);

/* Checks the structure of an untrusted buffer of `size` bytes (RESTORE,
 * RDB loading, the fuzz target): 1 if it is a well-formed pack. With
 * `deep`, every entry is walked; otherwise only the header. */
int pack_validate(const unsigned char *buf, size_t size, int deep);

#endif
