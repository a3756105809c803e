#!/usr/bin/env bash
# Build the fuzz targets of the native parsers (csrc/fuzz/*.cpp) with libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, replay each target's corpus
# (tests/fuzz_corpus/<target>/: seeds and every crash found so far), then fuzz each
# for FUZZ_SECONDS (default 30) from a fixed seed. Exits non-zero on any finding;
# the input that found it is left in $FUZZ_OUT/runs/<target>/ (default build/fuzz) (docs/bad-input.md says how
# to add it to the corpus).
#
#   csrc/fuzz/run.sh                 every target
#   csrc/fuzz/run.sh snappy kineto   some of them
#   FUZZ_SECONDS=0 csrc/fuzz/run.sh  replay the corpus only
#
# Needs clang++ with libFuzzer (Debian: apt-get install clang libclang-rt-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-30}
SEED=${FUZZ_SEED:-1}
OUT=${FUZZ_OUT:-build/fuzz}
CXX=${FUZZ_CXX:-clang++}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=()
    for f in csrc/fuzz/*.cpp; do TARGETS+=("$(basename "$f" .cpp)"); done
fi
FLAGS=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
mkdir -p "$OUT/bin" "$OUT/runs"

# Build all first (in parallel, two at a time), so that a compile error stops the run early.
build() {
    "$CXX" "${FLAGS[@]}" "csrc/fuzz/$1.cpp" -o "$OUT/bin/$1" 2>"$OUT/bin/$1.log" || { cat "$OUT/bin/$1.log" >&2; return 1; }
}
pids=()
for t in "${TARGETS[@]}"; do
    [ -f "csrc/fuzz/$t.cpp" ] || { echo "fuzz: no target csrc/fuzz/$t.cpp" >&2; exit 2; }
    build "$t" & pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}" || exit 1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || exit 1; done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${TARGETS[@]}"; do
    corpus="tests/fuzz_corpus/$t"
    work="$OUT/runs/$t"
    rm -rf "$work" && mkdir -p "$work/new"
    mkdir -p "$corpus"
    echo "fuzz: $t: replaying $(find "$corpus" -type f | wc -l) corpus inputs, then ${SECONDS_EACH} s of mutation" >&2
    # The new inputs go to $work/new (never into the committed corpus); a finding to $work/.
    # -rss_limit_mb and -malloc_limit_mb: an input that asks for gigabytes is a finding.
    LIMITS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$work/")
    if [ "$SECONDS_EACH" = 0 ]; then  # each file of the corpus once
        mapfile -t files < <(find "$corpus" -type f | sort)
        run=("$OUT/bin/$t" "${LIMITS[@]}" "${files[@]}")
    else
        run=("$OUT/bin/$t" "${LIMITS[@]}" -seed="$SEED" -max_total_time="$SECONDS_EACH" -max_len=65536
             -print_final_stats=1 "$work/new" "$corpus")
    fi
    if ! "${run[@]}" >"$work/log" 2>&1; then
        tail -n 60 "$work/log" >&2
        echo "fuzz: $t FAILED; the input is in $work/ (crash-*, leak-*, timeout-*, oom-*)" >&2
        failed+=("$t")
    else
        grep -E "^stat::number_of_executed_units|^Done" "$work/log" | tr '\n' ' ' >&2 || true
        echo >&2
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: findings in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#TARGETS[@]} targets clean" >&2
