/* noentry.c -- a shared object without keel_module_entry. */
__attribute__((visibility("default"))) int not_a_keel_module(void);

int not_a_keel_module(void) {
    return 42;
}
