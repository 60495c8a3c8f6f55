#!/usr/bin/env bash
# The one test command: installs dependencies, builds, and runs every test with ctest. After the
# suite it checks that no memloom shared memory is left in /dev/shm. Then the sanitizer stages:
#   asan  an AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan) running the whole
#         suite except the install check (an outside program cannot link an ASan library) and the
#         load tests (hundreds of processes: minutes under ASan, and they test capacity, not memory
#         safety);
#   tsan  a ThreadSanitizer build (build-tsan) of the store and HAL tests only, running the store
#         tests, the collectives tests and the UCX transport's pair tests;
#   fuzz  ci/fuzz.sh: the libFuzzer targets (clang) replay their regression inputs, then fuzz for
#         MEMLOOM_FUZZ_SECONDS each (30 here).
# The plain stage runs the Python tests too (ctest label "python": pytest files under python/tests,
# among them the cmake --install and pip-into-a-venv checks). The sanitizer builds leave them out
# (an extension built with sanitizers cannot load into Debian's python3), as they leave out
# the benchmarks, the examples and the CUDA module, and the tsan
# build compiles only the two test programs it runs. MEMLOOM_SANITIZERS picks the stages:
# "asan tsan fuzz" (default), any subset of those words, or "none".
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage_start=$start
jobs="${MEMLOOM_JOBS:-2}"
# Paths relative to the checkout in ccache's keys (as ci/build.sh sets for the plain build), so
# the sanitizer builds of a fresh clone in another folder hit the cache too.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
sanitizers="${MEMLOOM_SANITIZERS:-asan tsan fuzz}"

stage_done() {
  local now
  now=$(date +%s)
  echo "test.sh: $1 took $((now - stage_start)) s"
  stage_start=$now
}

check_no_shm_left() {
  local leftovers
  leftovers=$(find /dev/shm -maxdepth 1 -name 'memloom*' 2>/dev/null | wc -l)
  if [[ "$leftovers" != "0" ]]; then
    echo "test.sh: $leftovers memloom entries left in /dev/shm after $1:" >&2
    find /dev/shm -maxdepth 1 -name 'memloom*' >&2
    exit 1
  fi
}

# sanitizer_build DIR SANITIZERS [TARGET...]: configures and builds DIR (only TARGETs if given).
sanitizer_build() {
  local dir="$1" sanitize="$2"
  shift 2
  local launcher=() targets=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  for target in "$@"; do targets+=(--target "$target"); done
  # Warnings GCC 12 gives only when sanitizing stay warnings (the plain build keeps -Werror for
  # everything): "may be used uninitialized" inside <regex> is a false positive, and
  # "atomic_thread_fence is not supported with -fsanitize=thread" concerns TRANS code the tsan
  # stage does not run.
  # -O1 -g1 (line tables only): what the sanitizers recommend for useful reports, and a good deal
  # cheaper to compile on CI's 2 cores than -O2 -g.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DMEMLOOM_SANITIZE="$sanitize" -DMEMLOOM_WITH_CUDA=OFF -DMEMLOOM_BUILD_BENCH=OFF \
    -DMEMLOOM_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="-Wno-error=maybe-uninitialized -Wno-error=tsan"
  cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

bash ci/install-deps.sh
# The layer table (LAYERS.md) first: an include it forbids fails the run before any compiling.
python3 ci/check_layers.py
# Every environment variable the code reads must be in README's Environment table.
python3 ci/check_env_docs.py
bash ci/build.sh
stage_done "the build"
build_dir="${MEMLOOM_BUILD_DIR:-build}"
# A test that fails is run once more before it counts: a few tests measure liveness in hundreds of
# milliseconds and can miss on a heavily shared machine. A real bug fails both runs.
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 300 --repeat until-pass:2
check_no_shm_left "the tests"
stage_done "the tests"

if [[ " $sanitizers " == *" asan "* ]]; then
  sanitizer_build build-asan address,undefined
  stage_done "the asan build"
  # Every report fails its test: ASan and UBSan stop the process (forked ranks turn that into
  # their exit code).
  # Tests that judge leaks by resident memory are left out: ASan's quarantine keeps freed memory
  # resident on purpose (LeakSanitizer checks leaks instead). As in the plain stage a failed test
  # runs once more (ASan makes timing-sensitive tests slower); memory errors fail both runs.
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 300 -LE 'install|load' \
    -E 'NeitherSlowDownNorLeak' --repeat until-pass:2
  check_no_shm_left "the asan tests"
  stage_done "the asan tests"
fi

if [[ " $sanitizers " == *" tsan "* ]]; then
  sanitizer_build build-tsan thread store_tests hal_conformance_tests
  stage_done "the tsan build"
  # No second chance here: a data race may show in one run out of several.
  # ci/tsan_suppressions.txt: libzmq is not instrumented.
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/ci/tsan_suppressions.txt"
  # UCX's libucm hooks mmap/madvise in every process that loads it (memloom_host links UCX), and
  # its hook takes a pthread rwlock inside glibc's thread start, where TSan's interceptor is not
  # ready yet: every test segfaulted. The hooks only serve UCX's registration cache, which these
  # tests do not use, so they are off here.
  export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 300 -L store
  # The CPU budget of SixteenRanksDoManyBarriersWithoutBurningCpu (1.5 s for 16 ranks) measures
  # the barrier's waiting policy, not races; TSan's instrumentation spends 2.0-2.1 s there
  # (0.3 s in the plain build, which runs it, as does the ASan stage).
  # The UCX transport's threads (callers, the progress thread, UCX's callbacks): TransportPair,
  # TransportGiveUp (calls giving up while other threads use the endpoint), and UcxProgress (the
  # progress thread standing aside and taking over; a transport destroyed while peers write).
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 300 -L hal \
    -R 'Collectives|^TransportPair\.|^TransportGiveUp\.|^UcxProgress\.' -E 'WithoutBurningCpu|^ucx'
  check_no_shm_left "the tsan tests"
  stage_done "the tsan tests"
fi

if [[ " $sanitizers " == *" fuzz "* ]]; then
  MEMLOOM_FUZZ_SECONDS="${MEMLOOM_FUZZ_SECONDS:-30}" bash ci/fuzz.sh
  stage_done "fuzzing"
fi

echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
