#!/usr/bin/env bash
# check_layers.sh -- fails when a core file includes a folder its layer may
# not (core/LAYERS), when a .c file declares something `extern` instead of
# including a header, or when a module under modules/ includes anything but
# the SDK's public headers. Prints every violation, then exits 1 if any.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
layers="$root/core/LAYERS"
fail=0
declare -A allowed
while IFS=: read -r folder deps; do
    case "$folder" in '' | \#*) continue ;; esac
    allowed[$folder]=" $folder $deps "
done < "$layers"

for dir in "$root"/core/*/; do
    folder=$(basename "$dir")
    if [ -z "${allowed[$folder]+x}" ]; then
        echo "core/$folder: not listed in core/LAYERS"
        fail=1
        continue
    fi
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        rel=${f#"$root"/}
        while IFS=: read -r line inc; do
            target=${inc%%/*}
            case "${allowed[$folder]}" in
                *" $target "*) ;;
                *) echo "$rel:$line: includes $inc ($folder may not include $target)"; fail=1 ;;
            esac
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$f" |
                 sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
        case "$f" in
            *.c)
                grep -nE '^[[:space:]]*extern[[:space:]]' "$f" | while IFS=: read -r line _; do
                    echo "$rel:$line: extern declaration in a .c file (declare it in a header)"
                done | grep . && fail=1
                ;;
        esac
    done
done

# Modules are third-party code in spirit: the SDK's headers only.
while IFS=: read -r file line inc; do
    case "$inc" in
        keel/*) ;;
        *) echo "${file#"$root"/}:$line: includes $inc (a module may include only keel/ SDK headers)"; fail=1 ;;
    esac
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/modules" --include='*.c' --include='*.h' |
         sed -E 's/^([^:]+):([0-9]+):.*"([^"]+)".*/\1:\2:\3/' |
         while IFS=: read -r file line inc; do
             # a module's own headers, next to its sources, are its business;
             # a path out of the module's folder is not
             case "$inc" in
                 */../* | ../*) echo "$file:$line:$inc" ;;
                 *) [ -e "$(dirname "$file")/$inc" ] || echo "$file:$line:$inc" ;;
             esac
         done)

if [ "$fail" != 0 ]; then
    echo "check_layers: the layers of core/LAYERS are crossed (see above)"
    exit 1
fi
echo "check_layers: every include follows core/LAYERS"
