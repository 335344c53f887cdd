/* geohash.c -- the geohash encoding, distances and the cell cover of a
 * search shape (see geohash.h). Every formula follows Valkey 8.0.1's
 * order of floating-point operations, so encodings, distances and the
 * cells searched come out bit for bit the same. */
#include "ds/geohash.h"

#include "common/common.h"

#include <math.h>
#include <string.h>

const geo_range geo_lon_range = {GEO_LON_MIN, GEO_LON_MAX};
const geo_range geo_lat_range = {GEO_LAT_MIN, GEO_LAT_MAX};
const geo_range geo_lat_range_std = {-90.0, 90.0};

static const double deg_to_rad = M_PI / 180.0;

static double rad(double deg) {
    return deg * deg_to_rad;
}

static double deg(double r) {
    return r / deg_to_rad;
}

/* ---- bit interleaving: latitude at the even bits, longitude at the odd ---- */

/* Moves the 32 bits of v to the even positions of a 64-bit word. */
static uint64_t spread(uint32_t v) {
    uint64_t x = v;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
    x = (x | (x << 2)) & 0x3333333333333333ULL;
    x = (x | (x << 1)) & 0x5555555555555555ULL;
    return x;
}

/* The inverse of spread: the even bits of x packed into 32. */
static uint32_t gather(uint64_t x) {
    x &= 0x5555555555555555ULL;
    x = (x | (x >> 1)) & 0x3333333333333333ULL;
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
    x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
    return (uint32_t)x;
}

static uint64_t interleave(uint32_t lat_idx, uint32_t lon_idx) {
    return spread(lat_idx) | (spread(lon_idx) << 1);
}

/* ---- encoding ---- */

int geo_encode(const geo_range *lon_r, const geo_range *lat_r, double lon, double lat,
               unsigned step, geo_bits *out) {
    if (step == 0 || step > 32) return K_ERR;
    if (!(lon >= GEO_LON_MIN && lon <= GEO_LON_MAX && lat >= GEO_LAT_MIN && lat <= GEO_LAT_MAX))
        return K_ERR;
    if (lat < lat_r->min || lat > lat_r->max || lon < lon_r->min || lon > lon_r->max) return K_ERR;
    double lat_off = (lat - lat_r->min) / (lat_r->max - lat_r->min);
    double lon_off = (lon - lon_r->min) / (lon_r->max - lon_r->min);
    lat_off *= (double)(1ULL << step);
    lon_off *= (double)(1ULL << step);
    /* The maximum of a range gives the index 2^step, one past the last
     * cell: kept as Valkey keeps it (decoding clamps it back). */
    out->bits = interleave((uint32_t)lat_off, (uint32_t)lon_off);
    out->step = step;
    return K_OK;
}

void geo_decode(const geo_range *lon_r, const geo_range *lat_r, geo_bits h, geo_area *out) {
    uint32_t lat_idx = gather(h.bits), lon_idx = gather(h.bits >> 1);
    /* Dividing by a power of two and multiplying by its inverse give the
     * same doubles (both exact), and four divisions were the slow part of
     * decoding every member a GEOSEARCH looks at. */
    double per_cell = 1.0 / (double)(1ULL << h.step);
    double lat_scale = lat_r->max - lat_r->min, lon_scale = lon_r->max - lon_r->min;
    out->lat.min = lat_r->min + (lat_idx * per_cell) * lat_scale;
    out->lat.max = lat_r->min + ((lat_idx + 1) * per_cell) * lat_scale;
    out->lon.min = lon_r->min + (lon_idx * per_cell) * lon_scale;
    out->lon.max = lon_r->min + ((lon_idx + 1) * per_cell) * lon_scale;
}

static double clamp(double v, double lo, double hi) {
    return v > hi ? hi : v < lo ? lo : v;
}

uint64_t geo_score_encode(double lon, double lat) {
    geo_bits h = {0, 0};
    geo_encode(&geo_lon_range, &geo_lat_range, lon, lat, GEO_STEP_MAX, &h);
    return h.bits;
}

/* A score as the hash bits Valkey reads from it: its conversion to an
 * unsigned 64-bit integer as x86-64 performs it, defined for any score
 * (ZADD can give a geo set's member any score). */
static uint64_t score_bits(double score) {
    const double two63 = 9223372036854775808.0;
    if (score >= 0 && score < two63) return (uint64_t)score;
    if (score >= two63)
        return score - two63 < two63 ? ((uint64_t)(score - two63)) ^ (1ULL << 63) : 0;
    if (score > -two63) return (uint64_t)(int64_t)score;
    return 1ULL << 63;
}

