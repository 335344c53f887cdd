/* server.c -- start-up, the accept path, the cron, before-sleep, logging,
 * the memory limit, and clean shutdown. */
#include "server/server.h"

#include "session/command.h"
#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "config/config.h"
#include "io/io_threads.h"
#include "keyspace/db.h"
#include "keyspace/evict.h"
#include "keyspace/lazyfree.h"
#include "keyspace/notify.h"
#include "session/blocking.h"
#include "session/pubsub.h"
#include "session/call.h"
#include "session/client.h"
#include "commands/commands.h"
#include "server/info.h"
#include "module/module.h"
#include "session/reply.h"
#include "session/latency.h"
#include "session/monitor.h"
#include "session/pause.h"
#include "session/slowlog.h"
#include "types/types.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

server srv;

static volatile sig_atomic_t shutdown_signal;
/* Every SHUTDOWN and signal counted: a long command that ignored the first
 * is cut short by the next (session/busy.h). */
static volatile sig_atomic_t stop_requests;
/* ---- accepting ---- */

/* The error goes out in plain text only where the connection has no
 * handshake: a transport's (TLS) refuses I/O before it, so, as Valkey
 * does, that client is just closed; the log says why. */
static void server_reject(conn *cn, const char *msg, long long *counter) {
    if (conn_write_all_sync(cn, msg, strlen(msg), 100) != K_OK) {
        char addr[128] = "?";
        conn_addr(cn, addr, sizeof(addr), 1);
        log_write(LL_VERBOSE, "Refused connection from %s: %.*s", addr,
                  (int)strcspn(msg + 1, "\r."), msg + 1);
    }
    conn_close(cn);
    if (counter) (*counter)++;
}

static void server_accept_done(conn *cn) {
    client *c = client_create(cn);
    call_client_event(c, CALL_EVENT_CONNECT);
}

/* Admission before the transport's accept, so a refused client costs no
 * handshake; those in their handshake count as clients already. */
void server_on_accept(conn *cn, void *priv) {
    if (client_count() + module_transport_handshakes() >= (unsigned long)srv.maxclients) {
        server_reject(cn, "-ERR max number of clients reached\r\n",
                      &srv.session_stats.rejected_connections);
        return;
    }
    if (srv.protected_mode && !srv.session.requirepass.ptr && !conn_is_loopback(cn)) {
        server_reject(
            cn,
            "-DENIED Running in protected mode because protected mode is enabled and no password "
            "is "
            "set for the default user. In this mode connections are only accepted from the "
            "loopback "
            "interface. Set a password with requirepass, bind to a specific address, or disable "
            "protected mode with CONFIG SET protected-mode no.\r\n",
            &srv.session_stats.rejected_connections);
        return;
    }
    srv.session_stats.total_connections_received++;
    cn->type->accept(cn, server_accept_done);
}

/* The TCP listener for the configured addresses and port, not yet
 * listening. It owns copies of the addresses, so the old listener can be
 * opened again after CONFIG SET bind replaced srv.bindaddr. No address:
 * Valkey's default ones. */
static void server_tcp_init(conn_listener *l) {
    static char *const dflt[] = {"*", "-::*"};
    int n = srv.bindaddr_count ? srv.bindaddr_count : 2;
    *l = (conn_listener){.type = &conn_type_tcp,
                         .port = srv.port,
                         .backlog = srv.tcp_backlog,
                         .on_accept = server_on_accept,
                         .accept_max = &srv.max_new_conns_per_cycle};
    for (int i = 0; i < n; i++)
        l->bindaddr[i] = km_strdup(srv.bindaddr_count ? srv.bindaddr[i] : dflt[i]);
    l->bindaddr_count = n;
}

/* Closes l's sockets (if any) and frees its addresses. */
static void server_tcp_free(conn_listener *l) {
    if (!l->type) return;
    l->type->listen_close(l, srv.el);
    for (int i = 0; i < l->bindaddr_count; i++)
        km_free(l->bindaddr[i]);
    l->bindaddr_count = 0;
}

