/* cmd_geo.c -- the geo command family: GEOADD, GEOPOS, GEODIST, GEOHASH
 * and the searches (GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
 * GEORADIUSBYMEMBER and their _RO forms), as Valkey 8.0.1 answers them in
 * RESP2 and RESP3, plus Valkey 9.0's GEOSEARCH ... BYPOLYGON.
 *
 * A geo set is a plain sorted set whose scores are 52-bit geohashes
 * (ds/geohash.h); it is read and changed through types/zset.h only. A
 * search walks the score intervals of the nine geohash cells around the
 * shape in Valkey's order, keeps the members inside the shape, then sorts
 * them by distance when asked (COUNT without ANY implies ASC). */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "common/vec.h"
#include "ds/geohash.h"
#include "session/reply.h"
#include "types/zset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- lookups, arguments and replies ---- */

/* The sorted set at key: 1 and *o, 0 when missing, -1 after WRONGTYPE. */
static int geo_lookup(client *c, const karg *key, int count, kobj **o) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, count);
    if (!e) return 0;
    if (db_entry_type(e) != OBJ_ZSET) {
        reply_wrongtype(c);
        return -1;
    }
    *o = db_entry_obj(e);
    return 1;
}

/* A double argument; replies msg (or Valkey's default) when invalid. */
static int arg_to_double(client *c, const karg *a, const char *msg, double *out) {
    if (str_to_double(a->ptr, a->len, out)) return 1;
    reply_error(c, msg ? msg : "ERR value is not a valid float");
    return 0;
}

/* A longitude, latitude pair at argv[i], within the geohash limits. */
static int arg_lonlat(client *c, int i, double xy[2]) {
    if (!arg_to_double(c, &c->argv[i], NULL, &xy[0]) ||
        !arg_to_double(c, &c->argv[i + 1], NULL, &xy[1]))
        return 0;
    if (xy[0] < GEO_LON_MIN || xy[0] > GEO_LON_MAX || xy[1] < GEO_LAT_MIN || xy[1] > GEO_LAT_MAX) {
        reply_errorf(c, "ERR invalid longitude,latitude pair %f,%f", xy[0], xy[1]);
        return 0;
    }
    return 1;
}

/* Metres per unit; 0 after replying for an unknown unit. */
static double arg_unit(client *c, const karg *a) {
    if (karg_eq(a, "m")) return 1;
    if (karg_eq(a, "km")) return 1000;
    if (karg_eq(a, "ft")) return 0.3048;
    if (karg_eq(a, "mi")) return 1609.34;
    reply_error(c, "ERR unsupported unit provided. please use M, KM, FT, MI");
    return 0;
}

/* <radius> <unit> at argv[i]. */
static int arg_radius(client *c, int i, geo_shape *s) {
    if (!arg_to_double(c, &c->argv[i], "ERR need numeric radius", &s->radius)) return 0;
    if (s->radius < 0) {
        reply_error(c, "ERR radius cannot be negative");
        return 0;
    }
    s->to_m = arg_unit(c, &c->argv[i + 1]);
    s->kind = GEO_CIRCLE;
    return s->to_m > 0;
}

/* <width> <height> <unit> at argv[i]. */
static int arg_box(client *c, int i, geo_shape *s) {
    if (!arg_to_double(c, &c->argv[i], "ERR need numeric width", &s->width) ||
        !arg_to_double(c, &c->argv[i + 1], "ERR need numeric height", &s->height))
        return 0;
    if (s->height < 0 || s->width < 0) {
        reply_error(c, "ERR height or width cannot be negative");
        return 0;
    }
    s->to_m = arg_unit(c, &c->argv[i + 2]);
    s->kind = GEO_BOX;
    return s->to_m > 0;
}

/* A member's position: 1 and xy, 0 if it is not in the set. */
static int member_pos(const kobj *o, const karg *m, double xy[2]) {
    double score;
    if (!zset_score(o, m->ptr, m->len, &score)) return 0;
    geo_score_decode(score, xy);
    return 1;
}

/* A distance as Valkey writes it: a bulk string with four decimals. */
static void reply_distance(client *c, double d) {
    long long v = llrint(d * 10000.0);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char buf[48];
    int n = snprintf(buf, sizeof(buf), "%s%llu.%04llu", v < 0 ? "-" : "", u / 10000, u % 10000);
    reply_bulk(c, buf, (size_t)n);
}

