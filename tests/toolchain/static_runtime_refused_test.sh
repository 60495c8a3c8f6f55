#!/usr/bin/env bash
# A C++ compiler that finds only a static libstdc++ (as the GPU image's /opt/gcc/bin/g++ does) is
# refused when memloom is configured, with a message naming it; the real compiler is accepted.
set -euo pipefail
source_dir="$1"
real_compiler="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The wrapper is the real compiler, except that it cannot find libstdc++.so.
cat >"$work/static-only-g++" <<WRAPPER
#!/usr/bin/env bash
if [[ "\$*" == *"-print-file-name=libstdc++.so"* ]]; then echo libstdc++.so; exit 0; fi
exec "$real_compiler" "\$@"
WRAPPER
chmod +x "$work/static-only-g++"
if cmake -S "$source_dir" -B "$work/build" -DCMAKE_CXX_COMPILER="$work/static-only-g++" \
  -DMEMLOOM_WITH_CUDA=OFF >"$work/out" 2>&1; then
  echo "static_runtime_refused_test: a compiler without libstdc++.so was accepted" >&2
  exit 1
fi
grep -q "finds no shared libstdc++" "$work/out" || { cat "$work/out" >&2; exit 1; }
grep -q "static-only-g++" "$work/out"
echo "static_runtime_refused_test: the compiler without libstdc++.so was refused by name"
