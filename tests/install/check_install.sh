#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds an outside program against it twice:
# with pkg-config and with find_package(memloom). Both programs must run.
set -euo pipefail
build_dir="$1"
source_dir="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
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
[[ -f "$work/prefix/bin/memloom-run" && -f "$work/prefix/bin/memloom-store" ]]
echo "install check: pkg-config and find_package builds ran"
