/* cmd_memory.c -- MEMORY: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP,
 * and the memory accounting they (and INFO memory) report. */
#include "commands/commands.h"
#include "commands/memory.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/sbuf.h"
#include "ds/hashtable.h"
#include "keyspace/db.h"
#include "keyspace/object.h"
#include "session/client.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>

/* ---- the accounting ---- */

static double mem_ratio(size_t num, size_t den) {
    return den ? (double)num / (double)den : 0.0;
}

void mem_overhead_get(mem_overhead *mh) {
    *mh = (mem_overhead){0};
    size_t used = km_used_memory();
    mh->total_allocated = used;
    mh->startup_allocated = km_startup_memory();
    mh->peak_allocated = km_peak_memory();
    mh->process_rss = km_process_rss();
    km_allocator_stats_get(&mh->alloc);
    /* Without jemalloc's figures, the allocator is taken to be the process. */
    if (!mh->alloc.resident) mh->alloc.resident = mh->process_rss;
    if (!mh->alloc.active) mh->alloc.active = mh->alloc.resident;
    if (!mh->alloc.allocated) mh->alloc.allocated = used;

    mh->total_frag = mem_ratio(mh->process_rss, used);
    mh->total_frag_bytes = (long long)mh->process_rss - (long long)used;
    mh->allocator_frag = mem_ratio(mh->alloc.frag_smallbins, mh->alloc.allocated) + 1;
    mh->allocator_frag_bytes = (long long)mh->alloc.frag_smallbins;
    mh->allocator_rss = mem_ratio(mh->alloc.resident, mh->alloc.active);
    mh->allocator_rss_bytes = (long long)mh->alloc.resident - (long long)mh->alloc.active;
    mh->rss_extra = mem_ratio(mh->process_rss, mh->alloc.resident);
    mh->rss_extra_bytes = (long long)mh->process_rss - (long long)mh->alloc.resident;

    size_t total = mh->startup_allocated;
    mh->clients_normal = client_memory_total();
    total += mh->clients_normal;

    for (int i = 0; i < db_num(); i++) {
        db *d = db_get(i);
        size_t keys = db_size(d);
        if (!keys && !db_expires_count(d)) continue;
        mh->db = km_realloc(mh->db, sizeof(mh->db[0]) * (size_t)(mh->num_dbs + 1));
        mem_overhead_db *o = &mh->db[mh->num_dbs++];
        o->id = d->id;
        /* The tables and each block's header: what a key costs beyond
         * its key and value bytes. */
        o->ht_main = db_keys_mem_usage(d) + keys * sizeof(db_entry);
        o->ht_expires = db_expires_mem_usage(d);
        total += o->ht_main + o->ht_expires;
        mh->total_keys += keys;
        mh->db_dict_rehashing_count += (size_t)db_tables_rehashing(d);
    }

    mh->overhead_total = total;
    /* Start-up memory can be freed later (a module unloaded): the dataset
     * never goes below nothing. */
    mh->dataset = used > total ? used - total : 0;
    mh->peak_perc = mh->peak_allocated ? (double)used * 100 / (double)mh->peak_allocated : 0.0;
    size_t net = used > mh->startup_allocated ? used - mh->startup_allocated : 1;
    mh->dataset_perc = (double)mh->dataset * 100 / (double)net;
    mh->bytes_per_key = mh->total_keys ? mh->dataset / mh->total_keys : 0;
}

void mem_overhead_release(mem_overhead *mh) {
    km_free(mh->db);
    mh->db = NULL;
    mh->num_dbs = 0;
}

/* ---- MEMORY USAGE ---- */

/* [SAMPLES count]: the elements an aggregate's size is estimated from
 * (Valkey's default 5); 0 means every element. */
static int memory_parse_samples(client *c, size_t *out) {
    *out = OBJ_MEM_SAMPLES;
    for (int j = 3; j < c->argc; j++) {
        long long samples;
        if (!karg_eq(&c->argv[j], "samples") || j + 1 >= c->argc) {
            reply_syntax_error(c);
            return 0;
        }
        if (!arg_to_ll(c, &c->argv[++j], &samples)) return 0;
        if (samples < 0) {
            reply_syntax_error(c);
            return 0;
        }
        *out = samples == 0 ? OBJ_MEM_ALL_SAMPLES : (size_t)samples;
    }
    return 1;
}

/* Bytes of the key's block (header, key, an embedded value, the expiry)
 * plus what a value object owns. Like
 * Valkey's dbFind() this neither touches nor counts the key, but a key that
 * has expired is reported missing. */
static void memory_usage(client *c) {
    const karg *key = &c->argv[2];
    size_t samples;
    if (!memory_parse_samples(c, &samples)) return;
    db_entry *e = db_find(c->db, key->ptr, key->len);
    if (!e || db_is_expired(e)) {
        reply_null(c);
        return;
    }
    reply_int(c, (long long)db_entry_mem_usage_sampled(e, samples));
}

/* ---- MEMORY STATS ---- */

static void stat_int(client *c, const char *name, long long v) {
    reply_bulk_cstr(c, name);
    reply_int(c, v);
}

