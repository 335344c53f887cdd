/* check_geohash.c -- unit tests for core/ds/geohash.c: the scores, geohash
 * strings, positions and distances Valkey 8.0.1 gives fixed places
 * (geohash_valkey.h, recorded by tests/integration/geo_record.py),
 * encode/decode round trips over the whole range and at its limits,
 * neighbours (adjacent, wrapping at the antimeridian), the haversine
 * distance's properties, the shapes' membership tests, and that the nine
 * cells of a search cover every point of the shape. */
#include "ds/geohash.h"

#include "common/common.h"
#include "keyspace/object.h"

#include "geohash_valkey.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A position as GEOPOS writes it. */
static void human(double v, char *buf, size_t len) {
    size_t n = ld_to_str(buf, len, v);
    buf[n] = '\0';
}

/* A distance as GEODIST writes it. */
static void distance_text(double d, char *buf, size_t len) {
    long long v = llrint(d * 10000.0);
    snprintf(buf, len, "%lld.%04lld", v / 10000, v % 10000);
}

START_TEST(test_valkey_places) {
    for (size_t i = 0; i < K_ARRAY_LEN(valkey_places); i++) {
        const struct valkey_place *p = &valkey_places[i];
        uint64_t score = geo_score_encode(p->lon, p->lat);
        ck_assert_msg((double)score == p->score, "%s: score %llu, want %.0f", p->name,
                      (unsigned long long)score, p->score);
        char hash[12], lon[64], lat[64];
        geo_score_to_string((double)score, hash);
        ck_assert_str_eq(hash, p->hash);
        double xy[2];
        geo_score_decode((double)score, xy);
        human(xy[0], lon, sizeof(lon));
        human(xy[1], lat, sizeof(lat));
        ck_assert_msg(!strcmp(lon, p->pos_lon) && !strcmp(lat, p->pos_lat), "%s: %s,%s want %s,%s",
                      p->name, lon, lat, p->pos_lon, p->pos_lat);
    }
}
END_TEST

static const struct valkey_place *place(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(valkey_places); i++)
        if (!strcmp(valkey_places[i].name, name)) return &valkey_places[i];
    ck_abort_msg("no place %s", name);
    return NULL;
}

START_TEST(test_valkey_distances) {
    for (size_t i = 0; i < K_ARRAY_LEN(valkey_dists); i++) {
        const struct valkey_dist *d = &valkey_dists[i];
        double a[2], b[2];
        geo_score_decode(place(d->a)->score, a);
        geo_score_decode(place(d->b)->score, b);
        char got[64];
        distance_text(geo_distance(a[0], a[1], b[0], b[1]), got, sizeof(got));
        ck_assert_msg(!strcmp(got, d->dist), "%s-%s: %s, want %s", d->a, d->b, got, d->dist);
    }
}
END_TEST

/* Half a step-26 cell in each axis: how far a decoded position may be. */
static const double lon_half_cell = 360.0 / (1 << 26) / 2;
static const double lat_half_cell = (GEO_LAT_MAX - GEO_LAT_MIN) / (1 << 26) / 2;

static void round_trip(double lon, double lat) {
    double xy[2];
    geo_score_decode((double)geo_score_encode(lon, lat), xy);
    ck_assert_msg(fabs(xy[0] - lon) <= lon_half_cell * 1.0001, "lon %.17g -> %.17g", lon, xy[0]);
    /* At longitude 180 (or a rounding away) the hash needs 54 bits, more than a double score
     * holds: the score rounds its lowest (latitude) bit, one cell more. */
    double lat_slack = lon > 180 - lon_half_cell ? 3 * lat_half_cell : lat_half_cell;
    ck_assert_msg(fabs(xy[1] - lat) <= lat_slack * 1.0001, "lat %.17g -> %.17g", lat, xy[1]);
    ck_assert(xy[0] >= GEO_LON_MIN && xy[0] <= GEO_LON_MAX);
    ck_assert(xy[1] >= GEO_LAT_MIN && xy[1] <= GEO_LAT_MAX);
}

START_TEST(test_round_trips) {
    const double lons[] = {GEO_LON_MIN, nextafter(GEO_LON_MIN, 0), -90,        -1e-9, 0, 1e-9,
                           45.5,        nextafter(GEO_LON_MAX, 0), GEO_LON_MAX};
    const double lats[] = {GEO_LAT_MIN, nextafter(GEO_LAT_MIN, 0), -45,        -1e-9, 0, 1e-9,
                           60.25,       nextafter(GEO_LAT_MAX, 0), GEO_LAT_MAX};
    for (size_t i = 0; i < K_ARRAY_LEN(lons); i++)
        for (size_t j = 0; j < K_ARRAY_LEN(lats); j++)
            round_trip(lons[i], lats[j]);
    srand(7);
    for (int i = 0; i < 100000; i++)
        round_trip(GEO_LON_MIN + 360.0 * rand() / RAND_MAX,
                   GEO_LAT_MIN + (GEO_LAT_MAX - GEO_LAT_MIN) * rand() / RAND_MAX);
}
END_TEST

