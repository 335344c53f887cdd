/* slot.h -- hash slots: which of the 16384 slots a key belongs to, as
 * cluster clients compute it (CRC16/XMODEM of the key, or of its hash tag,
 * modulo 16384), so keys that must live together can be grouped with
 * `{tags}`. The per-slot tables of the keyspace are indexed by it.
 *
 * Threads: any; pure functions. */
#ifndef KEEL_SLOT_H
#define KEEL_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SLOT_COUNT 16384

/* CRC16 (polynomial 0x1021, initial value 0, no reflection: XMODEM). */
uint16_t slot_crc16(const char *buf, size_t len);

/* The key's slot. When the key holds a '{' followed later by a '}' with at
 * least one byte between them, only the bytes between the first '{' and
 * the first '}' after it are hashed: "{user1}.a" and "{user1}.b" share a
 * slot, "a{}b" hashes whole. */
unsigned slot_of_key(const char *key, size_t len);

#endif
