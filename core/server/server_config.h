/* server_config.h -- the server's directive table (server_config.c). */
#ifndef KEEL_SERVER_CONFIG_H
#define KEEL_SERVER_CONFIG_H

/* Registers the server's directives with the config engine and sets every
 * registered directive to its default. The module system registers its
 * namespace itself (module_config_setup). Call before config_load. */
void server_config_init(void);

#endif