void geo_score_decode(double score, double xy[2]) {
    geo_bits h = {score_bits(score), GEO_STEP_MAX};
    geo_area a;
    geo_decode(&geo_lon_range, &geo_lat_range, h, &a);
    xy[0] = clamp((a.lon.min + a.lon.max) / 2, GEO_LON_MIN, GEO_LON_MAX);
    xy[1] = clamp((a.lat.min + a.lat.max) / 2, GEO_LAT_MIN, GEO_LAT_MAX);
}

void geo_score_to_string(double score, char out[12]) {
    static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
    double xy[2];
    geo_score_decode(score, xy);
    /* The stored hash uses the Mercator latitude limits; the standard
     * geohash is re-encoded against -90..90. */
    geo_bits h = {0, 0};
    geo_encode(&geo_lon_range, &geo_lat_range_std, xy[0], xy[1], GEO_STEP_MAX, &h);
    for (int i = 0; i < 10; i++)
        out[i] = alphabet[(h.bits >> (52 - (i + 1) * 5)) & 0x1f];
    out[10] = alphabet[0]; /* 52 bits fill ten characters; the 11th is a zero */
    out[11] = '\0';
}

static uint64_t align52(geo_bits h) {
    return h.bits << (52 - h.step * 2);
}

void geo_cell_scores(geo_bits h, uint64_t *min, uint64_t *max) {
    *min = align52(h);
    h.bits++;
    *max = align52(h);
}

/* ---- neighbours ---- */

/* h moved by dlon cells east and dlat cells north, wrapping around the
 * step's grid; an axis that does not move keeps its bits as they are. */
static geo_bits geo_move(geo_bits h, int dlon, int dlat) {
    uint32_t mask = (uint32_t)((1ULL << h.step) - 1);
    uint32_t lat_idx = gather(h.bits), lon_idx = gather(h.bits >> 1);
    if (dlon) lon_idx = (uint32_t)(lon_idx + (uint32_t)dlon) & mask;
    if (dlat) lat_idx = (uint32_t)(lat_idx + (uint32_t)dlat) & mask;
    h.bits = interleave(lat_idx, lon_idx);
    return h;
}