/* A coordinate in Valkey's human form ("%.17Lf", trailing zeros cut): a
 * bulk string in RESP2, a double in RESP3. */
static void reply_coord(client *c, double v) {
    char buf[64]; /* a coordinate is at most 180 in magnitude: 3 + 1 + 17 digits */
    size_t n = ld_to_str(buf + 1, sizeof(buf) - 3, v);
    if (c->resp < 3) {
        reply_bulk(c, buf + 1, n);
        return;
    }
    buf[0] = ',';
    buf[n + 1] = '\r';
    buf[n + 2] = '\n';
    reply_raw(c, buf, n + 3);
}

static void reply_position(client *c, const double xy[2]) {
    reply_array(c, 2);
    reply_coord(c, xy[0]);
    reply_coord(c, xy[1]);
}

/* ---- GEOADD ---- */

/* GEOADD key [NX|XX] [CH] lon lat member ...: ZADD of the encoded
 * positions (all validated first), announced as `zadd`. */
static void cmd_geoadd(client *c) {
    int flags = 0, ch = 0, i = 2;
    for (; i < c->argc; i++) {
        if (karg_eq(&c->argv[i], "nx"))
            flags |= ZSET_IN_NX;
        else if (karg_eq(&c->argv[i], "xx"))
            flags |= ZSET_IN_XX;
        else if (karg_eq(&c->argv[i], "ch"))
            ch = 1;
        else
            break;
    }
    int rest = c->argc - i;
    if (rest == 0 || rest % 3 || flags == (ZSET_IN_NX | ZSET_IN_XX)) {
        reply_syntax_error(c);
        return;
    }
    size_t n = (size_t)rest / 3, maxlen = 0;
    double *scores = km_alloc(n * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        double xy[2];
        if (!arg_lonlat(c, i + 3 * (int)j, xy)) goto done;
        scores[j] = (double)geo_score_encode(xy[0], xy[1]);
        if (c->argv[i + 3 * j + 2].len > maxlen) maxlen = c->argv[i + 3 * j + 2].len;
    }
    const karg *key = &c->argv[1];
    kobj *o = NULL;
    int found = geo_lookup(c, key, 0, &o);
    if (found < 0) goto done;
    long long added = 0, updated = 0;
    if (!found && (flags & ZSET_IN_XX)) {
        reply_int(c, 0);
        goto done;
    }
    if (found)
        zset_maybe_convert(o, n, maxlen);
    else
        o = zset_create(n, maxlen);
    for (size_t j = 0; j < n; j++) {
        const karg *m = &c->argv[i + 3 * j + 2];
        int out;
        zset_add(o, scores[j], m->ptr, m->len, flags, &out, NULL);
        if (out & ZSET_OUT_ADDED) added++;
        if (out & ZSET_OUT_UPDATED) updated++;
    }
    if (!found)
        db_add(c->db, key->ptr, key->len, o, added + updated);
    else if (added || updated)
        db_signal_modified(c->db, key->ptr, key->len, added + updated);
    if (added || updated) notify_key(c, NOTIFY_ZSET, "zadd", key);
    reply_int(c, ch ? added + updated : added);
done:
    km_free(scores);
}

/* ---- GEOPOS, GEODIST, GEOHASH ---- */

static void cmd_geopos(client *c) {
    kobj *o = NULL;
    int found = geo_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        double xy[2];
        if (found && member_pos(o, &c->argv[j], xy))
            reply_position(c, xy);
        else
            reply_null_array(c);
    }
}

static void cmd_geodist(client *c) {
    double to_m = 1;
    if (c->argc == 5) {
        to_m = arg_unit(c, &c->argv[4]);
        if (to_m == 0) return;
    } else if (c->argc > 5) {
        reply_syntax_error(c);
        return;
    }
    kobj *o = NULL;
    int found = geo_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    double a[2], b[2];
    if (!found || !member_pos(o, &c->argv[2], a) || !member_pos(o, &c->argv[3], b)) {
        reply_null(c);
        return;
    }
    reply_distance(c, geo_distance(a[0], a[1], b[0], b[1]) / to_m);
}