static void stat_double(client *c, const char *name, double v) {
    reply_bulk_cstr(c, name);
    reply_double(c, v);
}

/* Valkey's fields in Valkey's order: 31 of them, and one map per database
 * that holds keys. */
static void memory_stats(client *c) {
    mem_overhead mh;
    mem_overhead_get(&mh);
    reply_map(c, 31 + mh.num_dbs);
    stat_int(c, "peak.allocated", (long long)mh.peak_allocated);
    stat_int(c, "total.allocated", (long long)mh.total_allocated);
    stat_int(c, "startup.allocated", (long long)mh.startup_allocated);
    stat_int(c, "replication.backlog", (long long)mh.repl_backlog);
    stat_int(c, "clients.slaves", (long long)mh.clients_replicas);
    stat_int(c, "clients.normal", (long long)mh.clients_normal);
    stat_int(c, "cluster.links", (long long)mh.cluster_links);
    stat_int(c, "aof.buffer", (long long)mh.aof_buffer);
    stat_int(c, "lua.caches", (long long)mh.lua_caches);
    stat_int(c, "functions.caches", (long long)mh.functions_caches);
    for (int i = 0; i < mh.num_dbs; i++) {
        char name[32];
        snprintf(name, sizeof(name), "db.%d", mh.db[i].id);
        reply_bulk_cstr(c, name);
        reply_map(c, 2);
        stat_int(c, "overhead.hashtable.main", (long long)mh.db[i].ht_main);
        stat_int(c, "overhead.hashtable.expires", (long long)mh.db[i].ht_expires);
    }
    stat_int(c, "overhead.db.hashtable.lut", (long long)mh.overhead_db_hashtable_lut);
    stat_int(c, "overhead.db.hashtable.rehashing", (long long)mh.overhead_db_hashtable_rehashing);
    stat_int(c, "overhead.total", (long long)mh.overhead_total);
    stat_int(c, "db.dict.rehashing.count", (long long)mh.db_dict_rehashing_count);
    stat_int(c, "keys.count", (long long)mh.total_keys);
    stat_int(c, "keys.bytes-per-key", (long long)mh.bytes_per_key);
    stat_int(c, "dataset.bytes", (long long)mh.dataset);
    stat_double(c, "dataset.percentage", mh.dataset_perc);
    stat_double(c, "peak.percentage", mh.peak_perc);
    stat_int(c, "allocator.allocated", (long long)mh.alloc.allocated);
    stat_int(c, "allocator.active", (long long)mh.alloc.active);
    stat_int(c, "allocator.resident", (long long)mh.alloc.resident);
    stat_int(c, "allocator.muzzy", (long long)mh.alloc.muzzy);
    stat_double(c, "allocator-fragmentation.ratio", mh.allocator_frag);
    stat_int(c, "allocator-fragmentation.bytes", mh.allocator_frag_bytes);
    stat_double(c, "allocator-rss.ratio", mh.allocator_rss);
    stat_int(c, "allocator-rss.bytes", mh.allocator_rss_bytes);
    stat_double(c, "rss-overhead.ratio", mh.rss_extra);
    stat_int(c, "rss-overhead.bytes", mh.rss_extra_bytes);
    stat_double(c, "fragmentation", mh.total_frag);
    stat_int(c, "fragmentation.bytes", mh.total_frag_bytes);
    mem_overhead_release(&mh);
}

/* ---- MEMORY DOCTOR ---- */

#define DOCTOR_MB (1024 * 1024)
#define DOCTOR_SMALL (5 * DOCTOR_MB)  /* below this there is nothing to judge */
#define DOCTOR_WASTE (10 * DOCTOR_MB) /* overheads smaller than this are no issue */

/* The same checks as Valkey's doctor, with the same thresholds, in Keel's
 * words: a very small instance gets one line; otherwise each finding is a
 * paragraph, or one line says that nothing was found. */