static int server_listen(char **err) {
    char msg[256];
    conn_listener *unx = &srv.listeners[1];
    server_tcp_init(&srv.listeners[0]);
    *unx = (conn_listener){.type = &conn_type_unix,
                           .path = srv.unixsocket,
                           .perm = srv.unixsocketperm,
                           .backlog = srv.tcp_backlog,
                           .on_accept = server_on_accept,
                           .accept_max = &srv.max_new_conns_per_cycle};
    for (int i = 0; i < 2; i++) {
        if (srv.listeners[i].type->listen(&srv.listeners[i], srv.el, msg, sizeof(msg)) != K_OK) {
            *err = km_strdup(msg);
            return K_ERR;
        }
    }
    return K_OK;
}

/* The new listener replaces the current one: the old sockets close. */
static void server_tcp_adopt(conn_listener *next) {
    server_tcp_free(&srv.listeners[0]);
    conn_listener_move(&srv.listeners[0], next, srv.el);
    log_write(LL_NOTICE, "Listening on TCP port %d", srv.port);
}

int server_rebind(void) {
    conn_listener *cur = &srv.listeners[0];
    if (!srv.el || !cur->type) return K_OK; /* not listening yet: start-up opens them */
    if (srv.port == 0) {
        /* Valkey allows it: an operator moving from TCP to TLS over one
         * connection sets port 0, then tls-port. Connected clients stay. */
        if (!srv.listeners[1].count && !module_listening())
            log_write(LL_WARNING, "port 0: the server now listens nowhere; connected clients can "
                                  "still CONFIG SET a port");
        server_tcp_free(cur);
        server_tcp_init(cur);
        log_write(LL_NOTICE, "TCP listening closed (port 0)");
        return K_OK;
    }
    conn_listener next;
    char msg[256];
    server_tcp_init(&next);
    if (next.type->listen(&next, srv.el, msg, sizeof(msg)) == K_OK) {
        server_tcp_adopt(&next);
        return K_OK;
    }
    next.type->listen_close(&next, srv.el); /* the addresses bound before the failure */
    if (cur->count && cur->port == srv.port) {
        /* Same port: the new addresses may collide with the old sockets. */
        cur->type->listen_close(cur, srv.el);
        if (next.type->listen(&next, srv.el, msg, sizeof(msg)) == K_OK) {
            server_tcp_adopt(&next);
            return K_OK;
        }
        next.type->listen_close(&next, srv.el);
        char again[256];
        if (cur->type->listen(cur, srv.el, again, sizeof(again)) != K_OK) {
            cur->type->listen_close(cur, srv.el);
            log_write(LL_WARNING, "Could not listen again on the previous addresses: %s", again);
        }
    }
    for (int i = 0; i < next.bindaddr_count; i++)
        km_free(next.bindaddr[i]);
    log_write(LL_WARNING, "Failed to listen on port %d: %s; keeping the previous listeners", srv.port,
              msg);
    return K_ERR;
}

/* ---- the cron and the loop hooks ---- */

/* Pages of freed large values go back to the kernel once large
 * allocations have paused this long (see km_large_maintain). */
#define SERVER_LARGE_PURGE_QUIET_MS 1000

static int64_t server_cron(event_loop *el, int64_t id, void *data) {
    event_update_cached_time();
    if (srv.cron_paused) return 1000 / srv.hz;
    srv.cronloops++;
    info_track_instantaneous();
    km_peak_memory();
    client_cron();
    tracking_enforce_limit();
    if (srv.active_expire_enabled && !db_removals_deferred()) {
        uint64_t start = event_now_us();
        db_active_expire_cycle((uint64_t)(1000000 / srv.hz) / 4);
        types_active_expire(event_cached_ms());
        latency_sample("expire-cycle", (event_now_us() - start) / 1000);
    }
    db_cron();
    if (srv.db.maxmemory) {
        uint64_t start = event_now_us();
        evict_check_maxmemory();
        latency_sample("eviction-cycle", (event_now_us() - start) / 1000);
    }
    module_cron();
    km_large_maintain(event_cached_ms(), SERVER_LARGE_PURGE_QUIET_MS);
    return 1000 / srv.hz; /* shutdown requests are handled in before-sleep */
}

/* Starts or stops I/O threads after CONFIG SET io-threads (here, outside
 * any command, because it waits for the jobs in flight). */
