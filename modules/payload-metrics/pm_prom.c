/* pm_prom.c -- /metrics in the Prometheus text exposition format (0.0.4).
 *
 * Families:
 *   keel_request_payload_bytes, keel_reply_payload_bytes   histograms of
 *       every command but EXEC, with the module's 93 finite bucket bounds
 *       (64 B ... 512 MB, four per power of two) and +Inf
 *   keel_command_request_payload_bytes{cmd}, keel_command_reply_payload_bytes{cmd}
 *       per command (payload-metrics.prometheus-per-command), with the 24
 *       power-of-two bounds only, to keep a scrape small
 *   keel_commands_processed_total, keel_commands_failed_total,
 *   keel_large_requests_total, keel_large_replies_total,
 *   keel_net_input_bytes_total, keel_net_output_bytes_total,
 *   keel_connected_clients, keel_connections_received_total,
 *   keel_db_keys, keel_maxmemory_bytes, keel_build_info
 *   process_* (resident and virtual memory, CPU seconds, open and max fds)
 *
 * Server-wide counters (ABI 1.1 core->stat_get, read from the server's
 * INFO fields; absent on a 1.0 server):
 *   keel_server_commands_processed_total, keel_server_connections_received_total,
 *   keel_server_rejected_connections_total, keel_server_connected_clients,
 *   keel_server_net_input_bytes_total, keel_server_net_output_bytes_total,
 *   keel_keyspace_hits_total, keel_keyspace_misses_total,
 *   keel_expired_keys_total, keel_evicted_keys_total,
 *   keel_memory_used_bytes, keel_server_keys
 *
 * The families without "server" are the module's own view: counted from the
 * observer and client events since the module loaded, and read from
 * /proc/self for the process. */
#include "pm_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void pm_prom_head(pm_buf *b, const char *name, const char *type, const char *help) {
    pm_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped. */
static void pm_prom_label(char *out, size_t len, const char *s) {
    size_t n = 0;
    for (; *s && n + 3 < len; s++) {
        if (*s == '\\' || *s == '"') {
            out[n++] = '\\';
            out[n++] = *s;
        } else if (*s == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* One histogram's samples; labels is "" or `cmd="get",`. */
static void pm_prom_hist(pm_buf *b, const char *name, const char *labels, const pm_hist *h,
                         int coarse) {
    uint64_t cum = 0;
    for (unsigned i = 0; i < PM_OVERFLOW; i++) {
        cum += h->b[i];
        if (coarse && !pm_bucket_coarse(i)) continue;
        pm_buf_printf(b, "%s_bucket{%sle=\"%llu\"} %llu\n", name, labels,
                      (unsigned long long)pm_bucket_upper(i), (unsigned long long)cum);
    }
    cum += h->b[PM_OVERFLOW];
    pm_buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
    if (labels[0]) {
        char l[256];
        snprintf(l, sizeof(l), "%s", labels);
        l[strlen(l) - 1] = '\0'; /* drop the trailing comma */
        pm_buf_printf(b, "%s_sum{%s} %llu\n%s_count{%s} %llu\n", name, l,
                      (unsigned long long)h->sum, name, l, (unsigned long long)cum);
    } else {
        pm_buf_printf(b, "%s_sum %llu\n%s_count %llu\n", name, (unsigned long long)h->sum, name,
                      (unsigned long long)cum);
    }
}

static void pm_prom_counter(pm_buf *b, const char *name, const char *help, uint64_t v) {
    pm_prom_head(b, name, "counter", help);
    pm_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void pm_prom_gauge(pm_buf *b, const char *name, const char *help, double v) {
    pm_prom_head(b, name, "gauge", help);
    pm_buf_printf(b, "%s %.17g\n", name, v);
}

/* The server's INFO counters, one family each (ABI 1.1). */
static void pm_prom_server(pm_buf *b) {
    static const struct {
        const char *stat, *name, *type, *help;
    } fams[] = {
        {"total_commands_processed", "keel_server_commands_processed_total", "counter",
         "Commands processed by the server (INFO total_commands_processed)."},
        {"total_connections_received", "keel_server_connections_received_total", "counter",
         "Connections accepted by the server (INFO total_connections_received)."},
        {"rejected_connections", "keel_server_rejected_connections_total", "counter",
         "Connections refused over maxclients (INFO rejected_connections)."},
        {"connected_clients", "keel_server_connected_clients", "gauge", "Clients connected now."},
        {"total_net_input_bytes", "keel_server_net_input_bytes_total", "counter",
         "Bytes read from clients (INFO total_net_input_bytes)."},
        {"total_net_output_bytes", "keel_server_net_output_bytes_total", "counter",
         "Bytes written to clients (INFO total_net_output_bytes)."},
        {"keyspace_hits", "keel_keyspace_hits_total", "counter", "Successful key lookups."},
        {"keyspace_misses", "keel_keyspace_misses_total", "counter", "Failed key lookups."},
        {"expired_keys", "keel_expired_keys_total", "counter", "Keys removed because they expired."},
        {"evicted_keys", "keel_evicted_keys_total", "counter", "Keys evicted by maxmemory."},
        {"used_memory", "keel_memory_used_bytes", "gauge", "Bytes allocated by the server (INFO used_memory)."},
        {"db_keys", "keel_server_keys", "gauge", "Keys in all databases."},
    };
    if (!KEEL_API_HAS(pm_api, core, stat_get)) return;
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        long long v;
        if (pm_api->core->stat_get(fams[i].stat, &v) != KEEL_OK) continue;
        pm_prom_head(b, fams[i].name, fams[i].type, fams[i].help);
        pm_buf_printf(b, "%s %lld\n", fams[i].name, v);
    }
}

static void pm_prom_per_command(pm_buf *b, int reply) {
    const char *name =
        reply ? "keel_command_reply_payload_bytes" : "keel_command_request_payload_bytes";
    pm_prom_head(b, name, "histogram",
                 reply ? "Size of the replies of one command, in bytes (power-of-two buckets)."
                       : "Size of the requests of one command as received, in bytes "
                         "(power-of-two buckets).");
    for (pm_cmd *c = pm.cmds; c; c = c->next) {
        if (!pm_hist_count(&c->req)) continue;
        char esc[160], labels[200];
        pm_prom_label(esc, sizeof(esc), c->name);
        snprintf(labels, sizeof(labels), "cmd=\"%s\",", esc);
        pm_prom_hist(b, name, labels, reply ? &c->rep : &c->req, 1);
    }
}

/* ---- the process, from /proc/self ---- */

static void pm_prom_process(pm_buf *b) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long vm_pages = 0, rss_pages = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%llu %llu", &vm_pages, &rss_pages) != 2) vm_pages = rss_pages = 0;
        fclose(f);
    }
    struct rusage ru;
    double cpu = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the directory's own descriptor */
    }
    struct rlimit rl;
    double maxfds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : 0;
    pm_prom_head(b, "process_cpu_seconds_total", "counter",
                 "Total user and system CPU time spent in seconds.");
    pm_buf_printf(b, "process_cpu_seconds_total %.6f\n", cpu);
    pm_prom_gauge(b, "process_resident_memory_bytes", "Resident memory size in bytes.",
                  (double)rss_pages * (double)page);
    pm_prom_gauge(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                  (double)vm_pages * (double)page);
    pm_prom_gauge(b, "process_open_fds", "Number of open file descriptors.", (double)fds);
    pm_prom_gauge(b, "process_max_fds", "Maximum number of open file descriptors.", maxfds);
}

