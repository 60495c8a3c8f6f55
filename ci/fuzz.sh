#!/usr/bin/env bash
# Fuzzes the parsers of untrusted bytes: builds the libFuzzer targets of fuzz/ with clang, replays
# each target's regression inputs (fuzz/regressions/<target>: crashes found before), then fuzzes
# each for MEMLOOM_FUZZ_SECONDS (default 60) from its seeds (fuzz/corpus/<target>). Fails on a
# crash, a sanitizer report, a violated property or a hang; the input that did it is kept under
# <build dir>/artifacts. New corpus entries go to a temporary directory, never into the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MEMLOOM_FUZZ_BUILD_DIR:-build-fuzz}"
seconds="${MEMLOOM_FUZZ_SECONDS:-60}"
jobs="${MEMLOOM_JOBS:-2}"
targets=(fuzz_store_frame fuzz_tls_info fuzz_unique_id)

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang CXX=clang++ cmake -S fuzz -B "$build_dir" -G Ninja "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"

artifacts="$build_dir/artifacts"
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/memloom-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT

failed=()
for target in "${targets[@]}"; do
  binary="$build_dir/$target"
  log="$work/$target.log"
  regressions="fuzz/regressions/$target"
  if compgen -G "$regressions/*" >/dev/null; then
    if ! "$binary" "$regressions"/* >"$log" 2>&1; then
      echo "fuzz.sh: $target fails on a regression input:" >&2
      tail -n 40 "$log" >&2
      failed+=("$target")
      continue
    fi
  fi
  mkdir -p "$work/corpus/$target"
  # -timeout: one input running longer than 10 s is a hang; -rss_limit_mb bounds memory.
  if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$target-" "$work/corpus/$target" "fuzz/corpus/$target" \
      >"$log" 2>&1; then
    echo "fuzz.sh: $target found a failure (input under $artifacts):" >&2
    tail -n 60 "$log" >&2
    failed+=("$target")
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  echo "fuzz.sh: $target: ${runs:-?} executions in ${seconds} s, ${coverage:-cov: ?}," \
    "$(find "$work/corpus/$target" -type f | wc -l) new corpus entries"
done

if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: failures in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran ${seconds} s each without a failure"
