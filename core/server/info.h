/* info.h -- the INFO command: sections with Valkey's field names.
 *
 * Modules add sections through info_add_section(); their generator appends
 * "name:value" lines with info_field(). */
#ifndef KEEL_INFO_H
#define KEEL_INFO_H

#include <stddef.h>

#include "common/sbuf.h"
#include "session/client.h"

typedef void (*info_section_fn)(sbuf *b, void *priv);
/* Registers an extra section (modules). Returns -1 if the name is taken. */
int info_add_section(const char *name, info_section_fn fn, void *priv, void *owner);
/* Fields fn appends to a built-in section (by its lowercase name) after
 * the server's own; K_ERR if there is no such section. */
int info_add_fields(const char *section, info_section_fn fn, void *priv, void *owner);
void info_remove_owner(void *owner);

/* Builds the INFO text for the given section names (NULL/0: default). */
void info_generate(sbuf *b, int argc, const karg *argv);
void info_command(client *c);
/* Registers the INFO command (after command_setup). */
void info_setup(void);
void info_teardown(void);

/* One counter or gauge of INFO by its field name ("keyspace_hits",
 * "used_memory", ...; the list is info.c's info_fields table, documented in
 * docs/sdk.md for modules). Returns 0 and *value, or -1 if unknown. */
int info_stat_get(const char *name, long long *value);

/* Refreshes instantaneous metrics; called by the cron. */
void info_track_instantaneous(void);

#endif