void geo_neighbors(geo_bits h, geo_bits out[8]) {
    static const int moves[8][2] = {{0, 1}, {0, -1}, {1, 0},  {-1, 0},
                                    {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
    for (int i = 0; i < 8; i++)
        out[i] = geo_move(h, moves[i][0], moves[i][1]);
}

unsigned geo_estimate_step(double range_m, double lat) {
    if (range_m == 0) return 26;
    int step = 1;
    while (range_m < 20037726.37) { /* the Mercator half-width */
        range_m *= 2;
        step++;
    }
    step -= 2; /* a margin so the nine cells cover the range in most cases */
    /* Meridians converge towards the poles: wider cells there. */
    if (lat > 66 || lat < -66) {
        step--;
        if (lat > 80 || lat < -80) step--;
    }
    if (step < 1) step = 1;
    if (step > 26) step = 26;
    return (unsigned)step;
}

/* ---- distances ---- */

static double lat_distance(double lat1, double lat2) {
    return GEO_EARTH_RADIUS_M * fabs(rad(lat2) - rad(lat1));
}

double geo_distance(double lon1, double lat1, double lon2, double lat2) {
    double lon1r = rad(lon1), lon2r = rad(lon2);
    double v = sin((lon2r - lon1r) / 2);
    /* On one meridian the haversine reduces to the latitude difference. */
    if (v == 0.0) return lat_distance(lat1, lat2);
    double lat1r = rad(lat1), lat2r = rad(lat2);
    double u = sin((lat2r - lat1r) / 2);
    double a = u * u + cos(lat1r) * cos(lat2r) * v * v;
    return 2.0 * GEO_EARTH_RADIUS_M * asin(sqrt(a));
}

/* ---- shapes ---- */

/* A polygon's bounds are its vertices' extremes; its centre is the mean of
 * the vertices on the sphere (Valkey 9.0's centroid). */
static void polygon_bounds(geo_shape *s) {
    double min_lon = GEO_LON_MAX, max_lon = GEO_LON_MIN;
    double min_lat = GEO_LAT_MAX, max_lat = GEO_LAT_MIN;
    double x = 0, y = 0, z = 0;
    for (size_t i = 0; i < s->nvertices; i++) {
        double lon = s->vertices[i][0], lat = s->vertices[i][1];
        if (lon < min_lon) min_lon = lon;
        if (lon > max_lon) max_lon = lon;
        if (lat < min_lat) min_lat = lat;
        if (lat > max_lat) max_lat = lat;
        double lonr = rad(lon), latr = rad(lat);
        x += GEO_EARTH_RADIUS_M * cos(latr) * cos(lonr);
        y += GEO_EARTH_RADIUS_M * cos(latr) * sin(lonr);
        z += GEO_EARTH_RADIUS_M * sin(latr);
    }
    s->bounds[0] = min_lon;
    s->bounds[1] = min_lat;
    s->bounds[2] = max_lon;
    s->bounds[3] = max_lat;
    x /= (double)s->nvertices;
    y /= (double)s->nvertices;
    z /= (double)s->nvertices;
    s->xy[0] = deg(atan2(y, x));
    s->xy[1] = deg(atan2(z, sqrt(x * x + y * y)));
}

/* The bounds of a circle or box: its half-height in latitude, its
 * half-width in longitude at the edge nearer the pole (the wider one). */
static void shape_bounds(geo_shape *s) {
    if (s->kind == GEO_POLYGON) {
        polygon_bounds(s);
        return;
    }
    double lon = s->xy[0], lat = s->xy[1];
    double height = s->kind == GEO_CIRCLE ? s->to_m * s->radius : s->to_m * s->height / 2;
    double width = s->kind == GEO_CIRCLE ? s->to_m * s->radius : s->to_m * s->width / 2;
    double lat_delta = deg(height / GEO_EARTH_RADIUS_M);
    double lon_delta_top = deg(width / GEO_EARTH_RADIUS_M / cos(rad(lat + lat_delta)));
    double lon_delta_bottom = deg(width / GEO_EARTH_RADIUS_M / cos(rad(lat - lat_delta)));
    int south = lat < 0;
    s->bounds[0] = south ? lon - lon_delta_bottom : lon - lon_delta_top;
    s->bounds[2] = south ? lon + lon_delta_bottom : lon + lon_delta_top;
    s->bounds[1] = lat - lat_delta;
    s->bounds[3] = lat + lat_delta;
}

/* The distance from `from` the cells must reach. */
static double shape_reach_m(const geo_shape *s, const double from[2]) {
    if (s->kind == GEO_CIRCLE) return s->radius * s->to_m;
    if (s->kind == GEO_BOX)
        return sqrt((s->width / 2) * (s->width / 2) + (s->height / 2) * (s->height / 2)) * s->to_m;
    const double *b = s->bounds;
    double corners[4][2] = {{b[0], b[3]}, {b[2], b[3]}, {b[0], b[1]}, {b[2], b[1]}};
    double reach = 0;
    for (int i = 0; i < 4; i++) {
        double d = geo_distance(from[0], from[1], corners[i][0], corners[i][1]);
        if (i == 0 || d > reach) reach = d;
    }
    return reach * s->to_m;
}

/* The cell at `centre` and its neighbours; K_ERR (nothing written) when
 * the centre cannot be encoded. */
static int cells_at(const double centre[2], unsigned step, geo_bits *cell, geo_bits around[8],
                    geo_area *area) {
    if (geo_encode(&geo_lon_range, &geo_lat_range, centre[0], centre[1], step, cell) != K_OK)
        return K_ERR;
    geo_neighbors(*cell, around);
    geo_decode(&geo_lon_range, &geo_lat_range, *cell, area);
    return K_OK;
}

/* The cells north, south, east and west of the centre. */
static void decode_sides(const geo_bits around[8], geo_area sides[4]) {
    for (int i = 0; i < 4; i++)
        geo_decode(&geo_lon_range, &geo_lat_range, around[i], &sides[i]);
}

/* Valkey's test: a neighbour on some side stops short of the bounds. */
static int neighbours_short(const geo_shape *s, const geo_bits around[8]) {
    geo_area d[4];
    decode_sides(around, d);
    const double *b = s->bounds;
    return d[0].lat.max < b[3] || d[1].lat.min > b[1] || d[2].lon.max < b[2] || d[3].lon.min > b[0];
}

/* Whether the centre cell and its neighbours hold every position of the
 * bounds: on each side the centre cell reaches past them, or sits on the
 * grid's edge (nothing lies beyond it), or its neighbour reaches past. A
 * neighbour only wraps around the grid from a cell on its edge. */
static int cells_cover(const geo_shape *s, const geo_area *area, const geo_bits around[8]) {
    geo_area d[4];
    decode_sides(around, d);
    const double *b = s->bounds;
    const geo_range *lat = &area->lat, *lon = &area->lon;
    int north = lat->max >= GEO_LAT_MAX || lat->max > b[3] || d[0].lat.max > b[3];
    int south = lat->min <= GEO_LAT_MIN || lat->min < b[1] || d[1].lat.min < b[1];
    int east = lon->max >= GEO_LON_MAX || lon->max > b[2] || d[2].lon.max > b[2];
    int west = lon->min <= GEO_LON_MIN || lon->min < b[0] || d[3].lon.min < b[0];
    return north && south && east && west;
}

/* The highest value of range r that encodes inside the grid at every step:
 * the middle of the last step-26 cell (r->max itself, and the values
 * that round to it, encode as a cell past the last). */
static double grid_top(const geo_range *r) {
    return r->max - (r->max - r->min) / (double)(1ULL << (GEO_STEP_MAX + 1));
}

/* Where a shape's cells are centred: its centre (a circle's or box's is
 * used as given, as Valkey uses it). A polygon's centroid on the sphere
 * can lie past the latitude limits (a wide polygon by the limit), far
 * from its box (one spanning most longitudes has it by the antimeridian)
 * or on the grid's east or north edge: it is clamped into the box and
 * the grid. */
static void search_centre(const geo_shape *s, double centre[2]) {
    centre[0] = s->xy[0];
    centre[1] = s->xy[1];
    if (s->kind != GEO_POLYGON) return;
    const double *b = s->bounds;
    centre[0] = clamp(centre[0], b[0], fmin(b[2], grid_top(&geo_lon_range)));
    centre[1] = clamp(centre[1], b[1], fmin(b[3], grid_top(&geo_lat_range)));
}

static int shape_cells(geo_shape *s, geo_bits cells[9]) {
    shape_bounds(s);
    double centre[2];
    search_centre(s, centre);
    unsigned step = geo_estimate_step(shape_reach_m(s, centre), centre[1]);
    geo_bits *around = cells + 1; /* N S E W NE NW SE SW */
    geo_area area;
    if (cells_at(centre, step, &cells[0], around, &area) != K_OK) return K_ERR;
    if (s->kind == GEO_POLYGON) {
        /* The polygon is planar in lon/lat, and its box can reach farther
         * from the centre than the estimate (a polygon spanning most
         * longitudes, by the antimeridian): coarser until it is in. */
        while (step > 1 && !cells_cover(s, &area, around))
            if (cells_at(centre, --step, &cells[0], around, &area) != K_OK) return K_ERR;
    } else if (step > 1 && neighbours_short(s, around)) {
        /* Near a cell's edge the estimate can leave the bounds past the
         * neighbours: one step coarser then, as Valkey. */
        if (cells_at(centre, --step, &cells[0], around, &area) != K_OK) return K_ERR;
    }
    if (step < 2) return K_OK;
    /* Neighbours on a side the bounds do not reach are not searched. */
    static const geo_bits none = {0, 0};
    const double *b = s->bounds;
    if (area.lat.min < b[1]) around[1] = around[7] = around[6] = none;
    if (area.lat.max > b[3]) around[0] = around[4] = around[5] = none;
    if (area.lon.min < b[0]) around[3] = around[7] = around[5] = none;
    if (area.lon.max > b[2]) around[2] = around[6] = around[4] = none;
    return K_OK;
}

int geo_shape_cells(geo_shape *s, geo_bits cells[9]) {
    memset(cells, 0, 9 * sizeof(*cells));
    if (shape_cells(s, cells) == K_OK) return K_OK;
    memset(cells, 0, 9 * sizeof(*cells));
    return K_ERR;
}

/* PNPOLY's even-odd rule in the lon/lat plane: the horizontal ray from
 * the point crosses the edge a-b. */
static int ray_crosses(const double a[2], const double b[2], double lon, double lat) {
    return ((a[1] > lat) != (b[1] > lat)) &&
           (lon < (b[0] - a[0]) * (lat - a[1]) / (b[1] - a[1]) + a[0]);
}

int geo_shape_contains(const geo_shape *s, const double xy[2], double *dist) {
    const double *c = s->xy;
    if (s->kind == GEO_CIRCLE) {
        /* A point is never nearer than its latitude difference, which
         * costs no sine: most points of the cells around a circle are
         * refused by it. The margin leaves the points at the edge, where
         * the two formulas may round apart, to the full distance, so the
         * answer is always the haversine's (as Valkey's). */
        double r = s->radius * s->to_m;
        if (lat_distance(xy[1], c[1]) > r * (1 + 1e-9)) return 0;
        *dist = geo_distance(c[0], c[1], xy[0], xy[1]);
        return *dist <= r;
    }
    if (s->kind == GEO_BOX) {
        /* The cheaper latitude test first. */
        if (lat_distance(xy[1], c[1]) > s->height * s->to_m / 2) return 0;
        if (geo_distance(xy[0], xy[1], c[0], xy[1]) > s->width * s->to_m / 2) return 0;
        *dist = geo_distance(c[0], c[1], xy[0], xy[1]);
        return 1;
    }
    int inside = 0;
    for (size_t i = 0, j = s->nvertices - 1; i < s->nvertices; j = i++)
        if (ray_crosses(s->vertices[i], s->vertices[j], xy[0], xy[1])) inside = !inside;
    if (inside) *dist = geo_distance(c[0], c[1], xy[0], xy[1]);
    return inside;
}
