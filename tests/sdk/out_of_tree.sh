#!/usr/bin/env bash
# out_of_tree.sh -- the SDK as a third party gets it: `cmake --install` the
# build to a temporary prefix, copy sdk/examples/hello and configinfo out of
# the tree, build each with the installed CMake package (find_package(Keel)
# through CMAKE_PREFIX_PATH) and with the one cc line + pkg-config
# (PKG_CONFIG_PATH), then run the installed keel-server: hello through
# `loadmodule` in the config file, configinfo through MODULE LOADEX ... CONFIG,
# INFO, CONFIG GET/SET, MODULE LIST, MODULE UNLOAD, MODULE LOAD, SHUTDOWN.
#
# Usage: out_of_tree.sh <build dir> <source dir>
set -uo pipefail

build=${1:?usage: out_of_tree.sh <build dir> <source dir>}
src=${2:?usage: out_of_tree.sh <build dir> <source dir>}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)
workdir=$(mktemp -d /tmp/keel-sdk-oot-XXXXXX)
. "$src/tests/sdk/lib.sh"

prefix=$workdir/prefix
cc=${CC:-cc}
# A module author's environment: none of the outer build's compiler settings.
unset CFLAGS LDFLAGS CMAKE_PREFIX_PATH PKG_CONFIG_LIBDIR

# ---- install ----
log "cmake --install $build --prefix $prefix"
must "cmake --install" timeout 120 cmake --install "$build" --prefix "$prefix"
for f in bin/keel-server include/keel/keel_module.h lib/cmake/Keel/KeelConfig.cmake \
    lib/cmake/Keel/KeelConfigVersion.cmake lib/cmake/Keel/KeelTargets.cmake \
    lib/cmake/Keel/KeelModule.cmake lib/pkgconfig/keel.pc; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
[ -x "$prefix/bin/keel-server" ] || fail "bin/keel-server is not executable"
cmp -s "$src/sdk/include/keel/keel_module.h" "$prefix/include/keel/keel_module.h" ||
    fail "the installed header differs from sdk/include/keel/keel_module.h"
abi=$(sed -n 's/^#define KEEL_ABI_MAJOR \([0-9]*\)$/\1/p' "$src/sdk/include/keel/keel_module.h").$(
    sed -n 's/^#define KEEL_ABI_MINOR \([0-9]*\)$/\1/p' "$src/sdk/include/keel/keel_module.h")

# ---- pkg-config ----
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cflags=$(pkg-config --cflags keel) || fail "pkg-config --cflags keel failed"
incdir=${cflags#-I}
incdir=${incdir%% *}
[ -f "$incdir/keel/keel_module.h" ] || fail "pkg-config --cflags keel [$cflags] does not reach the header"
[ "$(cd "$incdir" 2>/dev/null && pwd)" = "$prefix/include" ] ||
    fail "pkg-config include dir [$incdir] is not $prefix/include"
expect "pkg-config --modversion keel" "$abi" pkg-config --modversion keel

# ---- the CMake package: version checks ----
mkdir -p "$workdir/pkgver"
cat >"$workdir/pkgver/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.18)
project(pkgver NONE)
find_package(Keel $abi REQUIRED)
message(STATUS "Keel_VERSION=\${Keel_VERSION}")
if(NOT TARGET Keel::sdk OR NOT COMMAND keel_add_module)
    message(FATAL_ERROR "Keel::sdk or keel_add_module missing")
endif()
get_target_property(opts Keel::sdk INTERFACE_COMPILE_OPTIONS)
get_target_property(incs Keel::sdk INTERFACE_INCLUDE_DIRECTORIES)
message(STATUS "opts=\${opts} incs=\${incs}")
find_package(Keel $((${abi%%.*} + 1)).0 QUIET)
message(STATUS "next-major-found=\${Keel_FOUND}")
EOT
out=$(timeout 60 cmake -S "$workdir/pkgver" -B "$workdir/pkgver/build" -DCMAKE_PREFIX_PATH="$prefix" 2>&1) ||
    fail "find_package(Keel $abi) failed: $out"
case "$out" in *"Keel_VERSION=$abi"*) ;; *) fail "Keel_VERSION is not $abi: $out" ;; esac
case "$out" in *"opts=-fvisibility=hidden"*) ;; *) fail "Keel::sdk lacks -fvisibility=hidden: $out" ;; esac
case "$out" in *"incs=$prefix/include"*) ;; *) fail "Keel::sdk include dir is not $prefix/include: $out" ;; esac
case "$out" in *"next-major-found=0"*) ;; *) fail "find_package(Keel <next major>) must fail: $out" ;; esac

# ---- build the examples out of the tree ----
mkdir -p "$workdir/src" "$workdir/cc"
cp -R "$src/sdk/examples/hello" "$src/sdk/examples/configinfo" "$workdir/src/"
rm -rf "$workdir/src/hello/build" "$workdir/src/configinfo/build"
for m in hello configinfo; do
    [ "$(grep -c . "$workdir/src/$m/CMakeLists.txt")" -le 4 ] || fail "$m/CMakeLists.txt is longer than 4 lines"
    log "cmake: $m with find_package(Keel)"
    must "configure $m" timeout 120 cmake -S "$workdir/src/$m" -B "$workdir/src/$m/build" -DCMAKE_PREFIX_PATH="$prefix"
    must "build $m" timeout 120 cmake --build "$workdir/src/$m/build"
    [ -f "$workdir/src/$m/build/$m.so" ] || fail "cmake did not produce $m.so (no lib prefix)"
    log "cc: $m with pkg-config"
    # The documented one-liner, verbatim.
    must "cc $m" timeout 60 $cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags keel) \
        "$workdir/src/$m/$m.c" -o "$workdir/cc/$m.so"
