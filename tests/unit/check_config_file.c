/* check_config_file.c -- unit tests for config/config_file.c: comments,
 * quoting, CRLF lines, include (with temp files), include depth, error line
 * numbers and callback error propagation. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kmem.h"
#include "config/config_file.h"

/* ---- Recording callback ---------------------------------------------- */

typedef struct rec {
    char log[8192];
    size_t len;
    int calls;
    int fail_at_call;     /* 1-based call that fails; 0 = none */
    const char *fail_msg; /* NULL: fail without setting *err */
} rec;

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Logs "file:line:arg0|arg1|...;" with each argument's bytes. */
static int record(void *priv, const char *file, int line, int argc, char **argv, const size_t *argl,
                  char **err) {
    rec *r = priv;
    r->calls++;
    r->len +=
        (size_t)snprintf(r->log + r->len, sizeof(r->log) - r->len, "%s:%d:", base_name(file), line);
    for (int i = 0; i < argc; i++)
        r->len += (size_t)snprintf(r->log + r->len, sizeof(r->log) - r->len, "%s%s", i ? "|" : "",
                                   argv[i]);
    r->len += (size_t)snprintf(r->log + r->len, sizeof(r->log) - r->len, ";");
    ck_assert_uint_lt(r->len, sizeof(r->log) - 1);
    if (r->calls == r->fail_at_call) {
        if (r->fail_msg) *err = km_strdup(r->fail_msg);
        return -1;
    }
    return 0;
}

static int load_text(const char *text, rec *r, char **err) {
    return config_text_load(text, strlen(text), "test.conf", record, r, err);
}

static void expect_text(const char *text, const char *want_log) {
    rec r = {0};
    char *err = (char *)"untouched";
    ck_assert_int_eq(load_text(text, &r, &err), 0);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(r.log, want_log);
}

static void expect_text_error(const char *text, const char *want_err, const char *want_log) {
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(load_text(text, &r, &err), -1);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, want_err);
    ck_assert_str_eq(r.log, want_log);
    km_free(err);
}

/* ---- Temp files ---------------------------------------------------------- */

static char g_dir[256];

