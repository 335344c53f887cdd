#!/usr/bin/env bash
# Usage: tests/fuzz/run.sh FUZZ_BINARY SECONDS [extra libFuzzer options...]
#
# 1. Regression test: runs FUZZ_BINARY once on every file of its
#    regressions and corpus (plain execution, no mutation). Any crash or
#    sanitizer report fails the script.
# 2. Fuzzes for SECONDS (0 skips this step) starting from a temporary copy of
#    the corpus; the repository's corpus is never written to. On a crash the
#    script exits non-zero and says where the crash input was written (under
#    $KEEL_FUZZ_ARTIFACTS, default a temporary directory that is kept). Save
#    that file in the target's regressions folder (see the README there). A
#    dictionary tests/fuzz/<binary name>.dict is used when present.
#
# Each target replays and starts from its own inputs only, since an input
# means something else to another target: fuzz_request (the first target)
# owns the files directly in tests/fuzz/corpus/ and tests/fuzz/regressions/;
# any other target NAME owns tests/fuzz/corpus/NAME/ and
# tests/fuzz/regressions/NAME/ (either may be missing).
#
# Environment: KEEL_FUZZ_JOBS (parallel fuzzing processes, default 1),
# KEEL_FUZZ_ARTIFACTS (where crash inputs and the log go),
# KEEL_FUZZ_KEEP_CORPUS=1 (keep the grown corpus copy and print its path).
set -uo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 FUZZ_BINARY SECONDS [libFuzzer options...]" >&2
    exit 2
fi
bin=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not an executable (build it: cmake --build build/fuzz --target $(basename "$bin"))" >&2
    exit 2
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
name=$(basename "$bin")
if [ "$name" = fuzz_request ]; then
    corpus_dir=$here/corpus
    regress_dir=$here/regressions
else
    corpus_dir=$here/corpus/$name
    regress_dir=$here/regressions/$name
fi

# The target's input files (not READMEs, dot files or other targets' folders).
target_inputs() {
    [ -d "$1" ] || return 0
    find "$1" -maxdepth 1 -type f ! -name 'README*' ! -name '.*' -print0 | sort -z
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

artifacts=${KEEL_FUZZ_ARTIFACTS:-$(mktemp -d "${TMPDIR:-/tmp}/keel-fuzz-$name.XXXXXX")}
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-fuzz-corpus.XXXXXX")
cleanup() {
    if [ "${KEEL_FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
        echo "fuzz: grown corpus kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# ---- 1. regressions and seeds, each run once
inputs=()
for dir in "$regress_dir" "$corpus_dir"; do
    while IFS= read -r -d '' f; do inputs+=("$f"); done < <(target_inputs "$dir")
done
echo "== fuzz: replaying ${#inputs[@]} regression and corpus inputs"
failed=0
for f in "${inputs[@]}"; do
    log="$artifacts/replay-$(basename "$f").log"
    if ! "$bin" -runs=1 -timeout=10 -rss_limit_mb=2048 "$f" >"$log" 2>&1; then
        echo "fuzz: FAILED on $f (log: $log)"
        grep -E 'ERROR:|SUMMARY:|runtime error|#[0-9]+ 0x' "$log" | head -20
        failed=1
    else
        rm -f "$log"
    fi
done
if [ "$failed" != 0 ]; then
    echo "fuzz: regression replay failed"
    exit 1
fi
echo "fuzz: replay passed"

# ---- 2. fuzzing
if [ "$seconds" = 0 ]; then
    exit 0
fi
for f in "${inputs[@]}"; do cp "$f" "$work/"; done
jobs=${KEEL_FUZZ_JOBS:-1}
log="$artifacts/fuzz.log"
echo "== fuzz: $name for ${seconds}s, $jobs job(s), artifacts in $artifacts"
opts=(-max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048
      -artifact_prefix="$artifacts/" -print_final_stats=1 -close_fd_mask=1)
dict="$here/$name.dict"
[ -f "$dict" ] && opts+=(-dict="$dict")
if [ "$jobs" -gt 1 ]; then
    opts+=(-jobs="$jobs" -workers="$jobs")
fi
(cd "$artifacts" && "$bin" "${opts[@]}" "$@" "$work") >"$log" 2>&1
rc=$?
grep -E '^#[0-9]+.*(pulse|DONE)|stat::' "$log" | tail -8
crashes=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | sort)
if [ "$rc" != 0 ] || [ -n "$crashes" ]; then
    echo "fuzz: FAILED (exit $rc); log: $log"
    grep -E 'ERROR:|SUMMARY:|runtime error|Test unit written|#[0-9]+ 0x' "$log" | head -30
    for f in $crashes; do echo "fuzz: crash input written to $f"; done
    echo "fuzz: reproduce with: $bin $(echo "$crashes" | head -1)"
    echo "fuzz: then save the input in $regress_dir/"
    exit 1
fi
echo "fuzz: no crash in ${seconds}s"