static void cmd_geohash(client *c) {
    kobj *o = NULL;
    int found = geo_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        const karg *m = &c->argv[j];
        double score;
        if (!found || !zset_score(o, m->ptr, m->len, &score)) {
            reply_null(c);
            continue;
        }
        char buf[12];
        geo_score_to_string(score, buf);
        reply_bulk(c, buf, 11);
    }
}

/* ---- the searches ---- */

/* One member found inside the shape; m is a copy. */
typedef struct geo_point {
    char *m;
    size_t len;
    double score, dist, xy[2];
} geo_point;

/* A search's results, collected while walking the cells. */
typedef struct geo_found {
    const geo_shape *shape;
    vec points;   /* geo_point */
    size_t limit; /* ANY's count; 0: all */
} geo_found;

static int geo_found_full(const geo_found *f) {
    return f->limit && f->points.count >= f->limit;
}

static void collect_elem(void *priv, const zset_elem *e) {
    geo_found *f = priv;
    /* ANY stops at its count: what its last step walks past is ignored. */
    if (geo_found_full(f)) return;
    double xy[2], dist = 0;
    geo_score_decode(e->score, xy);
    if (!geo_shape_contains(f->shape, xy, &dist)) return;
    geo_point *p = vec_push(&f->points, sizeof(*p));
    p->m = km_strndup(e->m, e->len);
    p->len = e->len;
    p->score = e->score;
    p->dist = dist;
    p->xy[0] = xy[0];
    p->xy[1] = xy[1];
}

/* Collects the members of one cell's score range. With ANY the range is
 * walked in steps, so the walk ends soon after the count is reached. */
static void collect_range(const kobj *o, const zset_score_range *r, geo_found *f) {
    if (!f->limit) {
        zset_range_score(o, r, 0, 0, -1, collect_elem, f);
        return;
    }
    const long long step = 128;
    long long offset = 0, got;
    do {
        got = (long long)zset_range_score(o, r, 0, offset, step, collect_elem, f);
        offset += got;
    } while (got == step && !geo_found_full(f));
}

/* Collects the members inside f->shape from the nine cells, skipping the
 * unused ones and a cell equal to the one searched just before (wide
 * shapes make neighbours coincide). */
static void geo_collect(const kobj *o, geo_shape *shape, geo_found *f) {
    geo_bits cells[9];
    geo_shape_cells(shape, cells);
    int last = 0;
    for (int i = 0; i < 9; i++) {
        if (cells[i].step == 0 && cells[i].bits == 0) continue;
        if (last && cells[i].bits == cells[last].bits && cells[i].step == cells[last].step)
            continue;
        if (geo_found_full(f)) break;
        uint64_t min, max;
        geo_cell_scores(cells[i], &min, &max);
        zset_score_range r = {.min = (double)min, .max = (double)max, .minex = 0, .maxex = 1};
        collect_range(o, &r, f);
        last = i;
    }
}

static void geo_found_free(geo_found *f) {
    geo_point *p = f->points.items;
    for (size_t i = 0; i < f->points.count; i++)
        km_free(p[i].m);
    vec_free(&f->points);
}

static int by_dist_asc(const void *a, const void *b) {
    double x = ((const geo_point *)a)->dist, y = ((const geo_point *)b)->dist;
    return x > y ? 1 : x < y ? -1 : 0;
}

static int by_dist_desc(const void *a, const void *b) {
    return by_dist_asc(b, a);
}

/* Which command runs the search: the arguments it takes. */
#define GEO_FROM_COORDS (1 << 0) /* GEORADIUS: lon lat radius unit */
#define GEO_FROM_MEMBER (1 << 1) /* GEORADIUSBYMEMBER: member radius unit */
#define GEO_NO_STORE (1 << 2)    /* the _RO forms */
#define GEO_SEARCH (1 << 3)      /* GEOSEARCH: FROM... BY... */
#define GEO_SEARCH_STORE (1 << 4)

enum { GEO_SORT_NONE, GEO_SORT_ASC, GEO_SORT_DESC };

/* A search's options, as parsed. */
typedef struct geo_query {
    geo_shape shape;
    double (*vertices)[2]; /* BYPOLYGON's, owned */
    const karg *store;
    int storedist;
    int withdist, withhash, withcoord;
    int from_member, from_lonlat, by_radius, by_box, by_polygon;
    int sort, any;
    long long count;
} geo_query;