static void memory_doctor_report(sbuf *b) {
    mem_overhead mh;
    mem_overhead_get(&mh);
    unsigned long nclients = client_count();
    int findings = 0;
    sbuf head = {0};

    if (mh.total_allocated < DOCTOR_SMALL) {
        sbuf_appendf(b,
                     "Memory doctor: this instance holds very little data (under 5MB allocated), "
                     "too little to tell a memory problem from normal start-up overhead. "
                     "Run MEMORY DOCTOR again once it has a working dataset.\n");
        mem_overhead_release(&mh);
        return;
    }
    if (mem_ratio(mh.peak_allocated, mh.total_allocated) > 1.5) {
        findings++;
        sbuf_appendf(
            &head,
            " * Memory peak: the instance once used more than 1.5 times the memory it uses now "
            "(peak %zu bytes, now %zu). Freed memory is often kept by the allocator, so the "
            "RSS and the fragmentation ratio stay high after a peak; it is reused as the "
            "dataset grows again. MEMORY PURGE may give part of it back to the system.\n\n",
            mh.peak_allocated, mh.total_allocated);
    }
    if (mh.total_frag > 1.4 && mh.total_frag_bytes > DOCTOR_WASTE) {
        findings++;
        sbuf_appendf(
            &head,
            " * High RSS overhead: the process's resident memory is %.2f times what it has "
            "allocated (%lld bytes more). This follows a memory peak (see above if one is "
            "listed) or a workload that fragments the allocator's memory. The allocator in "
            "use is \"%s\".\n\n",
            mh.total_frag, mh.total_frag_bytes, km_allocator_name());
    }
    if (mh.allocator_frag > 1.1 && mh.allocator_frag_bytes > DOCTOR_WASTE) {
        findings++;
        sbuf_appendf(
            &head,
            " * Allocator fragmentation: %lld bytes sit in free regions of partly used "
            "small-size pages (ratio %.2f). It usually follows a memory peak, or many values "
            "of changing sizes.\n\n",
            mh.allocator_frag_bytes, mh.allocator_frag);
    }
    if (mh.allocator_rss > 1.1 && mh.allocator_rss_bytes > DOCTOR_WASTE) {
        findings++;
        sbuf_appendf(
            &head,
            " * Allocator RSS overhead: the allocator keeps %lld resident bytes more than its "
            "active pages (ratio %.2f), usually after a memory peak. MEMORY PURGE returns "
            "them to the system.\n\n",
            mh.allocator_rss_bytes, mh.allocator_rss);
    }
    if (mh.rss_extra > 1.1 && mh.rss_extra_bytes > DOCTOR_WASTE) {
        findings++;
        sbuf_appendf(
            &head,
            " * Non-allocator RSS: the process is resident for %lld bytes more than the "
            "allocator holds (ratio %.2f); modules or mapped files may use that memory.\n\n",
            mh.rss_extra_bytes, mh.rss_extra);
    }
    if (nclients && mh.clients_normal / nclients > 200 * 1024) {
        findings++;
        sbuf_appendf(&head,
                     " * Big client buffers: the clients hold more than 200KB each on average (%zu "
                     "bytes for %lu clients), in query buffers, pending replies or queued "
                     "transactions. Clients that read their replies slowly, big pipelines or large "
                     "replies cause it; CLIENT LIST shows which clients hold the memory.\n\n",
                     mh.clients_normal, nclients);
    }
    if (!findings) {
        sbuf_appendf(b, "Memory doctor: no memory problem found in this instance (used memory, "
                        "peak, fragmentation and client buffers look normal).\n");
    } else {
        sbuf_appendf(b, "Memory doctor: %d finding%s in this instance's memory:\n\n", findings,
                     findings == 1 ? "" : "s");
        sbuf_append(b, head.data, head.len);
        sbuf_appendf(b, "INFO memory and MEMORY STATS give the figures behind these findings.\n");
    }
    km_free(head.data);
    mem_overhead_release(&mh);
}

static void memory_doctor(client *c) {
    sbuf b = {0};
    memory_doctor_report(&b);
    reply_verbatim(c, b.data ? b.data : "", b.len, "txt");
    km_free(b.data);
}

/* ---- MEMORY MALLOC-STATS, PURGE ---- */

static void malloc_stats_append(void *priv, const char *text) {
    sbuf_append(priv, text, strlen(text));
}

static void memory_malloc_stats(client *c) {
    sbuf b = {0};
    if (km_allocator_report(malloc_stats_append, &b) != 0) {
        reply_bulk_cstr(c, "Stats not supported for the current allocator");
        return;
    }
    reply_verbatim(c, b.data ? b.data : "", b.len, "txt");
    km_free(b.data);
}

static void memory_purge(client *c) {
    if (km_purge() == 0)
        reply_ok(c);
    else
        reply_error(c, "ERR Error purging dirty pages");
}

static void memory_help(client *c) {
    static const char *const lines[] = {
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    };
    reply_help(c, "MEMORY", lines, K_ARRAY_LEN(lines));
}

/* ---- the table (arity, flags, key positions, since: Valkey's) ---- */

/* clang-format off */
#define MEM_SUB(n, p, a, f, fk, s) \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = fk, \
     .key_step = fk ? 1 : 0, .summary = s, .since = "4.0.0"}

static command memory_subcommands[] = {
    MEM_SUB("doctor", memory_doctor, 2, 0, 0, "Outputs a memory problems report."),
    MEM_SUB("help", memory_help, 2, CMD_LOADING | CMD_STALE, 0, "Returns helpful text about the different subcommands."),
    MEM_SUB("malloc-stats", memory_malloc_stats, 2, 0, 0, "Returns the allocator statistics."),
    MEM_SUB("purge", memory_purge, 2, 0, 0, "Asks the allocator to release memory."),
    MEM_SUB("stats", memory_stats, 2, 0, 0, "Returns details about memory usage."),
    MEM_SUB("usage", memory_usage, -3, CMD_READONLY, 2, "Estimates the memory usage of a key."),
    {.name = NULL},
};

static command memory_table[] = {
    {.name = "memory", .arity = -2, .group = "server", .since = "4.0.0",
     .summary = "A container for memory diagnostics commands.", .subcommands = memory_subcommands},
};
/* clang-format on */

const command_family commands_memory = {memory_table, K_ARRAY_LEN(memory_table)};