static void server_apply_io_threads(void) {
    int want = srv.io_threads_num - 1;
    if (io_threads_count() == want) return;
    int got = io_threads_resize(want);
    if (got != want) {
        log_write(LL_WARNING, "Could not start %d I/O threads (running %d)", want, got);
        srv.io_threads_num = got + 1;
    } else {
        log_write(LL_NOTICE, "I/O threads: %d (io-threads %d)", got, srv.io_threads_num);
    }
}

static void server_before_sleep(event_loop *el) {
    server_apply_io_threads();
    /* Finish the I/O jobs that came back, write, and repeat while more come
     * back before the main thread may sleep. In between, the keys made
     * ready outside a command are served and the clients unblocked so far
     * (by this iteration's commands and timeouts, or by the requests the
     * jobs just ran) run their pipelined requests, so their replies go out
     * now rather than after the next wake-up. Transport connections with
     * buffered bytes (TLS records no socket event announces) read first. */
    module_transport_before_sleep();
    do {
        io_threads_poll();
        pause_before_sleep();
        blocking_before_sleep();
        tracking_before_sleep();
        client_handle_pending_writes();
        client_free_closed();
    } while (io_threads_prepare_sleep());
    module_transport_prepare_sleep();
    evict_invalidate_used_memory();
    if (shutdown_signal && !srv.shutdown_asap) {
        log_write(LL_WARNING, "Received %s scheduling shutdown...",
                  shutdown_signal == SIGINT ? "SIGINT" : "SIGTERM");
        srv.shutdown_asap = 1;
    }
    if (srv.shutdown_asap) event_loop_stop(el);
    srv.stats.eventloop_cycles++;
    if (srv.el_awake_us) srv.stats.eventloop_duration_sum += (long long)(event_mono_us() - srv.el_awake_us);
}

static void server_after_sleep(event_loop *el) {
    srv.el_awake_us = event_mono_us();
    io_threads_awake();
    io_threads_adjust(event_fired(el), srv.events_per_io_thread);
    event_update_cached_time();
}

/* The last reference to a large value went away: an I/O thread frees the
 * buffer when one is active, so the main thread does not wait on it. */
static void server_free_large(void *ptr) {
    if (io_threads_free(ptr) != K_OK) km_free_large(ptr);
}

static void server_signal(int sig) {
    shutdown_signal = sig;
    stop_requests++;
}

static void server_setup_signals(void) {
    struct sigaction sa = {0};
    sa.sa_handler = server_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void server_make_runid(void) {
    unsigned char rnd[20];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd == -1 || read(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd)) {
        for (size_t i = 0; i < sizeof(rnd); i++) rnd[i] = (unsigned char)(rand() ^ (int)event_now_us());
    }
    if (fd != -1) close(fd);
    for (size_t i = 0; i < sizeof(rnd); i++) snprintf(srv.runid + i * 2, 3, "%02x", rnd[i]);
    uint8_t seed[16];
    memcpy(seed, srv.fixed_hash_seed ? srv.fixed_hash_seed : rnd, sizeof(seed));
    hashtable_set_seed(seed);
    srand((unsigned)(rnd[0] | rnd[1] << 8 | rnd[2] << 16));
}

static void server_write_pidfile(void) {
    if (!srv.pidfile) return;
    FILE *f = fopen(srv.pidfile, "w");
    if (!f) {
        log_write(LL_WARNING, "Failed to write PID file: %s", strerror(errno));
        return;
    }
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

static void server_daemonize(void) {
    if (fork() != 0) exit(0);
    setsid();
    int fd = open("/dev/null", O_RDWR);
    if (fd != -1) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO) close(fd);
    }
}

/* Raises the open-files limit to fit maxclients plus the server's own
 * descriptors; when the system refuses, lowers maxclients to what fits, as
 * Valkey does, so accept() never fails for lack of descriptors first. */
#define SERVER_RESERVED_FDS 32
void server_adjust_open_files(void) {
    struct rlimit rl;
    rlim_t want = (rlim_t)srv.maxclients + SERVER_RESERVED_FDS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= want) return;
    /* Ask for what is wanted, else for the hard limit (which an
     * unprivileged process may always raise its soft limit to). */
    struct rlimit ask = {.rlim_cur = want, .rlim_max = rl.rlim_max > want ? rl.rlim_max : want};
    if (setrlimit(RLIMIT_NOFILE, &ask) == 0) return;
    ask = (struct rlimit){.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
    if (rl.rlim_max > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &ask) == 0) rl.rlim_cur = rl.rlim_max;
    int fit = rl.rlim_cur > SERVER_RESERVED_FDS ? (int)(rl.rlim_cur - SERVER_RESERVED_FDS) : 1;
    log_write(LL_WARNING,
              "You requested maxclients of %d requiring at least %llu max file descriptors; "
              "the limit is %llu, so maxclients is now %d.",
              srv.maxclients, (unsigned long long)want, (unsigned long long)rl.rlim_cur, fit);
    srv.maxclients = fit;
}

