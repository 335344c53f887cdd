/* geohash.h -- the geo commands' math: the 52-bit interleaved geohash that
 * a geo set keeps as each member's sorted-set score, its decoding, the
 * 11-character standard geohash string, the haversine distance, and the
 * search of a shape (circle, box, polygon) through the nine geohash cells
 * that cover it.
 *
 * The numbers are Valkey 8.0.1's (geohash.c, geohash_helper.c): latitudes
 * are limited to +-85.05112878 (the Web Mercator square), a position is
 * encoded at step 26 (26 bits per axis, latitude bits at the even
 * positions), the Earth is a sphere of radius 6372797.560856 m, and the
 * cells of a search are chosen by the same radius estimate, so a search
 * walks the same score intervals in the same order. The polygon shape is
 * Valkey 9.0's GEOSEARCH BYPOLYGON.
 *
 * Threads: pure functions, any thread. */
#ifndef KEEL_GEOHASH_H
#define KEEL_GEOHASH_H

#include <stddef.h>
#include <stdint.h>

#define GEO_STEP_MAX 26 /* bits per axis of a stored position */
#define GEO_LAT_MIN -85.05112878
#define GEO_LAT_MAX 85.05112878
#define GEO_LON_MIN -180.0
#define GEO_LON_MAX 180.0
#define GEO_EARTH_RADIUS_M 6372797.560856

/* A geohash of `step` bits per axis; step 0 (and bits 0) marks no cell. */
typedef struct geo_bits {
    uint64_t bits;
    unsigned step;
} geo_bits;

typedef struct geo_range {
    double min, max;
} geo_range;

/* The rectangle a geohash stands for. */
typedef struct geo_area {
    geo_range lon, lat;
} geo_area;

/* The ranges positions are encoded against: the stored scores use
 * GEO_LAT_MIN..GEO_LAT_MAX, the standard geohash strings -90..90. */
extern const geo_range geo_lon_range;
extern const geo_range geo_lat_range;
extern const geo_range geo_lat_range_std;

/* Encodes (lon, lat) at step 1..32 against the ranges. K_ERR when the
 * position is outside the ranges or outside the stored limits. */
int geo_encode(const geo_range *lon_r, const geo_range *lat_r, double lon, double lat,
               unsigned step, geo_bits *out);
/* The cell of h against the ranges. */
void geo_decode(const geo_range *lon_r, const geo_range *lat_r, geo_bits h, geo_area *out);

/* The score a geo set stores for (lon, lat), which must be within the
 * limits: the step-26 hash as an integer. */
uint64_t geo_score_encode(double lon, double lat);
/* The position a score stands for: its cell's centre, clamped to the
 * limits. */
void geo_score_decode(double score, double xy[2]);
/* The 11-character standard geohash (NUL-terminated) of a stored score. */
void geo_score_to_string(double score, char out[12]);
/* The scores [*min, *max) of every position inside cell h. */
void geo_cell_scores(geo_bits h, uint64_t *min, uint64_t *max);

/* The eight cells around h, in the order a search walks them: north,
 * south, east, west, north-east, north-west, south-east, south-west. */
void geo_neighbors(geo_bits h, geo_bits out[8]);
/* The step whose cells are about range_m wide at latitude lat. */
unsigned geo_estimate_step(double range_m, double lat);

/* Great-circle (haversine) distance in metres. */
double geo_distance(double lon1, double lat1, double lon2, double lat2);

/* A search shape. Sizes are in `unit`s (metres per unit in to_m); the
 * polygon's vertices (lon, lat pairs) are borrowed. */
typedef enum geo_shape_kind { GEO_CIRCLE, GEO_BOX, GEO_POLYGON } geo_shape_kind;
typedef struct geo_shape {
    geo_shape_kind kind;
    double xy[2]; /* the centre (a polygon's: computed by geo_shape_cells) */
    double to_m;
    double radius;        /* GEO_CIRCLE */
    double width, height; /* GEO_BOX */
    const double (*vertices)[2];
    size_t nvertices; /* GEO_POLYGON, at least 3 */
    double bounds[4]; /* min lon, min lat, max lon, max lat (computed) */
} geo_shape;

/* The nine cells that cover the shape, in search order (the centre cell,
 * then as geo_neighbors); cells a search can skip have step 0. Sets the
 * shape's bounds (and a polygon's centre). */
void geo_shape_cells(geo_shape *s, geo_bits cells[9]);
/* 1 if the position xy is inside the shape, with *dist its distance in
 * metres from the shape's centre; 0 if outside. */
int geo_shape_contains(const geo_shape *s, const double xy[2], double *dist);

#endif