static void make_dir(void) {
    snprintf(g_dir, sizeof(g_dir), "/tmp/keel-config-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void remove_dir(void) {
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path_of(const char *name) {
    static char bufs[4][512];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static void write_file(const char *name, const char *text) {
    FILE *f = fopen(path_of(name), "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* ---- Syntax ---------------------------------------------------------------- */

START_TEST(test_basic_lines) {
    expect_text("", "");
    expect_text("port 6379", "test.conf:1:port|6379;");
    expect_text("port 6379\n# comment\n   \t# indented comment\n\n   \nSAVE \"\"\n"
                "bind 127.0.0.1 ::1\n",
                "test.conf:1:port|6379;test.conf:6:save|;test.conf:7:bind|127.0.0.1|::1;");
    /* Only the directive name is lowercased. */
    expect_text("MaxMemory-Policy ALLKEYS-LRU", "test.conf:1:maxmemory-policy|ALLKEYS-LRU;");
    /* '#' after the start of a line is an ordinary byte. */
    expect_text("requirepass a#b # c", "test.conf:1:requirepass|a#b|#|c;");
    /* Indentation and trailing blanks. */
    expect_text("\t  dir /tmp  \t\n", "test.conf:1:dir|/tmp;");
    /* A line of only \v: no arguments, skipped. */
    expect_text("\v\nx 1", "test.conf:2:x|1;");
}
END_TEST

START_TEST(test_quotes) {
    expect_text("requirepass \"p a s s\"\n", "test.conf:1:requirepass|p a s s;");
    expect_text("x 'it\\'s' \"tab\\there\" \"\\x41\\x42\"", "test.conf:1:x|it's|tab\there|AB;");
    expect_text("\"Dir\" \"/tmp/with space\"", "test.conf:1:dir|/tmp/with space;");
    expect_text("save \"\" ''", "test.conf:1:save||;");
    /* argv strings end right after each unescaped argument, even where the
     * unescaping left stale bytes behind. */
    expect_text("k \"a\\x41\\x42\" 'q' 'r\\'s'", "test.conf:1:k|aAB|q|r's;");
}
END_TEST

START_TEST(test_crlf_lines) {
    expect_text("a 1\r\nb \"2\"\r\n\r\n# c\r\nd '4'\r\n",
                "test.conf:1:a|1;test.conf:2:b|2;test.conf:5:d|4;");
    expect_text("a 1\r\n", "test.conf:1:a|1;");
}
END_TEST

START_TEST(test_unbalanced_quotes) {
    expect_text_error("ok 1\n\nbad \"x\nnever 1\n",
                      "test.conf:3: unbalanced quotes in configuration line", "test.conf:1:ok|1;");
    expect_text_error("bad 'x'y", "test.conf:1: unbalanced quotes in configuration line", "");
    expect_text_error("a 1\r\nb \"x\\\"\r\n",
                      "test.conf:2: unbalanced quotes in configuration line", "test.conf:1:a|1;");
}
END_TEST

START_TEST(test_too_many_args) {
    char *text = malloc(CONFIG_MAX_ARGS * 2 + 16);
    size_t n = 0;
    for (int i = 0; i < CONFIG_MAX_ARGS; i++) {
        text[n++] = 'a';
        text[n++] = ' ';
    }
    text[n] = '\0';
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(load_text(text, &r, &err), 0); /* exactly the limit */
    ck_assert_int_eq(r.calls, 1);
    strcpy(text + n, "a");
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(load_text(text, &r, &err), -1);
    ck_assert_str_eq(err, "test.conf:1: too many arguments (max 1024)");
    ck_assert_int_eq(r.calls, 0);
    km_free(err);
    free(text);
}
END_TEST

/* ---- Callback errors ------------------------------------------------------ */

START_TEST(test_callback_error) {
    rec r = {.fail_at_call = 2, .fail_msg = "argument must be a number"};
    char *err = NULL;
    ck_assert_int_eq(load_text("a 1\n# c\nb x\nc 3\n", &r, &err), -1);
    ck_assert_str_eq(err, "test.conf:3: argument must be a number");
    ck_assert_str_eq(r.log, "test.conf:1:a|1;test.conf:3:b|x;"); /* reading stopped */
    km_free(err);

    /* A callback that forgets *err still yields a located message. */
    memset(&r, 0, sizeof(r));
    r.fail_at_call = 1;
    err = NULL;
    ck_assert_int_eq(load_text("\n\nbogus 1\n", &r, &err), -1);
    ck_assert_str_eq(err, "test.conf:3: invalid directive or arguments");
    km_free(err);
}
END_TEST

/* ---- Files and include ------------------------------------------------------ */

START_TEST(test_file_and_include) {
    make_dir();
    char text[1024];
    write_file("inc.conf", "c 3\r\n# inc comment\nd \"4 4\"\n");
    snprintf(text, sizeof(text), "a 1\nINCLUDE %s\nb 2\n", path_of("inc.conf"));
    write_file("main.conf", text);
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(config_file_load(path_of("main.conf"), record, &r, &err), 0);
    ck_assert_ptr_null(err);
    ck_assert_str_eq(r.log, "main.conf:1:a|1;inc.conf:1:c|3;inc.conf:3:d|4 4;main.conf:3:b|2;");

    /* Quoted include path with a space, and the same file twice. */
    write_file("sp ace.conf", "e 5");
    snprintf(text, sizeof(text), "include \"%s\"\ninclude '%s'\n", path_of("sp ace.conf"),
             path_of("sp ace.conf"));
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(load_text(text, &r, &err), 0);
    ck_assert_str_eq(r.log, "sp ace.conf:1:e|5;sp ace.conf:1:e|5;");
    remove_dir();
}
END_TEST

START_TEST(test_include_relative_to_cwd) {
    make_dir();
    write_file("rel.conf", "r 1\n");
    char old[512];
    ck_assert_ptr_nonnull(getcwd(old, sizeof(old)));
    ck_assert_int_eq(chdir(g_dir), 0);
    rec r = {0};
    char *err = NULL;
    int rc = load_text("include rel.conf\n", &r, &err);
    ck_assert_int_eq(chdir(old), 0);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(r.log, "rel.conf:1:r|1;");
    remove_dir();
}
END_TEST

START_TEST(test_open_errors) {
    make_dir();
    rec r = {0};
    char *err = NULL;
    const char *missing = path_of("missing.conf");
    ck_assert_int_eq(config_file_load(missing, record, &r, &err), -1);
    char want[1024];
    snprintf(want, sizeof(want), "cannot open %s: No such file or directory", missing);
    ck_assert_str_eq(err, want);
    km_free(err);

    /* A directory opens but cannot be read. */
    ck_assert_int_eq(config_file_load(g_dir, record, &r, &err), -1);
    snprintf(want, sizeof(want), "cannot open %s: Is a directory", g_dir);
    ck_assert_str_eq(err, want);
    km_free(err);

    /* A missing include is reported at the include line. */
    char text[1024];
    snprintf(text, sizeof(text), "a 1\n\ninclude %s\nb 2\n", missing);
    write_file("main.conf", text);
    ck_assert_int_eq(config_file_load(path_of("main.conf"), record, &r, &err), -1);
    snprintf(want, sizeof(want), "%s:3: cannot open %s: No such file or directory",
             path_of("main.conf"), missing);
    ck_assert_str_eq(err, want);
    ck_assert_str_eq(r.log, "main.conf:1:a|1;");
    km_free(err);

    /* include takes exactly one argument. */
    expect_text_error("a 1\ninclude\n", "test.conf:2: wrong number of arguments for 'include'",
                      "test.conf:1:a|1;");
    expect_text_error("include a b\n", "test.conf:1: wrong number of arguments for 'include'", "");
    remove_dir();
}
END_TEST

START_TEST(test_errors_inside_include) {
    make_dir();
    char text[1024];
    write_file("inc.conf", "ok 1\nbad \"quote\n");
    snprintf(text, sizeof(text), "include %s\nafter 1\n", path_of("inc.conf"));
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(load_text(text, &r, &err), -1);
    char want[1024];
    snprintf(want, sizeof(want), "%s:2: unbalanced quotes in configuration line",
             path_of("inc.conf"));
    ck_assert_str_eq(err, want);
    ck_assert_str_eq(r.log, "inc.conf:1:ok|1;");
    km_free(err);

    /* Callback errors inside an included file carry that file's location. */
    write_file("inc2.conf", "x 1\ny 2\n");
    snprintf(text, sizeof(text), "include %s\n", path_of("inc2.conf"));
    memset(&r, 0, sizeof(r));
    r.fail_at_call = 2;
    r.fail_msg = "no";
    ck_assert_int_eq(load_text(text, &r, &err), -1);
    snprintf(want, sizeof(want), "%s:2: no", path_of("inc2.conf"));
    ck_assert_str_eq(err, want);
    km_free(err);
    remove_dir();
}
END_TEST

START_TEST(test_include_loop) {
    make_dir();
    char text[1024];
    snprintf(text, sizeof(text), "x 1\ninclude %s\n", path_of("loop.conf"));
    write_file("loop.conf", text);
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(config_file_load(path_of("loop.conf"), record, &r, &err), -1);
    char want[1024];
    snprintf(want, sizeof(want), "%s:2: include nesting deeper than %d levels (include loop?)",
             path_of("loop.conf"), CONFIG_INCLUDE_DEPTH);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(r.calls, CONFIG_INCLUDE_DEPTH + 1); /* "x 1" at each level */
    km_free(err);
    remove_dir();
}
END_TEST

/* A chain f0 -> f1 -> ... -> fN of N nested includes. */
static int load_chain(int n, rec *r, char **err) {
    char name[32], text[600];
    for (int i = 0; i <= n; i++) {
        snprintf(name, sizeof(name), "f%d.conf", i);
        if (i < n) {
            char next[32];
            snprintf(next, sizeof(next), "f%d.conf", i + 1);
            snprintf(text, sizeof(text), "include %s\n", path_of(next));
        } else {
            snprintf(text, sizeof(text), "leaf %d\n", i);
        }
        write_file(name, text);
    }
    return config_file_load(path_of("f0.conf"), record, r, err);
}

START_TEST(test_include_depth_limit) {
    make_dir();
    rec r = {0};
    char *err = NULL;
    ck_assert_int_eq(load_chain(CONFIG_INCLUDE_DEPTH, &r, &err), 0);
    ck_assert_int_eq(r.calls, 1);
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(load_chain(CONFIG_INCLUDE_DEPTH + 1, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "include nesting deeper than"));
    ck_assert_int_eq(r.calls, 0);
    km_free(err);
    remove_dir();
}
END_TEST

static Suite *config_file_suite(void) {
    Suite *s = suite_create("config_file");
    TCase *tc = tcase_create("syntax");
    tcase_add_test(tc, test_basic_lines);
    tcase_add_test(tc, test_quotes);
    tcase_add_test(tc, test_crlf_lines);
    tcase_add_test(tc, test_unbalanced_quotes);
    tcase_add_test(tc, test_too_many_args);
    tcase_add_test(tc, test_callback_error);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_test(tc, test_file_and_include);
    tcase_add_test(tc, test_include_relative_to_cwd);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_errors_inside_include);
    tcase_add_test(tc, test_include_loop);
    tcase_add_test(tc, test_include_depth_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(config_file_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
