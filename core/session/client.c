/* client.c -- client lifecycle, the read path (query buffer, parsing, big
 * arguments), command dispatch, and the write path (reply chain, writev).
 *
 * Both I/O paths are split into a step that touches only the client's own
 * buffers and its connection (client_read_step, client_write_step: these
 * run inline or on an I/O thread) and a finish on the main thread
 * (client_read_done, client_write_done) that applies the result. */
#include "session/client.h"

#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "ds/hashtable.h"
#include "io/io_threads.h"
#include "session/blocking.h"
#include "session/busy.h"
#include "session/call.h"
#include "session/pubsub.h"
#include "session/latency.h"
#include "session/monitor.h"
#include "session/pause.h"
#include "session/reply.h"
#include "session/tracking.h"
#include "keyspace/evict.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

METRICS_DESCS(session_metric_descs, session_metrics, SESSION_METRICS);

const session_options *session_opts_in_use;
session_metrics *session_stats_in_use;
static client *clients_head;
static unsigned long connected_clients;
static uint64_t next_client_id;
static client *current_client;
/* The client whose request is served: current_client, or around a
 * module's nested call the client that called. */
static client *serving_client;
static hashtable *clients_by_id; /* the same clients, by id */

void session_setup(const session_options *o, session_metrics *m) {
    session_opts_in_use = o;
    session_stats_in_use = m;
}

void session_teardown(void) {
    if (clients_by_id && !hashtable_size(clients_by_id)) {
        hashtable_release(clients_by_id);
        clients_by_id = NULL;
    }
    session_opts_in_use = NULL;
    session_stats_in_use = NULL;
    next_client_id = 0;
}

client *client_list_head(void) {
    return clients_head;
}

unsigned long client_count(void) {
    return connected_clients;
}

client *client_current(void) {
    return current_client;
}

client *client_serving(void) {
    return serving_client;
}

#define CLIENT_WRITEV_IOVS 128
#define CLIENT_WRITE_MAX (256 * 1024) /* bytes per client per event-loop iteration */
/* An I/O thread writes more per job: it stalls no one (small jobs do not
 * queue behind large ones), and each job costs a round trip through the
 * main thread. */
#define CLIENT_WRITE_MAX_THREADED (4 * 1024 * 1024)
/* Reads in a row while the transport holds buffered bytes (TLS records the
 * socket will not announce): drains a burst without starving others. */
#define CLIENT_PENDING_ROUNDS 16
/* An argv array grown past this many slots by one huge request (SADD of a
 * hundred thousand members) is freed after it runs, as Valkey frees argv
 * after every command: an idle client must not pin megabytes. */
#define CLIENT_ARGV_KEEP_MAX 4096

/* Clients that have replies to send: written in before-sleep. */
static client *pending_head;
/* Clients to free once no command of theirs is on the stack. */
static client **close_list;
static size_t close_count, close_cap;

/* Clients by id: invalidation messages and redirects look them up for
 * every key that changes (CLIENT TRACKING), so not by walking the list. */
static const void *client_id_key(const void *entry, size_t *len) {
    *len = sizeof(uint64_t);
    return &((const client *)entry)->id;
}

static const hashtable_type client_id_type = {.entry_key = client_id_key};

static void client_link(client *c) {
    if (!clients_by_id) clients_by_id = hashtable_create(&client_id_type);
    hashtable_add(clients_by_id, c, NULL);
    c->next = clients_head;
    if (clients_head) clients_head->prev = c;
    clients_head = c;
    connected_clients++;
}

static void client_unlink(client *c) {
    /* A detached client was never linked. */
    if (!hashtable_delete(clients_by_id, &c->id, sizeof(c->id), NULL)) return;
    if (c->prev) c->prev->next = c->next;
    else
        clients_head = c->next;
    if (c->next) c->next->prev = c->prev;
    connected_clients--;
}

void client_schedule_write(client *c) {
    c->flags |= CLIENT_PENDING_WRITE;
    c->pw_prev = NULL;
    c->pw_next = pending_head;
    if (pending_head) pending_head->pw_prev = c;
    pending_head = c;
}

static void client_unschedule_write(client *c) {
    if (!(c->flags & CLIENT_PENDING_WRITE)) return;
    if (c->pw_prev) c->pw_prev->pw_next = c->pw_next;
    else pending_head = c->pw_next;
    if (c->pw_next) c->pw_next->pw_prev = c->pw_prev;
    c->pw_prev = c->pw_next = NULL;
    c->flags &= ~CLIENT_PENDING_WRITE;
}

static client *client_alloc(conn *cn) {
    client *c = km_calloc(1, sizeof(*c));
    c->id = ++next_client_id;
    c->conn = cn;
    c->resp = 2;
    c->ctime = c->last_interaction = event_cached_ms();
    client_set_db(c, 0);
    resp_parser_init(&c->parser);
    c->parser.max_bulk_len = session_opts()->proto_max_bulk_len;
    if (!session_opts()->requirepass.ptr) c->flags |= CLIENT_AUTHENTICATED;
    if (cn) {
        cn->private_data = c;
        conn_set_nodelay(cn, 1);
        if (session_opts()->tcp_keepalive > 0 && !cn->type->is_local)
            conn_set_keepalive(cn, session_opts()->tcp_keepalive);
        conn_set_read_handler(cn, client_read_handler);
    }
    return c;
}

client *client_create(conn *cn) {
    client *c = client_alloc(cn);
    client_link(c);
    return c;
}

client *client_create_detached(void) {
    return client_alloc(NULL);
}

