/* common.h -- return codes and small helpers shared by every subsystem. */
#ifndef KEEL_COMMON_H
#define KEEL_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The versions HELLO, INFO and `--version` report for compatibility. */
#define KEEL_REDIS_COMPAT_VERSION "7.2.4"
#define KEEL_VALKEY_COMPAT_VERSION "8.0.1"

#define K_OK 0
#define K_ERR -1
#define K_EAGAIN -2

#define K_LIKELY(x) __builtin_expect(!!(x), 1)
#define K_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define K_UNUSED(x) (void)(x)
#define K_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An owned, binary-safe byte string; ptr is NULL when empty, otherwise
 * NUL-terminated one byte past len (for logging), with NULs allowed inside. */
typedef struct kbytes {
    char *ptr;
    size_t len;
} kbytes;

#endif