void pm_prom_render(pm_buf *b) {
    pm_hist req, rep;
    uint64_t failed;
    pm_overall(&req, &rep, &failed);
    pm_prom_head(b, "keel_request_payload_bytes", "histogram",
                 "Size of requests (commands as received, EXEC excluded), in bytes.");
    pm_prom_hist(b, "keel_request_payload_bytes", "", &req, 0);
    pm_prom_head(b, "keel_reply_payload_bytes", "histogram",
                 "Size of replies (EXEC excluded: its commands count one by one), in bytes.");
    pm_prom_hist(b, "keel_reply_payload_bytes", "", &rep, 0);
    if (pm.prom_per_cmd) {
        pm_prom_per_command(b, 0);
        pm_prom_per_command(b, 1);
    }

    uint64_t total = pm_commands_total();
    pm_prom_counter(b, "keel_commands_processed_total",
                    "Commands executed since payload-metrics loaded (EXEC and the commands it "
                    "ran included).",
                    total);
    pm_prom_counter(b, "keel_commands_failed_total",
                    "Commands that replied with an error since payload-metrics loaded (EXEC "
                    "excluded).",
                    failed);
    pm_prom_counter(b, "keel_large_requests_total",
                    "Requests at or over payload-metrics.request-larger-than.", pm.large_req);
    pm_prom_counter(b, "keel_large_replies_total",
                    "Replies at or over payload-metrics.reply-larger-than.", pm.large_rep);
    pm_prom_counter(b, "keel_net_input_bytes_total",
                    "Bytes of commands received since payload-metrics loaded (the request "
                    "histogram's sum).",
                    req.sum);
    pm_prom_counter(b, "keel_net_output_bytes_total",
                    "Bytes of replies produced since payload-metrics loaded (the reply "
                    "histogram's sum).",
                    rep.sum);
    pm_prom_gauge(b, "keel_connected_clients",
                  "Clients connected now among those that connected after payload-metrics "
                  "loaded (exact when it is loaded at start-up).",
                  (double)(pm.connects - pm.closes_tracked));
    pm_prom_counter(b, "keel_connections_received_total",
                    "Client connections accepted since payload-metrics loaded.", pm.connects);
    pm_prom_head(b, "keel_db_keys", "gauge", "Keys in the database.");
    pm_buf_printf(b, "keel_db_keys{db=\"0\"} %llu\n",
                  (unsigned long long)pm_api->keyspace->db_size(pm_ctx));
    char maxmem[64] = "0";
    if (pm_api->core->config_get("maxmemory", maxmem, sizeof(maxmem)) != KEEL_OK)
        snprintf(maxmem, sizeof(maxmem), "0");
    pm_prom_head(b, "keel_maxmemory_bytes", "gauge", "The maxmemory setting (0: no limit).");
    pm_buf_printf(b, "keel_maxmemory_bytes %llu\n", strtoull(maxmem, NULL, 10));
    char ver[64];
    pm_prom_label(ver, sizeof(ver), pm_api->core->server_version());
    pm_prom_head(b, "keel_build_info", "gauge", "Server and payload-metrics versions.");
    pm_buf_printf(b, "keel_build_info{version=\"%s\",payload_metrics_version=\"%s\"} 1\n", ver,
                  PM_VERSION_STRING);
    pm_prom_gauge(b, "keel_payload_metrics_load_time_seconds",
                  "Unix time payload-metrics loaded (counters above start there).",
                  (double)pm.loaded_ms / 1000.0);
    pm_prom_server(b);
    pm_prom_process(b);
}
