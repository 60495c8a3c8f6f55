#!/usr/bin/env bash
# Installs the build into a temporary prefix outside the build tree, then: every installed tool
# answers --version with no LD_LIBRARY_PATH (their RPATH finds the library from any prefix); the
# internal C++ headers are not installed; an outside program builds against the prefix with
# pkg-config and with find_package(memloom) and runs; the installed examples build against it.
#   check_install.sh BUILD_DIR WITH_BENCH(0|1)
set -euo pipefail
build_dir="$1"
with_bench="${2:-0}"
source_dir="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
unset LD_LIBRARY_PATH
tools=(memloom-run memloom-store memloom-info)
[[ "$with_bench" == 1 ]] && tools+=(memloom-bench)
for tool in "${tools[@]}"; do
  version=$("$work/prefix/bin/$tool" --version) || {
    echo "install check: $tool --version failed from $work/prefix" >&2
    exit 1
  }
  [[ "$version" == "$tool "* ]] || { echo "install check: $tool --version said '$version'" >&2; exit 1; }
done
# Captured, not piped into `grep -q`: grep quits at the first match, and under pipefail the
# SIGPIPE of a report still being written failed the check (seen under load once the report grew).
info_json=$("$work/prefix/bin/memloom-info" --json)
[[ "$info_json" == *'"backend": "emulated"'* ]] || {
  echo "install check: memloom-info --json from $work/prefix does not say backend emulated:" >&2
  echo "$info_json" >&2
  exit 1
}
for internal in error.h deadline.h; do
  if [[ -e "$work/prefix/include/memloom/$internal" ]]; then
    echo "install check: the internal header memloom/$internal is installed" >&2
    exit 1
  fi
done
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
for libdir in lib lib64 lib/x86_64-linux-gnu; do
  [[ -d "$work/prefix/$libdir/pkgconfig" ]] && export PKG_CONFIG_PATH="$work/prefix/$libdir/pkgconfig"
done
# shellcheck disable=SC2046
g++ -std=c++17 "$source_dir/outside_app.cpp" -o "$work/app_pkgconfig" $(pkg-config --cflags --libs memloom)
"$work/app_pkgconfig"
mkdir -p "$work/cmake_app"
cp "$source_dir/outside_app.cpp" "$work/cmake_app/"
cp "$source_dir/CMakeLists.txt.in" "$work/cmake_app/CMakeLists.txt"
cmake -S "$work/cmake_app" -B "$work/cmake_app/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake_app/build" >/dev/null
"$work/cmake_app/build/outside_app"
examples="$work/prefix/share/memloom/examples"
cmake -S "$examples" -B "$work/examples_build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples_build" -j 2 >/dev/null
"$work/examples_build/wholememory_hello" >/dev/null
echo "install check: tools started from $work/prefix without LD_LIBRARY_PATH; pkg-config," \
  "find_package and the installed examples built and ran"
