#!/usr/bin/env bash
# install_test.sh -- `cmake --install <build> --prefix <tmp>` lays out what
# docs/getting-started.md promises: bin/keel-server, <moduledir>/<name>.so for
# each folder of modules/ (and nothing else there: no test fixtures or SDK
# examples), include/keel/keel_module.h, lib/cmake/Keel and
# lib/pkgconfig/keel.pc. Each installed module exports keel_module_entry.
#
# Usage: install_test.sh <build dir> <source dir> <module dir relative to the prefix>
set -uo pipefail

usage="usage: install_test.sh <build dir> <source dir> <module dir>"
build=${1:?$usage}
src=${2:?$usage}
moduledir=${3:?$usage}
workdir=$(mktemp -d /tmp/keel-install-XXXXXX)
. "$src/tests/sdk/lib.sh"
prefix=$workdir/prefix

log "cmake --install $build --prefix $prefix"
must "cmake --install" timeout 100 cmake --install "$build" --prefix "$prefix"

for f in bin/keel-server include/keel/keel_module.h lib/cmake/Keel/KeelConfig.cmake \
    lib/cmake/Keel/KeelConfigVersion.cmake lib/cmake/Keel/KeelTargets.cmake \
    lib/cmake/Keel/KeelModule.cmake lib/pkgconfig/keel.pc; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
[ -x "$prefix/bin/keel-server" ] || fail "bin/keel-server is not executable"

log "modules in $moduledir"
want=""
for d in "$src"/modules/*/; do
    [ -f "$d/CMakeLists.txt" ] || continue
    name=$(basename "$d")
    want="$want $name.so"
    so=$prefix/$moduledir/$name.so
    if [ ! -f "$so" ]; then
        fail "module $name is not installed as $moduledir/$name.so"
    elif command -v nm >/dev/null && ! nm -D --defined-only "$so" | grep -qw keel_module_entry; then
        fail "$moduledir/$name.so does not export keel_module_entry"
    fi
done
[ -n "$want" ] || fail "no module folders found in $src/modules"
got=$(cd "$prefix/$moduledir" 2>/dev/null && ls | sort | tr '\n' ' ')
want=$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "$moduledir holds [$got], want exactly [$want]"

finish install_test.sh