/* BYPOLYGON <n> <lon> <lat> ... at argv[i] (the keyword); *used gets the
 * arguments it took. Valkey 9.0's rules: n an int of at least 3 with
 * enough arguments after it, each vertex a valid position. */
static int arg_polygon(client *c, int i, geo_query *q, int *used) {
    long long n;
    if (!arg_to_range(c, &c->argv[i + 1], INT32_MIN, INT32_MAX, "ERR invalid number of vertices",
                      &n))
        return 0;
    if (n < 3 || (c->argc - i - 2) / 2 < n) {
        reply_error(c, "ERR GEOSEARCH BYPOLYGON must have at least 3 vertices");
        return 0;
    }
    q->vertices = km_alloc((size_t)n * sizeof(*q->vertices));
    for (long long v = 0; v < n; v++)
        if (!arg_lonlat(c, i + 2 + 2 * (int)v, q->vertices[v])) return 0;
    q->shape.kind = GEO_POLYGON;
    q->shape.vertices = (const double(*)[2])q->vertices;
    q->shape.nvertices = (size_t)n;
    q->shape.to_m = 1;
    *used = 1 + 2 * (int)n;
    return 1;
}

/* Parses the options from argv[base] on (Valkey's georadiusGeneric loop:
 * any order, the last of a kind wins). o is the source set or NULL. */
static int geo_parse_options(client *c, int base, int flags, const kobj *o, geo_query *q) {
    int search = (flags & GEO_SEARCH) != 0;
    int may_store = !(flags & GEO_NO_STORE) && !search;
    for (int i = base; i < c->argc; i++) {
        const karg *a = &c->argv[i];
        int left = c->argc - i - 1;
        int used = 0;
        if (karg_eq(a, "withdist")) {
            q->withdist = 1;
        } else if (karg_eq(a, "withhash")) {
            q->withhash = 1;
        } else if (karg_eq(a, "withcoord")) {
            q->withcoord = 1;
        } else if (karg_eq(a, "any")) {
            q->any = 1;
        } else if (karg_eq(a, "asc")) {
            q->sort = GEO_SORT_ASC;
        } else if (karg_eq(a, "desc")) {
            q->sort = GEO_SORT_DESC;
        } else if (karg_eq(a, "count") && left >= 1) {
            if (!arg_to_ll(c, &c->argv[i + 1], &q->count)) return 0;
            if (q->count <= 0) {
                reply_error(c, "ERR COUNT must be > 0");
                return 0;
            }
            used = 1;
        } else if (may_store && (karg_eq(a, "store") || karg_eq(a, "storedist")) && left >= 1) {
            q->store = &c->argv[i + 1];
            q->storedist = karg_eq(a, "storedist");
            used = 1;
        } else if ((flags & GEO_SEARCH_STORE) && karg_eq(a, "storedist")) {
            q->storedist = 1;
        } else if (search && karg_eq(a, "frommember") && left >= 1 && !q->from_lonlat &&
                   !q->by_polygon) {
            /* Without a source the member is not looked up: the missing
             * key's reply comes once the arguments are checked. */
            if (o && !member_pos(o, &c->argv[i + 1], q->shape.xy)) {
                reply_error(c, "ERR could not decode requested zset member");
                return 0;
            }
            q->from_member = 1;
            used = 1;
        } else if (search && karg_eq(a, "fromlonlat") && left >= 2 && !q->from_member &&
                   !q->by_polygon) {
            if (!arg_lonlat(c, i + 1, q->shape.xy)) return 0;
            q->from_lonlat = 1;
            used = 2;
        } else if (search && karg_eq(a, "byradius") && left >= 2 && !q->by_box && !q->by_polygon) {
            if (!arg_radius(c, i + 1, &q->shape)) return 0;
            q->by_radius = 1;
            used = 2;
        } else if (search && karg_eq(a, "bybox") && left >= 3 && !q->by_radius && !q->by_polygon) {
            if (!arg_box(c, i + 1, &q->shape)) return 0;
            q->by_box = 1;
            used = 3;
        } else if (search && karg_eq(a, "bypolygon") && left >= 2 && !q->by_radius && !q->by_box &&
                   !q->by_polygon && !q->from_member && !q->from_lonlat) {
            if (!arg_polygon(c, i, q, &used)) return 0;
            q->by_polygon = 1;
        } else {
            reply_syntax_error(c);
            return 0;
        }
        i += used;
    }
    return 1;
}

