/* main.c -- keel-server's entry point: command line, configuration, run. */
#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "config/config.h"
#include "server/server.h"
#include "server/server_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fprintf(stderr,
            "Usage: ./keel-server [/path/to/keel.conf] [options]\n"
            "       ./keel-server -v or --version\n"
            "       ./keel-server -h or --help\n\n"
            "Examples:\n"
            "       ./keel-server (run the server with the default configuration)\n"
            "       ./keel-server /etc/keel/6379.conf\n"
            "       ./keel-server --port 7777\n"
            "       ./keel-server /etc/myconf.conf --loglevel verbose\n");
}

/* Appends a word double-quoted with the escapes splitargs undoes, so a
 * byte of an argument (a newline, say) can never start a line of its own:
 * the text is read back exactly as the words were given. */
static size_t append_quoted(char *dst, const char *v) {
    size_t n = 0;
    dst[n++] = '"';
    for (; *v; v++) {
        unsigned char c = (unsigned char)*v;
        if (c == '"' || c == '\\') dst[n++] = '\\';
        if (c < 0x20 || c == 0x7f) n += (size_t)sprintf(dst + n, "\\x%02x", c);
        else dst[n++] = (char)c;
    }
    dst[n++] = '"';
    return n;
}

/* Turns "--port 7777 --bind a b" into "port 7777\nbind a b\n" (each word
 * quoted). */
static char *overrides_from_args(int argc, char **argv, int first) {
    size_t cap = 256, len = 0;
    char *text = km_alloc(cap);
    text[0] = '\0';
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        int is_name = a[0] == '-' && a[1] == '-' && a[2];
        size_t need = 4 * strlen(a) + 8;
        if (len + need >= cap) text = km_realloc(text, cap = (cap + need) * 2);
        char sep = is_name && len ? '\n' : ' ';
        text[len++] = sep;
        len += append_quoted(text + len, is_name ? a + 2 : a);
    }
    text[len++] = '\n';
    text[len] = '\0';
    return text;
}

static char *absolute_path(const char *p) {
    char buf[PATH_MAX];
    return km_strdup(realpath(p, buf) ? buf : p);
}

int main(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--version"))) {
        printf("Keel server v=%s (Valkey/Redis compatible %s)\n", KEEL_VERSION, KEEL_REDIS_COMPAT_VERSION);
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage();
        return 0;
    }
    int first = 1;
    const char *path = NULL;
    if (argc >= 2 && argv[1][0] != '-') {
        path = argv[1];
        first = 2;
    }
    server_config_init();
    log_setup(&srv.log);
    srv.executable = absolute_path(argv[0]);
    if (path) srv.configfile = absolute_path(path);
    char *overrides = overrides_from_args(argc, argv, first);
    char *err = NULL;
    int rv = config_load(path, overrides, &err);
    km_free(overrides);
    if (rv != K_OK) {
        fprintf(stderr, "\n*** FATAL CONFIG FILE ERROR (Keel %s) ***\n%s\n", KEEL_VERSION, err);
        km_free(err);
        return 1;
    }
    if (server_setup(&err) != K_OK) {
        log_write(LL_WARNING, "Failed starting the server: %s", err);
        km_free(err);
        return 1;
    }
    server_run();
    server_teardown();
    return 0;
}
