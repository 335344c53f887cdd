/* module_busy.c -- the long-running members of the call group (busy_yield,
 * busy_active) over the session layer's busy phase (session/busy.h), and
 * the end of a server-built ctx, which ends the phase it started.
 *
 * Only a command's ctx yields: the trampoline that built it ends the phase
 * when the command returns (module_ctx_done), so a phase never outlives its
 * command. A callback's or a filter's ctx runs between commands, where no
 * command's clock is running: its yield does nothing. One nested in a
 * command that is already busy serves a round but starts nothing. */
#include "common/common.h"
#include "module/module_internal.h"
#include "session/busy.h"

db *module_ctx_db(const keel_ctx *ctx) {
    if (ctx && ctx->c) return ctx->c->db;
    if (ctx && ctx->db) return ctx->db;
    return db_get(0);
}

void module_ctx_done(keel_ctx *ctx) {
    if (K_UNLIKELY(ctx->flags & MODULE_CTX_BUSY)) {
        ctx->flags &= ~MODULE_CTX_BUSY;
        busy_end(ctx->c);
    }
}

int module_api_busy_yield(keel_ctx *ctx, const char *busy_error) {
    MODULE_ASSERT_MAIN();
    if (!ctx || !ctx->c || !(ctx->flags & MODULE_CTX_MAY_BUSY)) return KEEL_OK;
    int entered = 0;
    int rc = busy_yield(ctx->c, busy_error, &entered);
    if (entered) ctx->flags |= MODULE_CTX_BUSY;
    return rc == K_OK ? KEEL_OK : KEEL_ERR;
}

int module_api_busy_active(void) {
    MODULE_ASSERT_MAIN();
    return busy_active();
}
