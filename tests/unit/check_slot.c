/* check_slot.c -- unit tests for core/keyspace/slot.c: the CRC16 check
 * value, slots clients compute for known keys (what CLUSTER KEYSLOT
 * answers), and every hash-tag rule. */
#include "keyspace/slot.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned slot(const char *key) {
    return slot_of_key(key, strlen(key));
}

START_TEST(test_crc16_check_value) {
    /* The standard check value of CRC-16/XMODEM. */
    ck_assert_uint_eq(slot_crc16("123456789", 9), 0x31c3);
    ck_assert_uint_eq(slot_crc16("", 0), 0);
}
END_TEST

START_TEST(test_known_slots) {
    ck_assert_uint_eq(slot("foo"), 12182);
    ck_assert_uint_eq(slot("bar"), 5061);
    ck_assert_uint_eq(slot("hello"), 866);
    ck_assert_uint_eq(slot("somekey"), 11058);
    ck_assert_uint_eq(slot(""), 0);
}
END_TEST

START_TEST(test_hash_tags) {
    /* The tag decides. */
    ck_assert_uint_eq(slot("{user1000}.following"), slot("{user1000}.followers"));
    ck_assert_uint_eq(slot("{foo}"), slot("foo"));
    ck_assert_uint_eq(slot("x{foo}y"), slot("foo"));
    /* Only the first '{' and the first '}' after it count. */
    ck_assert_uint_eq(slot("foo{bar}{zap}"), slot("bar"));
    ck_assert_uint_eq(slot("foo{{bar}}zap"), slot("{bar"));
    /* An empty or unclosed tag hashes the whole key. */
    ck_assert_uint_eq(slot("foo{}{bar}"), slot_crc16("foo{}{bar}", 10) & (SLOT_COUNT - 1));
    ck_assert_uint_eq(slot("foo{bar"), slot_crc16("foo{bar", 7) & (SLOT_COUNT - 1));
    ck_assert_uint_eq(slot("}foo{"), slot_crc16("}foo{", 5) & (SLOT_COUNT - 1));
    /* Binary keys: a NUL inside the tag is part of it. */
    ck_assert_uint_eq(slot_of_key("{a\0b}c", 6), slot_crc16("a\0b", 3) & (SLOT_COUNT - 1));
}
END_TEST

START_TEST(test_every_slot_in_range) {
    char key[32];
    for (int i = 0; i < 100000; i++) {
        int n = snprintf(key, sizeof(key), "key:%d", i);
        ck_assert_uint_lt(slot_of_key(key, (size_t)n), SLOT_COUNT);
    }
}
END_TEST

static Suite *slot_suite(void) {
    Suite *s = suite_create("slot");
    TCase *tc = tcase_create("slot");
    tcase_add_test(tc, test_crc16_check_value);
    tcase_add_test(tc, test_known_slots);
    tcase_add_test(tc, test_hash_tags);
    tcase_add_test(tc, test_every_slot_in_range);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(slot_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