void client_set_db(client *c, int id) {
    c->db = db_get(id);
}

static void client_free_reply(client *c) {
    reply_block *b = c->reply_head;
    while (b) {
        reply_block *next = b->next;
        if (b->obj) obj_decref(b->obj);
        km_free(b);
        b = next;
    }
    c->reply_head = c->reply_tail = NULL;
    c->reply_bytes = 0;
}

/* Big-argument objects the parser holds for the request in progress. */
static void client_release_parser_bigs(client *c) {
    for (int i = 0; i < c->parser.argc; i++)
        if (c->parser.argv[i].big) obj_decref(c->parser.argv[i].big);
    c->parser.argc = 0;
    if (c->big) {
        obj_decref(c->big);
        c->big = NULL;
    }
}

static void client_free_now(client *c) {
    blocking_forget(c);
    if (c->tracking || (c->flags & CLIENT_TRACKING)) tracking_disable(c);
    pubsub_client_release(c);
    pause_forget(c);
    monitor_forget(c);
    client_unschedule_write(c);
    call_client_event(
        c, CALL_EVENT_CLOSE); /* the transaction code's hook drops MULTI and WATCH state */
    client_release_parser_bigs(c);
    resp_parser_free(&c->parser);
    client_free_reply(c);
    if (c->conn) conn_close(c->conn);
    client_unlink(c);
    km_free(c->qbuf);
    km_free(c->argv);
    km_free(c->name);
    km_free(c->lib_name);
    km_free(c->lib_ver);
    km_free(c->reply_deferred); /* only if a command left a header open */
    km_free(c);
}

void client_free_async(client *c) {
    if (c->flags & CLIENT_CLOSE_ASAP) return;
    c->flags |= CLIENT_CLOSE_ASAP;
    if (close_count == close_cap) {
        close_cap = close_cap ? close_cap * 2 : 16;
        close_list = km_realloc(close_list, close_cap * sizeof(client *));
    }
    close_list[close_count++] = c;
}

/* A client that is executing, or whose I/O job is in flight, is freed
 * later: by client_free_closed() once the job came back. */
void client_free(client *c) {
    if ((c->flags & CLIENT_PROTECTED) || c->io_job) client_free_async(c);
    else if (!(c->flags & CLIENT_CLOSE_ASAP)) client_free_now(c);
}

void client_free_closed(void) {
    /* Index-walk: freeing may queue more (module close hooks). */
    size_t keep = 0;
    for (size_t i = 0; i < close_count; i++) {
        client *c = close_list[i];
        /* A protected one is the busy client of a long command, whose
         * rounds close others: it goes once its command is over. */
        if (c->io_job || (c->flags & CLIENT_PROTECTED))
            close_list[keep++] = c;
        else client_free_now(c);
    }
    close_count = keep;
}

/* ---- arguments ---- */

karg *client_copy_args(int argc, const karg *argv) {
    karg *copy = km_alloc(sizeof(karg) * (size_t)(argc ? argc : 1));
    for (int i = 0; i < argc; i++) {
        copy[i].len = argv[i].len;
        copy[i].obj = argv[i].obj ? obj_incref(argv[i].obj) : NULL;
        copy[i].ptr = copy[i].obj ? copy[i].obj->v.ptr : km_strndup(argv[i].ptr, argv[i].len);
    }
    return copy;
}

void client_free_args(int argc, karg *argv) {
    for (int i = 0; i < argc; i++) {
        if (argv[i].obj) obj_decref(argv[i].obj);
        else km_free((char *)argv[i].ptr);
    }
    km_free(argv);
}

/* Points c->argv at the parsed request: slices of the query buffer, or the
 * big-argument objects. */
static void client_load_args(client *c) {
    resp_parser *p = &c->parser;
    if (p->argc > c->argv_cap) {
        c->argv_cap = p->argc;
        c->argv = km_realloc(c->argv, sizeof(karg) * (size_t)c->argv_cap);
    }
    const char *base = c->qbuf + c->qbuf_pos;
    for (int i = 0; i < p->argc; i++) {
        resp_arg *a = &p->argv[i];
        c->argv[i].len = a->len;
        c->argv[i].obj = a->big;
        c->argv[i].ptr = a->big ? ((kobj *)a->big)->v.ptr : base + a->off;
        if (a->big) ((kobj *)a->big)->len = a->len;
    }
    c->argc = p->argc;
}

/* ---- the read path ---- */

