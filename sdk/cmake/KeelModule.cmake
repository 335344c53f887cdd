# KeelModule.cmake -- keel_add_module(), installed with the Keel CMake package
# (lib/cmake/Keel) and used by the in-tree build of sdk/examples.
#
#   keel_add_module(<name> <source>...)
#
# Creates a MODULE library <name>.so (no "lib" prefix) linked to Keel::sdk,
# which supplies the SDK's include directory and -fvisibility=hidden: the
# module exports nothing but keel_module_entry() (the KEEL_MODULE() macro marks
# that one visible). Load it with `loadmodule /path/<name>.so` or
# `MODULE LOAD /path/<name>.so`.
#
# On Linux the module is linked with -z defs, so a reference to a symbol that
# none of its libraries defines fails the link instead of the load (keel-server
# exports no symbols: a module reaches the server only through keel_api). Set
# KEEL_MODULE_ALLOW_UNDEFINED to ON before the call to skip that, e.g. when the
# module is built with clang's -fsanitize=..., whose runtime lives in the
# executable.
function(keel_add_module name)
    if(NOT ARGN)
        message(FATAL_ERROR "keel_add_module(${name}): no source files given")
    endif()
    add_library(${name} MODULE ${ARGN})
    target_link_libraries(${name} PRIVATE Keel::sdk)
    set_target_properties(${name} PROPERTIES
        PREFIX ""
        C_VISIBILITY_PRESET hidden
        CXX_VISIBILITY_PRESET hidden)
    if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT KEEL_MODULE_ALLOW_UNDEFINED)
        target_link_options(${name} PRIVATE "LINKER:-z,defs")
    endif()
endfunction()