/* The checks Valkey makes once all options are read. */
static int geo_check_options(client *c, int flags, const geo_query *q) {
    if (q->store && (q->withdist || q->withhash || q->withcoord)) {
        reply_errorf(c, "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
                     flags & GEO_SEARCH_STORE ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS");
        return 0;
    }
    /* The command's name as the client spelled it, as Valkey answers. */
    int nlen = (int)c->argv[0].len;
    const char *name = c->argv[0].ptr;
    if ((flags & GEO_SEARCH) && !q->by_polygon && !(q->from_member || q->from_lonlat)) {
        reply_errorf(c, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %.*s",
                     nlen, name);
        return 0;
    }
    if ((flags & GEO_SEARCH) && !(q->by_radius || q->by_box || q->by_polygon)) {
        reply_errorf(c, "ERR exactly one of BYRADIUS and BYBOX can be specified for %.*s", nlen,
                     name);
        return 0;
    }
    if (q->any && !q->count) {
        reply_error(c, "ERR the ANY argument requires COUNT argument");
        return 0;
    }
    return 1;
}

/* A store target left empty: deleted, announced as `del` if it was there. */
static void store_nothing(client *c, const karg *dst) {
    if (db_delete(c->db, dst->ptr, dst->len)) notify_key(c, NOTIFY_GENERIC, "del", dst);
    reply_int(c, 0);
}

static void reply_points(client *c, const geo_query *q, const geo_point *p, size_t n) {
    int extras = q->withdist + q->withhash + q->withcoord;
    reply_array(c, (long long)n);
    for (size_t i = 0; i < n; i++) {
        if (extras) reply_array(c, extras + 1);
        reply_bulk(c, p[i].m, p[i].len);
        if (q->withdist) reply_distance(c, p[i].dist / q->shape.to_m);
        if (q->withhash) reply_int(c, (long long)p[i].score);
        if (q->withcoord) reply_position(c, p[i].xy);
    }
}

/* Stores the points at q->store (their geohash, or their distance with
 * STOREDIST, as scores) and replies their count. */
static void store_points(client *c, int flags, const geo_query *q, const geo_point *p, size_t n) {
    if (!n) {
        store_nothing(c, q->store);
        return;
    }
    kobj *dst = zset_create_skiplist();
    for (size_t i = 0; i < n; i++) {
        int out;
        double score = q->storedist ? p[i].dist / q->shape.to_m : p[i].score;
        zset_add(dst, score, p[i].m, p[i].len, 0, &out, NULL);
    }
    zset_shrink_if_fits(dst);
    db_set(c->db, q->store->ptr, q->store->len, dst, 0);
    notify_key(c, NOTIFY_ZSET, flags & GEO_SEARCH ? "geosearchstore" : "georadiusstore", q->store);
    reply_int(c, (long long)n);
}

static void geo_run(client *c, int flags, const kobj *o, geo_query *q) {
    /* COUNT alone means the nearest ones. */
    if (q->count && q->sort == GEO_SORT_NONE && !q->any) q->sort = GEO_SORT_ASC;
    geo_found f = {.shape = &q->shape, .limit = q->any ? (size_t)q->count : 0};
    geo_collect(o, &q->shape, &f);
    geo_point *p = f.points.items;
    size_t n = f.points.count;
    if (q->count && (size_t)q->count < n) {
        if (q->sort != GEO_SORT_NONE)
            qsort(p, n, sizeof(*p), q->sort == GEO_SORT_ASC ? by_dist_asc : by_dist_desc);
        n = (size_t)q->count;
    } else if (q->sort != GEO_SORT_NONE && n > 1) {
        qsort(p, n, sizeof(*p), q->sort == GEO_SORT_ASC ? by_dist_asc : by_dist_desc);
    }
    if (q->store)
        store_points(c, flags, q, p, n);
    else
        reply_points(c, q, p, n);
    geo_found_free(&f);
}

/* The searches' common path (Valkey's georadiusGeneric): src is the
 * source key's index. */
static void geo_search(client *c, int src, int flags) {
    kobj *o = NULL;
    int found = geo_lookup(c, &c->argv[src], 1, &o);
    if (found < 0) return;
    geo_query q = {.shape = {.kind = GEO_CIRCLE}};
    int base;
    if (flags & GEO_FROM_COORDS) {
        base = 6;
        if (!arg_lonlat(c, 2, q.shape.xy) || !arg_radius(c, 4, &q.shape)) return;
    } else if (flags & GEO_FROM_MEMBER) {
        base = 5;
        /* A missing key checks neither the member nor the radius. */
        if (found && !member_pos(o, &c->argv[2], q.shape.xy)) {
            reply_error(c, "ERR could not decode requested zset member");
            return;
        }
        if (found && !arg_radius(c, 3, &q.shape)) return;
    } else {
        base = src + 1;
        if (flags & GEO_SEARCH_STORE) q.store = &c->argv[1];
    }
    if (geo_parse_options(c, base, flags, found ? o : NULL, &q) &&
        geo_check_options(c, flags, &q)) {
        if (!found && q.store)
            store_nothing(c, q.store);
        else if (!found)
            reply_array(c, 0);
        else
            geo_run(c, flags, o, &q);
    }
    km_free(q.vertices);
}

static void cmd_georadius(client *c) {
    geo_search(c, 1, GEO_FROM_COORDS);
}

static void cmd_georadius_ro(client *c) {
    geo_search(c, 1, GEO_FROM_COORDS | GEO_NO_STORE);
}

static void cmd_georadiusbymember(client *c) {
    geo_search(c, 1, GEO_FROM_MEMBER);
}

static void cmd_georadiusbymember_ro(client *c) {
    geo_search(c, 1, GEO_FROM_MEMBER | GEO_NO_STORE);
}

static void cmd_geosearch(client *c) {
    geo_search(c, 1, GEO_SEARCH);
}

static void cmd_geosearchstore(client *c) {
    geo_search(c, 2, GEO_SEARCH | GEO_SEARCH_STORE);
}

/* ---- the table ---- */

/* clang-format off */
#define G_CMD(n, p, a, f, fk, lk, st, s, v)                                                        \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,                \
     .key_step = st, .group = "geo", .summary = s, .since = v}