done
# Only the entry point is exported (linker-defined markers aside).
for so in "$workdir"/src/*/build/*.so "$workdir"/cc/*.so; do
    syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -Ev '^(_edata|_end|__bss_start|_init|_fini)$' | tr '\n' ' ')
    [ "$syms" = "keel_module_entry " ] || fail "$so exports [$syms], want only keel_module_entry"
done

# ---- run them in the installed server ----
conf=$workdir/keel.conf
cat >"$conf" <<EOT
# loadmodule always works; MODULE LOAD/LOADEX/LIST/UNLOAD need this:
enable-module-command yes
loadmodule $workdir/src/hello/build/hello.so from-config
EOT
log "starting $prefix/bin/keel-server with loadmodule hello.so"
start_server "$prefix/bin/keel-server" "$conf"

expect "HELLO.WORLD" "Hello, world!" "${cli[@]}" hello.world
expect "HELLO.ECHO" "hi" "${cli[@]}" hello.echo hi
expect "HELLO.ECHO REPEAT" "hihihi" "${cli[@]}" hello.echo hi repeat 3
expect_contains "HELLO.ECHO bad REPEAT" "ERR REPEAT must be an integer between 1 and 100" "${cli[@]}" hello.echo hi repeat 0
expect_contains "COMMAND INFO hello.world" "hello.world" "${cli[@]}" command info hello.world

expect "MODULE LOADEX configinfo" "OK" "${cli[@]}" module loadex "$workdir/cc/configinfo.so" config configinfo.greeting hi
expect "CONFIG GET configinfo.greeting" $'configinfo.greeting\nhi' "${cli[@]}" config get configinfo.greeting
expect "CONFIGINFO.GREET" "hi, world!" "${cli[@]}" configinfo.greet
info=$("${cli[@]}" info configinfo | tr -d '\r')
case "$info" in *"# configinfo"*"configinfo_greeting:hi"*"configinfo_greetings_served:1"*) ;;
*) fail "INFO configinfo: got [$info]" ;; esac
expect_contains "INFO everything has the module section" "configinfo_greeting:hi" "${cli[@]}" info everything
expect "CONFIG SET configinfo.greeting" "OK" "${cli[@]}" config set configinfo.greeting hey
expect "CONFIGINFO.GREET after CONFIG SET" "hey, keel!" "${cli[@]}" configinfo.greet keel
expect_contains "CONFIG SET refused by apply" "the greeting must be 1 to 64 characters" "${cli[@]}" config set configinfo.greeting ""
expect "CONFIG GET after a refused SET" $'configinfo.greeting\nhey' "${cli[@]}" config get configinfo.greeting

list=$("${cli[@]}" module list)
want=$'name\nhello\nver\n10000\npath\n'"$workdir/src/hello/build/hello.so"$'\nargs\nfrom-config\nname\nconfiginfo\nver\n10000\npath\n'"$workdir/cc/configinfo.so"$'\nargs'
[ "$list" = "$want" ] || fail "MODULE LIST: expected [$want], got [$list]"

expect "MODULE UNLOAD configinfo" "OK" "${cli[@]}" module unload configinfo
expect_contains "CONFIGINFO.GREET after unload" "unknown command" "${cli[@]}" configinfo.greet
expect "CONFIG GET after unload" "" "${cli[@]}" config get configinfo.greeting
expect "INFO configinfo after unload" "" "${cli[@]}" info configinfo
expect_contains "MODULE UNLOAD again" "no such module with that name" "${cli[@]}" module unload configinfo

# The other builds: the CMake-built configinfo, the cc-built hello.
expect "MODULE LOAD configinfo (cmake)" "OK" "${cli[@]}" module load "$workdir/src/configinfo/build/configinfo.so"
expect "CONFIGINFO.GREET default" "hello, world!" "${cli[@]}" configinfo.greet
expect_contains "MODULE LOAD of a loaded name" "a module named 'hello' is already loaded" "${cli[@]}" module load "$workdir/cc/hello.so"
expect "MODULE UNLOAD hello" "OK" "${cli[@]}" module unload hello
expect_contains "HELLO.WORLD after unload" "unknown command" "${cli[@]}" hello.world
expect "MODULE LOAD hello (cc)" "OK" "${cli[@]}" module load "$workdir/cc/hello.so" a b
expect "HELLO.WORLD (cc build)" "Hello, world!" "${cli[@]}" hello.world
expect_contains "MODULE LIST after reloads" "$workdir/cc/hello.so" "${cli[@]}" module list

stop_server
grep -q "Module 'hello' loaded from $workdir/src/hello/build/hello.so" "$workdir/server.log" ||
    fail "no load line for hello in the server log"
finish out_of_tree.sh