/* rename-command lines, once the command table exists and before modules
 * register theirs (as in Valkey, module commands cannot be renamed). */
static int server_apply_renames(char **err) {
    for (const config_rename_line *r = config_rename_lines(); r; r = r->next) {
        const char *why;
        if (command_rename(r->from, r->to, &why) == K_OK) continue;
        char msg[512];
        snprintf(msg, sizeof(msg), "%s:%d: rename-command %s: %s", r->file, r->line, r->from, why);
        *err = km_strdup(msg);
        return K_ERR;
    }
    return K_OK;
}

/* ---- composing the subsystems ---- */

/* The change counter persistence will read (INFO
 * rdb_changes_since_last_save): one subscriber of the keyspace's hook. */
static void server_count_changes(const db_change *ch, void *priv) {
    K_UNUSED(priv);
    srv.dirty += ch->changes;
}

static void server_request_shutdown(void) {
    srv.shutdown_asap = 1;
    stop_requests++;
}

/* A long command stops at once for SHUTDOWN NOSAVE or a signal. */
static unsigned server_stop_requests(void) {
    return (unsigned)stop_requests;
}

/* A long command went on after it was told to stop: nothing can be torn
 * down under it, so the process exits from inside it, leaving no pidfile
 * or socket file behind. */
static void server_exit_busy(void) {
    log_write(LL_WARNING, "A long command ignored the shutdown request: exiting from inside it.");
    if (srv.listeners[1].type) srv.listeners[1].type->listen_close(&srv.listeners[1], srv.el);
    if (srv.pidfile) unlink(srv.pidfile);
    log_write(LL_WARNING, "Keel is now ready to exit, bye bye...");
    exit(0);
}

/* CONFIG RESETSTAT: every subsystem's counters, the peak, command and
 * error statistics. */
static void server_reset_stats(void) {
    size_t n;
    const metric_group *g = server_metric_groups(&n);
    for (size_t i = 0; i < n; i++)
        metric_group_reset(&g[i]);
    km_reset_peak_memory();
    io_stats = (io_threads_stats){0};
    lazyfree_reset_stats();
    command_reset_stats();
    latency_reset_histograms();
    reply_errorstats_reset();
}

METRICS_DESCS(server_metric_descs, server_metrics, SERVER_METRICS);

const metric_group *server_metric_groups(size_t *count) {
    static metric_group groups[4];
    groups[0] =
        (metric_group){&srv.session_stats, session_metric_descs, session_metric_descs_count};
    groups[1] = (metric_group){&srv.db_stats, db_metric_descs, db_metric_descs_count};
    groups[2] = (metric_group){&srv.stats, server_metric_descs, server_metric_descs_count};
    groups[3] = (metric_group){&srv.types_stats, types_metric_descs, types_metric_descs_count};
    *count = K_ARRAY_LEN(groups);
    return groups;
}

static size_t server_pending_free(void) {
    return io_threads_free_pending();
}

static const commands_env server_commands_env = {
    .enable_debug_cmd = &srv.enable_debug_cmd,
    .enable_module_cmd = &srv.enable_module_cmd,
    .enable_protected_configs = &srv.compat.enable_protected_configs,
    .active_expire_enabled = &srv.active_expire_enabled,
    .cron_paused = &srv.cron_paused,
    .disable_deny_scripts = &srv.disable_deny_scripts,
    .lastsave = &srv.lastsave,
    .configfile = &srv.configfile,
    .shutdown = server_request_shutdown,
    .reset_stats = server_reset_stats,
};