static command geo_table[] = {
    G_CMD("geoadd", cmd_geoadd, -5, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", "3.2.0"),
    G_CMD("geopos", cmd_geopos, -2, CMD_READONLY, 1, 1, 1, "Returns the longitude and latitude of members from a geospatial index.", "3.2.0"),
    G_CMD("geodist", cmd_geodist, -4, CMD_READONLY, 1, 1, 1, "Returns the distance between two members of a geospatial index.", "3.2.0"),
    G_CMD("geohash", cmd_geohash, -2, CMD_READONLY, 1, 1, 1, "Returns members from a geospatial index as geohash strings.", "3.2.0"),
    G_CMD("georadius", cmd_georadius, -6, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", "3.2.0"),
    G_CMD("georadius_ro", cmd_georadius_ro, -6, CMD_READONLY, 1, 1, 1, "Returns members from a geospatial index that are within a distance from a coordinate.", "3.2.10"),
    G_CMD("georadiusbymember", cmd_georadiusbymember, -5, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "Queries a geospatial index for members within a distance from a member, optionally stores the result.", "3.2.0"),
    G_CMD("georadiusbymember_ro", cmd_georadiusbymember_ro, -5, CMD_READONLY, 1, 1, 1, "Returns members from a geospatial index that are within a distance from a member.", "3.2.10"),
    G_CMD("geosearch", cmd_geosearch, -7, CMD_READONLY, 1, 1, 1, "Queries a geospatial index for members inside an area of a box, a circle or a polygon.", "6.2.0"),
    G_CMD("geosearchstore", cmd_geosearchstore, -8, CMD_WRITE | CMD_DENYOOM, 1, 2, 1, "Queries a geospatial index for members inside an area of a box, a circle or a polygon, optionally stores the result.", "6.2.0"),
};

/* clang-format on */

const command_family commands_geo = {geo_table, K_ARRAY_LEN(geo_table)};
