/* client_fixture.h -- driving session-layer clients without sockets, for
 * the unit tests that run commands through real clients (check_blocking,
 * check_pubsub): feed a request, take the replies as text, compare, and
 * read an INFO counter. */
#ifndef KEEL_TEST_CLIENT_FIXTURE_H
#define KEEL_TEST_CLIENT_FIXTURE_H

#include "common/common.h"
#include "server/info.h"
#include "session/client.h"
#include "session/reply.h"

#include <check.h>
#include <string.h>

static inline void feed(client *c, const char *raw) {
    client_feed_input(c, raw, strlen(raw));
}

/* Takes c's replies as a NUL-terminated string (a static buffer, valid
 * until the next call). */
static inline const char *take(client *c) {
    static char out[1 << 18];
    reply_buf b = {0};
    reply_take(c, &b);
    size_t n = b.len < sizeof(out) - 1 ? b.len : sizeof(out) - 1;
    if (n) memcpy(out, b.ptr, n);
    out[n] = '\0';
    reply_buf_free(&b);
    return out;
}

static inline void expect(client *c, const char *want) {
    const char *got = take(c);
    ck_assert_msg(strcmp(got, want) == 0, "want [%s] got [%s]", want, got);
}

/* An INFO field's value. */
static inline long long stat(const char *name) {
    long long v = -1;
    ck_assert_int_eq(info_stat_get(name, &v), K_OK);
    return v;
}

#endif