START_TEST(test_encode_limits) {
    geo_bits h;
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, 0, 0, 0, &h), K_ERR);
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, 0, 0, 33, &h), K_ERR);
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, 180.0001, 0, 26, &h), K_ERR);
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, 0, 85.06, 26, &h), K_ERR);
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, 0, NAN, 26, &h), K_ERR);
    /* The standard range still refuses what the stored one cannot hold. */
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range_std, 0, 86, 26, &h), K_ERR);
    ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, -180, -85.05112878, 26, &h), K_OK);
    ck_assert_uint_eq(h.bits, 0);
    ck_assert_uint_eq(h.step, 26);
    /* Every stored score fits 52 bits but at the maxima (one past). */
    ck_assert_uint_lt(geo_score_encode(179.9999, 85.05), 1ULL << 52);
}
END_TEST

START_TEST(test_neighbors) {
    const unsigned steps[] = {1, 2, 5, 13, 26};
    srand(11);
    for (size_t s = 0; s < K_ARRAY_LEN(steps); s++) {
        for (int k = 0; k < 200; k++) {
            double lon = -180 + 359.999 * rand() / RAND_MAX, lat = -85 + 170.0 * rand() / RAND_MAX;
            geo_bits h, nb[8];
            ck_assert_int_eq(geo_encode(&geo_lon_range, &geo_lat_range, lon, lat, steps[s], &h),
                             K_OK);
            geo_neighbors(h, nb);
            geo_area c, a;
            geo_decode(&geo_lon_range, &geo_lat_range, h, &c);
            double w = c.lon.max - c.lon.min, ht = c.lat.max - c.lat.min;
            /* N S E W NE NW SE SW as (dlon, dlat) cells. */
            const int d[8][2] = {{0, 1}, {0, -1}, {1, 0},  {-1, 0},
                                 {1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
            for (int i = 0; i < 8; i++) {
                ck_assert_uint_eq(nb[i].step, steps[s]);
                geo_decode(&geo_lon_range, &geo_lat_range, nb[i], &a);
                double want_lon = c.lon.min + d[i][0] * w, want_lat = c.lat.min + d[i][1] * ht;
                /* The grid wraps: east of the last column is the first. */
                if (want_lon >= 180 - 1e-9) want_lon -= 360;
                if (want_lon < -180 - 1e-9) want_lon += 360;
                if (want_lat >= GEO_LAT_MAX - 1e-9) want_lat -= GEO_LAT_MAX - GEO_LAT_MIN;
                if (want_lat < GEO_LAT_MIN - 1e-9) want_lat += GEO_LAT_MAX - GEO_LAT_MIN;
                ck_assert_msg(fabs(a.lon.min - want_lon) < 1e-9 &&
                                  fabs(a.lat.min - want_lat) < 1e-9,
                              "step %u neighbour %d of %.6f,%.6f", steps[s], i, lon, lat);
            }
        }
    }
}
END_TEST

START_TEST(test_distance) {
    ck_assert(geo_distance(10, 20, 10, 20) == 0);
    ck_assert(fabs(geo_distance(0, 0, 180, 0) - M_PI * GEO_EARTH_RADIUS_M) < 1e-6);
    ck_assert(fabs(geo_distance(0, -90, 0, 90) - M_PI * GEO_EARTH_RADIUS_M) < 1e-6);
    /* One degree of latitude on a meridian: R * pi / 180. */
    ck_assert(fabs(geo_distance(5, 1, 5, 2) - GEO_EARTH_RADIUS_M * M_PI / 180) < 1e-6);
    srand(3);
    for (int i = 0; i < 1000; i++) {
        double a = -180 + 360.0 * rand() / RAND_MAX, b = -85 + 170.0 * rand() / RAND_MAX;
        double c = -180 + 360.0 * rand() / RAND_MAX, d = -85 + 170.0 * rand() / RAND_MAX;
        double x = geo_distance(a, b, c, d), y = geo_distance(c, d, a, b);
        ck_assert(fabs(x - y) < 1e-6);
        ck_assert(x >= 0 && x <= M_PI * GEO_EARTH_RADIUS_M + 1e-6);
    }
}
END_TEST

/* 1 if the score lies in one of the cells' intervals. */
static int covered(const geo_bits cells[9], uint64_t score) {
    for (int i = 0; i < 9; i++) {
        if (cells[i].step == 0) continue;
        uint64_t min, max;
        geo_cell_scores(cells[i], &min, &max);
        if (score >= min && score < max) return 1;
    }
    return 0;
}

/* Random shapes: every random point the shape contains lies in its cells. */
START_TEST(test_cells_cover_shape) {
    srand(5);
    for (int k = 0; k < 300; k++) {
        geo_shape s = {.kind = (geo_shape_kind)(k % 2), .to_m = k % 3 ? 1000 : 1};
        s.xy[0] = -180 + 360.0 * rand() / RAND_MAX;
        s.xy[1] = -80 + 160.0 * rand() / RAND_MAX;
        s.radius = 1 + 500.0 * rand() / RAND_MAX;
        s.width = 1 + 800.0 * rand() / RAND_MAX;
        s.height = 1 + 800.0 * rand() / RAND_MAX;
        geo_bits cells[9];
        geo_shape_cells(&s, cells);
        ck_assert_uint_gt(cells[0].step, 0);
        double reach = (s.kind == GEO_CIRCLE ? s.radius : s.width + s.height) * s.to_m;
        double span = reach / GEO_EARTH_RADIUS_M * 180 / M_PI;
        for (int i = 0; i < 400; i++) {
            double lon = s.xy[0] + span * (2.0 * rand() / RAND_MAX - 1) / cos(s.xy[1] * M_PI / 180);
            double lat = s.xy[1] + span * (2.0 * rand() / RAND_MAX - 1);
            if (lon < -180 || lon > 180 || lat < GEO_LAT_MIN || lat > GEO_LAT_MAX) continue;
            double xy[2], dist;
            uint64_t score = geo_score_encode(lon, lat);
            geo_score_decode((double)score, xy);
            if (geo_shape_contains(&s, xy, &dist))
                ck_assert_msg(covered(cells, score), "shape %d point %.6f,%.6f", k, lon, lat);
        }
    }
}
END_TEST

START_TEST(test_shape_contains) {
    double dist = -1;
    geo_shape circle = {.kind = GEO_CIRCLE, .xy = {0, 0}, .to_m = 1000, .radius = 100};
    double in[2] = {0, 0.8}, out[2] = {0, 0.91};
    ck_assert(geo_shape_contains(&circle, in, &dist));
    ck_assert(fabs(dist - geo_distance(0, 0, 0, 0.8)) < 1e-9);
    ck_assert(!geo_shape_contains(&circle, out, &dist));
    /* A box 200 km wide and 50 km high. */
    geo_shape box = {.kind = GEO_BOX, .xy = {0, 0}, .to_m = 1000, .width = 200, .height = 50};
    double wide[2] = {0.8, 0}, high[2] = {0, 0.3}, corner[2] = {0.85, 0.2};
    ck_assert(geo_shape_contains(&box, wide, &dist));
    ck_assert(!geo_shape_contains(&box, high, &dist));
    ck_assert(geo_shape_contains(&box, corner, &dist));
    ck_assert(fabs(dist - geo_distance(0, 0, 0.85, 0.2)) < 1e-9);
    /* A concave polygon (a "C" open to the east): its notch is outside. */
    static const double c_shape[][2] = {{0, 0}, {3, 0}, {3, 1}, {1, 1},
                                        {1, 2}, {3, 2}, {3, 3}, {0, 3}};
    geo_shape poly = {.kind = GEO_POLYGON, .to_m = 1, .vertices = c_shape, .nvertices = 8};
    geo_bits cells[9];
    geo_shape_cells(&poly, cells); /* computes the centre */
    ck_assert(poly.bounds[0] == 0 && poly.bounds[1] == 0 && poly.bounds[2] == 3 &&
              poly.bounds[3] == 3);
    double left[2] = {0.5, 1.5}, notch[2] = {2, 1.5}, bottom[2] = {2.5, 0.5}, away[2] = {4, 1};
    ck_assert(geo_shape_contains(&poly, left, &dist));
    ck_assert(fabs(dist - geo_distance(poly.xy[0], poly.xy[1], 0.5, 1.5)) < 1e-9);
    ck_assert(!geo_shape_contains(&poly, notch, &dist));
    ck_assert(geo_shape_contains(&poly, bottom, &dist));
    ck_assert(!geo_shape_contains(&poly, away, &dist));
    /* A symmetric square's centre is its middle. */
    static const double square[][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    geo_shape sq = {.kind = GEO_POLYGON, .to_m = 1, .vertices = square, .nvertices = 4};
    geo_shape_cells(&sq, cells);
    ck_assert(fabs(sq.xy[0]) < 1e-12 && fabs(sq.xy[1]) < 1e-12);
}
END_TEST

static Suite *geohash_suite(void) {
    Suite *s = suite_create("geohash");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_valkey_places);
    tcase_add_test(tc, test_valkey_distances);
    tcase_add_test(tc, test_round_trips);
    tcase_add_test(tc, test_encode_limits);
    tcase_add_test(tc, test_neighbors);
    tcase_add_test(tc, test_distance);
    tcase_add_test(tc, test_cells_cover_shape);
    tcase_add_test(tc, test_shape_contains);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(geohash_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
