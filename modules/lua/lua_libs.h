/* lua_libs.h -- the Lua libraries written for Keel's Lua module rather than
 * taken from Debian (which ships no Lua 5.1 cmsgpack or struct matching what
 * Valkey scripts see). Each opener follows the Lua 5.1 convention: it leaves
 * the library table on the stack and also sets it as a global of the same
 * name, so the engine loads them like the standard libraries. */
#ifndef KEEL_LUA_LIBS_H
#define KEEL_LUA_LIBS_H

#include <lua.h>

/* cmsgpack.pack / unpack / unpack_one / unpack_limit (lib_cmsgpack.c). */
int luaopen_cmsgpack(lua_State *L);

/* struct.pack / unpack / size (lib_struct.c). */
int luaopen_struct(lua_State *L);

#endif