static void client_proto_error(client *c) {
    reply_errorf(c, "ERR %s", c->parser.error);
    log_write(LL_VERBOSE, "Protocol error (%s) from client id=%llu", c->parser.error,
              (unsigned long long)c->id);
    c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

/* A big bulk starts: allocate the buffer that will become the value and
 * move in what the query buffer already holds of it. */
static void client_start_big(client *c) {
    resp_parser *p = &c->parser;
    size_t len = (size_t)p->big_len;
    size_t avail = c->qbuf_len - c->qbuf_pos - p->pos;
    size_t take = avail < len ? avail : len;
    c->big = obj_string_alloc(len);
    memcpy(c->big->v.ptr, c->qbuf + c->qbuf_pos + p->pos, take);
    c->big_filled = take;
    c->big_taken = take;
}

static int client_finish_big_if_full(client *c) {
    if (!c->big || c->big_filled < (size_t)c->parser.big_len) return 0;
    c->big->len = c->big_filled;
    c->big->v.ptr[c->big->len] = '\0';
    resp_parser_big_done(&c->parser, c->big, c->big_taken);
    c->big_direct += c->big_filled - c->big_taken; /* bytes that bypassed the query buffer */
    c->big = NULL;
    return 1;
}

static void client_compact_qbuf(client *c) {
    if (c->qbuf_pos == 0) return;
    size_t left = c->qbuf_len - c->qbuf_pos;
    if (left) memmove(c->qbuf, c->qbuf + c->qbuf_pos, left);
    c->qbuf_len = left;
    c->qbuf_pos = 0;
}

static void client_run_request(client *c) {
    client_load_args(c);
    if (c->argc > 0) client_execute(c);
    /* Big arguments are owned by argv now; commands that kept them took
     * their own reference. */
    for (int i = 0; i < c->argc; i++)
        if (c->argv[i].obj) obj_decref(c->argv[i].obj);
    c->argc = 0;
    if (c->argv_cap > CLIENT_ARGV_KEEP_MAX) {
        km_free(c->argv);
        c->argv = NULL;
        c->argv_cap = 0;
    }
    c->parser.argc = 0;
    c->qbuf_pos += c->parser.consumed;
    c->big_direct = 0;
    resp_parser_reset(&c->parser);
}

/* The limits a request is parsed under (set on the main thread: they
 * depend on configuration and authentication). */
static void client_set_parse_limits(client *c) {
    c->parser.unauthenticated = session_opts()->requirepass.ptr && !(c->flags & CLIENT_AUTHENTICATED);
    c->parser.max_bulk_len = session_opts()->proto_max_bulk_len;
}

/* Parses and runs every complete request in the query buffer. A client
 * that blocks stops here: the requests after it wait in the buffer until
 * client_resume_input. */
static void client_process_input(client *c) {
    /* Already protected (a busy phase holds it): it stays so after. */
    uint32_t had_protected = c->flags & CLIENT_PROTECTED;
    c->flags |= CLIENT_PROTECTED;
    while (!(c->flags & (CLIENT_CLOSE_AFTER_REPLY | CLIENT_CLOSE_ASAP | CLIENT_PAUSED)) &&
           !c->big && !c->bstate) {
        resp_status st;
        if (c->io_parsed) { /* the read step parsed this one already */
            st = c->io_status;
            c->io_parsed = 0;
        } else {
            client_set_parse_limits(c);
            st = resp_parse(&c->parser, c->qbuf + c->qbuf_pos, c->qbuf_len - c->qbuf_pos);
        }
        if (st == RESP_INCOMPLETE) break;
        if (st == RESP_PROTO_ERROR) {
            client_proto_error(c);
            break;
        }
        if (st == RESP_NEED_BIG) {
            client_start_big(c);
            if (!client_finish_big_if_full(c)) break;
            continue;
        }
        client_run_request(c);
    }
    if (!had_protected) c->flags &= ~CLIENT_PROTECTED;
    client_compact_qbuf(c);
}

/* What a client has sent and the server not yet run: the query buffer, the
 * bytes of the current request read straight into big values (the copy-free
 * path must not bypass the limit: a never-finished 500 MB bulk would stay
 * open), and the commands queued by MULTI. */
static size_t client_pending_input(const client *c) {
    size_t n = c->qbuf_len - c->qbuf_pos + c->big_direct + c->mbytes;
    if (c->big) n += c->big_filled - c->big_taken;
    return n;
}

static int client_qbuf_over_limit(client *c) {
    if ((long long)client_pending_input(c) <= session_opts()->client_max_querybuf_len) return 0;
    log_write(LL_WARNING, "Closing client id=%llu that reached max query buffer length",
              (unsigned long long)c->id);
    session_stats()->client_query_buffer_limit_disconnections++;
    return 1;
}

/* Makes room for one read of CLIENT_IOBUF_LEN bytes. */
static void client_reserve_qbuf(client *c) {
    if (c->qbuf_cap - c->qbuf_len >= CLIENT_IOBUF_LEN) return;
    size_t cap = c->qbuf_cap ? c->qbuf_cap * 2 : CLIENT_IOBUF_LEN;
    while (cap - c->qbuf_len < CLIENT_IOBUF_LEN) cap *= 2;
    c->qbuf = km_realloc(c->qbuf, cap);
    c->qbuf_cap = cap;
}

static ssize_t client_read_some(client *c) {
    if (c->big) {
        size_t want = (size_t)c->parser.big_len - c->big_filled;
        ssize_t n = conn_read(c->conn, c->big->v.ptr + c->big_filled, want);
        if (n > 0) c->big_filled += (size_t)n;
        return n;
    }
    client_reserve_qbuf(c);
    ssize_t n = conn_read(c->conn, c->qbuf + c->qbuf_len, c->qbuf_cap - c->qbuf_len);
    if (n > 0) c->qbuf_len += (size_t)n;
    return n;
}

static void client_check_input_limit(client *c) {
    /* Asynchronous: the caller still holds c after this returns. */
    if (!(c->flags & CLIENT_CLOSE_ASAP) && client_qbuf_over_limit(c)) client_free_async(c);
    if (c->qbuf_len > c->qbuf_peak) c->qbuf_peak = c->qbuf_len;
}

void client_resume_input(client *c) {
    if (c->flags & CLIENT_CLOSE_ASAP) return;
    if (c->io_job) {
        c->flags |= CLIENT_RESUME_INPUT;
        return;
    }
    c->flags &= ~CLIENT_RESUME_INPUT;
    /* A big argument resumes as its bytes arrive. */
    if (c->bstate || c->big || (c->flags & CLIENT_PAUSED)) return;
    client_process_input(c);
    client_check_input_limit(c);
}

/* Everything after bytes arrived, wherever they came from. */
static void client_after_input(client *c, size_t n) {
    c->net_in += (long long)n;
    session_stats()->total_net_input_bytes += (long long)n;
    c->last_interaction = event_cached_ms();
    if (client_finish_big_if_full(c) || !c->big) client_process_input(c);
    client_check_input_limit(c);
}

/* An idle client gives a grown query buffer back. */
static void client_trim_qbuf(client *c) {
    if (c->qbuf_len == 0 && c->qbuf_cap > CLIENT_IOBUF_LEN * 2) {
        km_free(c->qbuf);
        c->qbuf = NULL;
        c->qbuf_cap = 0;
    }
}

/* Parses the first complete request, so the main thread only runs it.
 * Runs inside the read step (any thread); stops at a big argument still
 * being read. */
static void client_preparse(client *c) {
    if (c->io_parsed) return;
    if (c->big && !client_finish_big_if_full(c)) return;
    for (;;) {
        resp_status st = resp_parse(&c->parser, c->qbuf + c->qbuf_pos, c->qbuf_len - c->qbuf_pos);
        if (st == RESP_INCOMPLETE) return;
        if (st == RESP_NEED_BIG) {
            client_start_big(c);
            if (!client_finish_big_if_full(c)) return;
            continue;
        }
        c->io_status = st;
        c->io_parsed = 1;
        return;
    }
}

/* The read step: reads what the connection has (again while the transport
 * holds buffered bytes) and parses the first request. Touches only the
 * client's input fields and its connection: runs inline or as an I/O job. */
static void client_read_step(client *c) {
    ssize_t total = 0, n;
    int rounds = 0;
    do {
        n = client_read_some(c);
        if (n <= 0) break;
        total += n;
        client_preparse(c);
    } while (++rounds < CLIENT_PENDING_ROUNDS && c->conn->type->has_pending &&
             c->conn->type->has_pending(c->conn));
    c->io_errno = n < 0 ? errno : 0;
    /* An end of stream or error after some bytes shows on the next read. */
    c->io_nread = total > 0 ? total : n;
}

/* Finishes a read step on the main thread. Returns K_ERR if c was freed. */
static int client_read_done(client *c) {
    ssize_t n = c->io_nread;
    session_stats()->total_reads_processed++;
    conn_after_io(c->conn); /* a transport re-arms what the step left */
    if (n == 0 || (n < 0 && c->io_errno != EAGAIN && c->io_errno != EINTR)) {
        client_free(c);
        return K_ERR;
    }
    if (n < 0) return K_OK;
    client_after_input(c, (size_t)n);
    if (!(c->flags & CLIENT_CLOSE_ASAP)) client_trim_qbuf(c);
    return K_OK;
}

/* While a large job is out the socket is not watched at all: epoll is
 * level-triggered, and a readable (pipelining) or writable socket would
 * wake the main thread on every iteration until the job is back.
 * client_job_done watches it for input again; writability is watched again
 * when a write finds the socket full. */
static void client_unwatch(client *c) {
    conn_set_read_handler(c->conn, NULL);
    if (c->conn->write_handler) conn_set_write_handler(c->conn, NULL);
}

/* The rest of a big argument is a large read: it goes to a thread even
 * under light load (the socket is unwatched meanwhile). */
static void client_start_read(client *c) {
    client_set_parse_limits(c);
    size_t rest = c->big ? (size_t)c->parser.big_len - c->big_filled : 0;
    if (io_threads_submit(IO_JOB_READ, c, c->id, rest) == K_OK) {
        c->io_job = IO_JOB_READ;
        c->conn->io_out = 1;
        if (rest >= IO_JOB_LARGE) client_unwatch(c);
        return;
    }
    client_read_step(c);
    client_read_done(c);
}

/* While a job is out the event is ignored: epoll is level-triggered, so
 * bytes still unread are announced again once the job is back. */
void client_read_handler(conn *cn) {
    client *c = cn->private_data;
    if (!c->io_job) client_start_read(c);
}

void client_feed_input(client *c, const char *buf, size_t len) {
    while (len > 0 && !(c->flags & (CLIENT_CLOSE_ASAP | CLIENT_CLOSE_AFTER_REPLY))) {
        size_t n;
        if (c->big) {
            n = (size_t)c->parser.big_len - c->big_filled;
            n = n < len ? n : len;
            memcpy(c->big->v.ptr + c->big_filled, buf, n);
            c->big_filled += n;
        } else {
            client_reserve_qbuf(c);
            n = c->qbuf_cap - c->qbuf_len;
            n = n < len ? n : len;
            memcpy(c->qbuf + c->qbuf_len, buf, n);
            c->qbuf_len += n;
        }
        buf += n;
        len -= n;
        client_after_input(c, n);
    }
}

/* ---- dispatch ---- */

static void client_unknown_command(client *c) {
    char args[256];
    size_t off = 0;
    args[0] = '\0';
    for (int i = 1; i < c->argc && off < sizeof(args) - 1; i++) {
        int n = snprintf(args + off, sizeof(args) - off, "'%.*s' ",
                         (int)(c->argv[i].len > 128 ? 128 : c->argv[i].len), c->argv[i].ptr);
        if (n < 0) break;
        off += (size_t)n;
    }
    reply_errorf(c, "ERR unknown command '%.*s', with args beginning with: %s",
                 (int)(c->argv[0].len > 128 ? 128 : c->argv[0].len), c->argv[0].ptr, args);
}

static int client_arity_ok(const command *cmd, int argc) {
    return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

/* The transaction code's operations (client_set_txn_ops); until it sets
 * them, MULTI cannot be entered, so none is ever called. */
static const client_txn_ops *txn_ops;

void client_set_txn_ops(const client_txn_ops *ops) {
    txn_ops = ops;
}

int client_watch_count(const client *c) {
    return txn_ops ? txn_ops->watch_count(c) : 0;
}

/* Refuses the current command with err. Inside MULTI the transaction is
 * flagged so EXEC fails; a refused EXEC aborts it, as Valkey does. */
static void client_reject(client *c, const char *err) {
    if (c->cmd) c->cmd->rejected_calls++;
    c->cmd_rejected = 1;
    if ((c->flags & CLIENT_MULTI) && c->cmd && (c->cmd->flags & CMD_TXN_EXEC)) {
        reply_errorf(c, "EXECABORT Transaction discarded because of: %s", err);
        txn_ops->abort(c);
        return;
    }
    reply_error(c, err);
    if (c->flags & CLIENT_MULTI) c->flags |= CLIENT_DIRTY_EXEC;
}

/* Resolves argv[0] (and argv[1] for containers) to a command, or rejects. */
static int client_resolve(client *c) {
    c->cmd = command_lookup(c->argv[0].ptr, c->argv[0].len);
    if (!c->cmd) {
        client_unknown_command(c);
        if (c->flags & CLIENT_MULTI) c->flags |= CLIENT_DIRTY_EXEC;
        return 0;
    }
    if (!c->cmd->subcommands || c->argc < 2) return 1;
    command *sub = command_lookup_sub(c->cmd, c->argv[1].ptr, c->argv[1].len);
    if (sub) {
        c->cmd = sub;
        return 1;
    }
    char err[256], upper[32];
    size_t n = 0;
    for (; c->cmd->name[n] && n < sizeof(upper) - 1; n++) upper[n] = (char)toupper((unsigned char)c->cmd->name[n]);
    upper[n] = '\0';
    snprintf(err, sizeof(err), "ERR unknown subcommand '%.*s'. Try %s HELP.",
             (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len), c->argv[1].ptr, upper);
    client_reject(c, err);
    return 0;
}

static int client_multi_needs_memory(const client *c) {
    for (int i = 0; i < c->mcount; i++)
        if (c->mcmds[i].flags & CMD_DENYOOM) return 1;
    return 0;
}

/* The memory limit, timed for the latency monitor's eviction-cycle. */
static int client_check_maxmemory(void) {
    if (!session_opts()->latency_monitor_threshold) return evict_check_maxmemory();
    uint64_t start = event_now_us();
    int rc = evict_check_maxmemory();
    latency_sample("eviction-cycle", (event_now_us() - start) / 1000);
    return rc;
}

/* Checks that fail a command before it runs; replies and returns 0. A
 * nested run (a module's call) leaves the memory limit to its caller: the
 * call must not evict, and checks it only when asked to. A nested command
 * with a connection is another client's, served from inside a long
 * command's busy phase (session/busy.h). */
static int client_precheck(client *c, int nested) {
    command *cmd = c->cmd;
    uint32_t flags = c->cmd_flags;
    if (!client_arity_ok(cmd, c->argc)) {
        char err[160];
        snprintf(err, sizeof(err), "ERR wrong number of arguments for '%s' command", cmd->fullname);
        client_reject(c, err);
        return 0;
    }
    if (session_opts()->requirepass.ptr && !(c->flags & CLIENT_AUTHENTICATED) &&
        !(flags & CMD_NO_AUTH)) {
        client_reject(c, "NOAUTH Authentication required.");
        return 0;
    }
    if ((c->flags & CLIENT_MULTI) && (flags & CMD_NO_MULTI)) {
        client_reject(c, "ERR Command not allowed inside a transaction");
        return 0;
    }
    int needs_memory =
        (flags & CMD_DENYOOM) || ((flags & CMD_TXN_EXEC) && client_multi_needs_memory(c));
    if (needs_memory && !nested && db_opts()->maxmemory && client_check_maxmemory() != K_OK) {
        client_reject(c, "OOM command not allowed when used memory > 'maxmemory'.");
        return 0;
    }
    /* A RESP2 connection with subscriptions reads messages, not replies:
     * only commands marked for that context run (a RESP3 one may run any). */
    if ((c->flags & CLIENT_PUBSUB) && c->resp == 2 && !(flags & CMD_PUBSUB_CONTEXT)) {
        char err[192];
        snprintf(err, sizeof(err),
                 "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                 "RESET are allowed in this context",
                 cmd->fullname);
        client_reject(c, err);
        return 0;
    }
    const char *err = call_filters(c);
    if (err) {
        client_reject(c, err);
        return 0;
    }
    /* As Valkey's processCommand: a long command's refusal comes after the
     * filters and the pub/sub context, before the monitor's. */
    if (K_UNLIKELY(nested && c->conn) && !(flags & CMD_ALLOW_BUSY) && busy_refusal()) {
        client_reject(c, busy_refusal());
        return 0;
    }
    /* A monitor is a replica to Valkey, kept out of the keyspace. */
    if ((c->flags & CLIENT_MONITOR) && (flags & (CMD_READONLY | CMD_WRITE | CMD_MAY_REPLICATE))) {
        client_reject(c, "ERR Replica can't interact with the keyspace");
        return 0;
    }
    return 1;
}

/* The per-command state that lasts one command: CLIENT CACHING's, and a
 * skipped reply (CLIENT REPLY SKIP skips the next command's). */
static void client_command_done(client *c) {
    if (K_UNLIKELY(c->flags & CLIENT_TRACKING_CACHING)) tracking_command_done(c);
    c->flags &= ~CLIENT_REPLY_SKIP;
    if (c->flags & CLIENT_REPLY_SKIP_NEXT)
        c->flags = (c->flags & ~CLIENT_REPLY_SKIP_NEXT) | CLIENT_REPLY_SKIP;
}

void client_execute(client *c) {
    c->cmd_errors = 0;
    c->cmd_rejected = 0;
    /* Nested runs (a module or script calling a command through a capture
     * client) give the outer command's client back afterwards. */
    client *outer = current_client;
    current_client = c;
    if (!outer) serving_client = c;
    if (K_UNLIKELY(tracking_active())) tracking_enforce_limit();
    int held = 0;
    if (client_resolve(c)) {
        c->lastcmd = c->cmd; /* CLIENT LIST shows the running command */
        c->cmd_flags = command_call_flags(c->cmd, c);
        if (!client_precheck(c, outer != NULL)) {
            /* refused: client_reject replied */
        } else if (K_UNLIKELY(pause_covers(c))) {
            pause_hold(c); /* processed again when the pause ends */
            held = 1;
        } else if ((c->flags & CLIENT_MULTI) && !(c->cmd_flags & CMD_TXN_CONTROL)) {
            txn_ops->queue(c);
        } else {
            call(c);
        }
    }
    current_client = outer;
    if (!outer) serving_client = NULL;
    /* A command a pause holds has not run yet: CLIENT CACHING and CLIENT
     * REPLY SKIP still apply to it when it does. */
    if (!held) client_command_done(c);
    /* Keys the command made ready are served once it is over as a whole
     * (a push inside EXEC wakes clients after EXEC). */
    if (!outer) blocking_serve_ready();
    /* Messages it published to itself follow the command's reply. */
    if (!outer && c->pubsub) pubsub_flush_pending(c);
}

void client_rerun(client *c) {
    client *outer = current_client;
    current_client = c;
    if (!outer) serving_client = c;
    c->cmd_errors = 0;
    call(c);
    current_client = outer;
    if (!outer) serving_client = NULL;
    if (!outer && c->pubsub) pubsub_flush_pending(c);
}

client_scope client_enter(client *c) {
    client_scope s = {current_client, serving_client, c->flags & CLIENT_PROTECTED};
    current_client = serving_client = c;
    c->flags |= CLIENT_PROTECTED;
    return s;
}

void client_leave(client *c, client_scope s) {
    current_client = s.current;
    serving_client = s.serving;
    if (!s.had_protected) c->flags &= ~CLIENT_PROTECTED;
    if (!s.current && c->pubsub) pubsub_flush_pending(c);
}

/* ---- the write path ---- */

/* Fills iov from the unsent bytes of the reply chain, skipping the first
 * `skip` of them, at most `limit` bytes. Reads the chain only. */
static int client_build_iov(const client *c, struct iovec *iov, size_t skip, size_t limit, size_t *total) {
    int n = 0;
    *total = 0;
    for (const reply_block *b = c->reply_head; b && n < CLIENT_WRITEV_IOVS && *total < limit; b = b->next) {
        const char *base = b->obj ? b->obj->v.ptr : b->buf;
        size_t off = b->sent, len = b->used - b->sent;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        off += skip;
        len -= skip;
        skip = 0;
        if (len > limit - *total) len = limit - *total;
        iov[n].iov_base = (char *)base + off;
        iov[n].iov_len = len;
        *total += len;
        n++;
    }
    return n;
}

/* Drops sent bytes from the head of the chain. The last buffer block is kept
 * (emptied) so the next small reply needs no allocation. */
static void client_consume_reply(client *c, size_t sent) {
    c->reply_bytes -= sent;
    while (c->reply_head) {
        reply_block *b = c->reply_head;
        size_t left = b->used - b->sent;
        size_t n = sent < left ? sent : left;
        b->sent += n;
        sent -= n;
        if (b->sent < b->used) break;
        if (!b->next && !b->obj) {
            b->used = b->sent = 0;
            break;
        }
        c->reply_head = b->next;
        if (!c->reply_head) c->reply_tail = NULL;
        if (b->obj) obj_decref(b->obj);
        km_free(b);
    }
}

/* The write step: sends as much as the socket takes, at most io_write_max
 * bytes (inline: CLIENT_WRITE_MAX, so one 8 MB GET does not hold up every
 * small request behind it; the rest goes out on the next iterations).
 * Reads the reply chain without changing it: runs inline or as an I/O job. */
static void client_write_step(client *c) {
    struct iovec iov[CLIENT_WRITEV_IOVS];
    size_t written = 0, max = c->io_write_max;
    if (max < c->io_write_again) max = c->io_write_again; /* a retry: never fewer bytes */
    c->io_write_failed = 0;
    while (written < c->reply_bytes && written < max) {
        size_t total;
        int n = client_build_iov(c, iov, written, max - written, &total);
        ssize_t w = conn_writev(c->conn, iov, n);
        if (w <= 0) {
            int again = w < 0 && (errno == EAGAIN || errno == EINTR);
            c->io_write_failed = !again;
            c->io_write_again = again ? total : 0;
            break;
        }
        c->io_write_again = 0;
        written += (size_t)w;
        if ((size_t)w < total) break; /* the socket is full */
    }
    c->io_written = written;
}

static void client_write_handler(conn *cn);

/* Finishes a write step on the main thread: drops what was sent, waits for
 * writability while replies remain. Returns K_ERR if c was freed. */
static int client_write_done(client *c) {
    size_t w = c->io_written;
    session_stats()->total_writes_processed++;
    conn_after_io(c->conn);
    c->net_out += (long long)w;
    session_stats()->total_net_output_bytes += (long long)w;
    client_consume_reply(c, w);
    if (c->io_write_failed || (c->reply_bytes == 0 && (c->flags & CLIENT_CLOSE_AFTER_REPLY))) {
        client_free(c);
        return K_ERR;
    }
    /* The busy client waits for its command (busy_end writes the rest). */
    if (c->reply_bytes > 0 && !busy_holds(c))
        conn_set_write_handler(c->conn, client_write_handler);
    else if (c->conn->write_handler) conn_set_write_handler(c->conn, NULL);
    return K_OK;
}

/* Large writes go to a thread even under light load. While a job is out
 * the socket's writability is not watched (client_write_done re-arms it). */
static void client_start_write(client *c) {
    c->io_write_max = CLIENT_WRITE_MAX_THREADED; /* set before the thread can see c */
    size_t bytes = c->reply_bytes < c->io_write_max ? c->reply_bytes : c->io_write_max;
    if (io_threads_submit(IO_JOB_WRITE, c, c->id, bytes) == K_OK) {
        c->io_job = IO_JOB_WRITE;
        c->conn->io_out = 1;
        if (bytes >= IO_JOB_LARGE) client_unwatch(c);
        else if (c->conn->write_handler) conn_set_write_handler(c->conn, NULL);
        return;
    }
    c->io_write_max = CLIENT_WRITE_MAX;
    client_write_step(c);
    client_write_done(c);
}

static void client_write_handler(conn *cn) {
    client *c = cn->private_data;
    if (!c->io_job) client_start_write(c);
}

void client_handle_pending_writes(void) {
    client *held = NULL;
    while (pending_head) {
        client *c = pending_head;
        client_unschedule_write(c);
        if (c->flags & CLIENT_CLOSE_ASAP) continue;
        /* The busy client's reply may be half built: written after. */
        if (K_UNLIKELY(c->flags & CLIENT_PROTECTED) && busy_holds(c)) {
            held = c;
            continue;
        }
        if (!c->conn) { /* fake clients (modules) have nowhere to write */
            client_free_reply(c);
            continue;
        }
        /* A job in flight: its finish looks at the replies again. */
        if (!c->io_job) client_start_write(c);
    }
    if (held) client_schedule_write(held);
}

/* ---- I/O jobs ---- */

static void client_job_read(void *item) {
    client_read_step(item);
}

static void client_job_write(void *item) {
    client_write_step(item);
}

/* A job came back: apply it. The socket is watched for input again if a
 * large job had it unwatched, and replies queued while the job was out
 * (passed over by the writer: one job at a time per client) are queued. */
static void client_job_done(void *item) {
    client *c = item;
    int kind = c->io_job;
    c->io_job = 0;
    c->conn->io_out = 0;
    if (c->flags & CLIENT_CLOSE_ASAP) return; /* client_free_closed frees it */
    if (!c->conn->read_handler && !busy_holds(c))
        conn_set_read_handler(c->conn, client_read_handler);
    if ((kind == IO_JOB_READ ? client_read_done(c) : client_write_done(c)) != K_OK) return;
    if (c->flags & CLIENT_RESUME_INPUT) client_resume_input(c);
    if (c->reply_bytes && !(c->flags & CLIENT_PENDING_WRITE) && !c->conn->write_handler)
        client_schedule_write(c);
}

void client_setup(void) {
    io_threads_register(IO_JOB_READ, client_job_read, client_job_done);
    io_threads_register(IO_JOB_WRITE, client_job_write, client_job_done);
}

/* ---- cron ---- */

static int client_obuf_over_limit(client *c) {
    const client_buffer_limit *l = client_obuf_limit(c);
    unsigned long long used = c->reply_bytes;
    if (l->hard && used >= l->hard) return 1;
    if (!l->soft || used < l->soft) {
        c->obuf_soft_limit_since = 0;
        return 0;
    }
    if (!c->obuf_soft_limit_since) c->obuf_soft_limit_since = event_cached_ms();
    return event_cached_ms() - c->obuf_soft_limit_since >= l->soft_seconds * 1000;
}

void client_cron(void) {
    int64_t now = event_cached_ms();
    for (client *c = clients_head, *next; c; c = next) {
        next = c->next;
        if (c->flags & CLIENT_CLOSE_ASAP) continue;
        /* Blocked clients, subscribers and monitors wait by design: no idle
         * timeout. */
        if (session_opts()->maxidletime && c->conn && !c->bstate &&
            !(c->flags & (CLIENT_PUBSUB | CLIENT_MONITOR | CLIENT_PAUSED)) &&
            now - c->last_interaction > (int64_t)session_opts()->maxidletime * 1000) {
            log_write(LL_VERBOSE, "Closing idle client id=%llu", (unsigned long long)c->id);
            client_free(c);
            continue;
        }
        if ((client_obuf_limit(c)->hard || client_obuf_limit(c)->soft) &&
            client_obuf_over_limit(c)) {
            log_write(
                LL_WARNING,
                "Client id=%llu scheduled to be closed for overcoming of output buffer limits.",
                (unsigned long long)c->id);
            session_stats()->client_output_buffer_limit_disconnections++;
            client_free_async(c);
        }
    }
}

/* Checks the hard output limit as replies grow, so a client that reads
 * nothing cannot make the server buffer without bound between crons. */
void client_check_obuf_now(client *c) {
    const client_buffer_limit *l = client_obuf_limit(c);
    if (l->hard && c->reply_bytes >= l->hard && !(c->flags & CLIENT_CLOSE_ASAP)) {
        log_write(
            LL_WARNING,
            "Client id=%llu scheduled to be closed ASAP for overcoming of output buffer limits.",
            (unsigned long long)c->id);
        session_stats()->client_output_buffer_limit_disconnections++;
        client_free_async(c);
    }
}

/* ---- introspection ---- */

client *client_by_id(uint64_t id) {
    return clients_by_id ? hashtable_find(clients_by_id, &id, sizeof(id)) : NULL;
}

void client_buffer_stats(size_t *max_qbuf, size_t *max_obuf) {
    io_threads_quiesce(); /* query buffers of clients in flight settle */
    *max_qbuf = *max_obuf = 0;
    for (client *c = clients_head; c; c = c->next) {
        if (c->qbuf_cap > *max_qbuf) *max_qbuf = c->qbuf_cap;
        if (c->reply_bytes > *max_obuf) *max_obuf = c->reply_bytes;
    }
}

/* What CLIENT LIST reports as tot-mem, summed over every client. */
static size_t client_memory(const client *c) {
    return c->qbuf_cap + c->reply_bytes + c->mbytes + sizeof(client);
}

size_t client_memory_total(void) {
    io_threads_quiesce();
    size_t total = 0;
    for (client *c = clients_head; c; c = c->next)
        total += client_memory(c);
    return total;
}

static void client_flags_str(client *c, char *buf) {
    char *p = buf;
    if (c->flags & CLIENT_MONITOR) *p++ = 'O';
    if (c->flags & CLIENT_PUBSUB) *p++ = 'P';
    if (c->flags & CLIENT_MULTI) *p++ = 'x';
    if (c->bstate || (c->flags & CLIENT_PAUSED)) *p++ = 'b';
    p = tracking_flags_str(c, p);
    if (c->flags & CLIENT_DIRTY_CAS) *p++ = 'd';
    if (c->flags & CLIENT_CLOSE_AFTER_REPLY) *p++ = 'c';
    if (c->flags & CLIENT_UNBLOCKED) *p++ = 'u';
    if (c->flags & CLIENT_CLOSE_ASAP) *p++ = 'A';
    if (c->flags & CLIENT_READONLY) *p++ = 'r'; /* Valkey's order */
    if (c->flags & CLIENT_NO_EVICT) *p++ = 'e';
    if (c->flags & CLIENT_NO_TOUCH) *p++ = 'T';
    if (p == buf) *p++ = 'N';
    *p = '\0';
}

/* CLIENT LIST's qbuf: the query buffer's bytes not yet run. The request
 * being executed is still in the buffer until it returns; as in Valkey it
 * does not count for the client running it (its own CLIENT INFO says 0). */
static size_t client_unrun_input(const client *c) {
    size_t held = c->qbuf_len - c->qbuf_pos;
    size_t running = c == current_client ? c->parser.consumed : 0;
    return held > running ? held - running : 0;
}

/* Returns the length of the full line; it is complete in buf only when
 * that is less than len (snprintf's rule), so callers grow and retry. */
size_t client_info_line(client *c, char *buf, size_t len) {
    char addr[128] = "", laddr[128] = "", flags[16];
    if (c->conn) {
        conn_addr(c->conn, addr, sizeof(addr), 1);
        conn_addr(c->conn, laddr, sizeof(laddr), 0);
    }
    client_flags_str(c, flags);
    int64_t now = event_cached_ms();
    const command *last = c->lastcmd;
    int n = snprintf(
        buf, len,
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%d "
        "sub=%lld psub=%lld ssub=%lld multi=%d watch=%d qbuf=%zu qbuf-free=%zu argv-mem=0 "
        "multi-mem=%zu rbs=%d rbp=0 obl=0 oll=0 omem=%zu tot-mem=%zu events=r%s "
        "cmd=%s user=default redir=%lld resp=%d lib-name=%s lib-ver=%s tot-net-in=%lld "
        "tot-net-out=%lld tot-cmds=%lld\n",
        (unsigned long long)c->id, addr, laddr, c->conn ? c->conn->fd : -1, c->name ? c->name : "",
        (long long)(now - c->ctime) / 1000, (long long)(now - c->last_interaction) / 1000, flags,
        c->db->id, pubsub_client_count(c, PUBSUB_CHANNEL), pubsub_client_count(c, PUBSUB_PATTERN),
        pubsub_client_count(c, PUBSUB_SHARD), (c->flags & CLIENT_MULTI) ? c->mcount : -1,
        client_watch_count(c), client_unrun_input(c), c->qbuf_cap - c->qbuf_len, c->mbytes,
        CLIENT_REPLY_CHUNK, c->reply_bytes, client_memory(c),
        (c->flags & CLIENT_PENDING_WRITE) ? "w" : "",
        last ? (last->fullname ? last->fullname : last->name) : "NULL", tracking_redirect_id(c),
        c->resp, c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "", c->net_in,
        c->net_out, c->commands_processed);
    return n < 0 ? 0 : (size_t)n;
}