static module_env server_module_env = {
    .tcp_backlog = &srv.tcp_backlog,
    .accept_max_handshake = &srv.max_new_tls_conns_per_cycle,
    .bindaddr = srv.bindaddr,
    .bindaddr_count = &srv.bindaddr_count,
    .on_accept = server_on_accept,
    .info_add_section = info_add_section,
    .info_remove_owner = info_remove_owner,
    .info_add_fields = info_add_fields,
    .info_stat_get = info_stat_get,
};

int server_init_core(char **err) {
    km_setup();
    srv.pid = getpid();
    srv.start_us = event_mono_us();
    srv.lastsave = (long long)(event_now_us() / 1000000);
    event_update_cached_time();
    server_make_runid();
    srv.el = event_loop_create(srv.maxclients + 128);
    if (!srv.el) {
        *err = km_strdup("cannot create the event loop");
        return K_ERR;
    }
    srv.db.pending_free = server_pending_free;
    db_setup(&srv.db, &srv.db_stats);
    types_setup(&srv.types_stats);
    notify_setup(&srv.notify_keyspace_events, pubsub_publish);
    db_add_hook(server_count_changes, NULL);
    session_setup(&srv.session, &srv.session_stats);
    blocking_setup(srv.el, &srv.blocking_stats);
    busy_setup(srv.el, &srv.busy, server_stop_requests, server_exit_busy);
    tracking_setup(&srv.tracking, &srv.tracking_stats);
    pubsub_setup(&srv.pubsub_stats);
    pause_setup(&srv.blocking_stats);
    command_setup();
    commands_setup(&server_commands_env);
    info_setup();
    if (server_apply_renames(err) != K_OK) return K_ERR;
    client_setup();
    server_module_env.el = srv.el;
    module_setup(&server_module_env);
    return K_OK;
}

int server_setup(char **err) {
    if (srv.daemonize) server_daemonize();
    server_adjust_open_files();
    if (server_init_core(err) != K_OK) return K_ERR;
    if (server_listen(err) != K_OK) return K_ERR;
    if (io_threads_setup(srv.el) != K_OK) {
        *err = km_strdup("cannot set up the I/O threads' wake-up eventfd");
        return K_ERR;
    }
    server_apply_io_threads();
    obj_free_large_hook = server_free_large;
    if (module_load_configured(err) != K_OK) return K_ERR;
    /* port 0 without a unix socket: a module's listener (tls-port) may be
     * the only one. */
    if (srv.port == 0 && !srv.unixsocket && !module_listening()) {
        *err = km_strdup("Configured to not listen anywhere, exiting.");
        return K_ERR;
    }
    event_timer_add(srv.el, 1, server_cron, NULL);
    event_set_before_sleep(srv.el, server_before_sleep);
    event_set_after_sleep(srv.el, server_after_sleep);
    server_setup_signals();
    server_write_pidfile();
    km_mark_startup(); /* INFO used_memory_startup */
    return K_OK;
}

void server_run(void) {
    log_write(LL_NOTICE, "Ready to accept connections tcp");
    event_loop_run(srv.el);
}

/* Closes clients and frees everything so leak checkers see a clean exit. */
void server_teardown(void) {
    log_write(LL_WARNING, "Keel is now ready to exit, bye bye...");
    io_threads_teardown();
    obj_free_large_hook = NULL;
    client_handle_pending_writes();
    /* Clients closed while their job was out are on the close list (no job
     * is out any more): free them there, never twice. */
    client_free_closed();
    while (client_list_head()) {
        client_free(client_list_head());
        client_free_closed();
    }
    module_call_teardown();
    pause_teardown();
    blocking_teardown();
    busy_teardown();
    monitor_teardown();
    notify_teardown(); /* nothing is published once pub/sub is gone */
    tracking_teardown();
    pubsub_teardown();
    module_teardown();
    server_tcp_free(&srv.listeners[0]);
    if (srv.listeners[1].type) srv.listeners[1].type->listen_close(&srv.listeners[1], srv.el);
    if (srv.pidfile) unlink(srv.pidfile);
    commands_teardown();
    command_teardown();
    session_teardown();
    types_teardown();
    db_teardown();
    evict_teardown();
    slowlog_teardown();
    latency_teardown();
    info_teardown();
    call_teardown();
    event_loop_release(srv.el);
    log_teardown();
    config_free();
    km_free(srv.configfile);
    km_free(srv.executable);
    km_teardown();
}
