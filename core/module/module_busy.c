/* module_busy.c -- the long-running members of the call group (busy_yield,
 * busy_active) over the session layer's busy phase (session/busy.h), and
 * the end of a server-built ctx, which ends the phase it started.
 *
 * Only a command's ctx may start the phase: the trampoline that built it
 * ends it when the command returns (module_ctx_done), so a phase never
 * outlives its command. A yield from another ctx, or one nested in a
 * command that is already busy, serves a round but starts nothing. */
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
    if (!ctx || !ctx->c) return KEEL_OK;
    int entered = 0;
    int rc = busy_yield(ctx->c, busy_error, &entered);
    if (entered) {
        if (ctx->flags & MODULE_CTX_MAY_BUSY)
            ctx->flags |= MODULE_CTX_BUSY;
        else /* a ctx nobody ends: the phase lasts this one call */
            busy_end(ctx->c);
    }
    return rc == K_OK ? KEEL_OK : KEEL_ERR;
}

int module_api_busy_active(void) {
    MODULE_ASSERT_MAIN();
    return busy_active();
}

/* The call group as this branch has it: only its long-running members.
 * The group's other members are module_call.c's (the calling-commands
 * work); when both are present this table goes and module_call.c's names
 * the two functions above. */
const keel_api_call module_api_call = {
    .size = sizeof(keel_api_call),
    .busy_yield = module_api_busy_yield,
    .busy_active = module_api_busy_active,
};
