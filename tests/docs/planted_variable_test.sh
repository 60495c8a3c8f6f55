#!/usr/bin/env bash
# A scratch tree with the real README and memloom-info table: the env check passes on it, then
# fails, naming the variable and the file, once a source reads a variable neither documents.
set -euo pipefail
python="$1"
source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/src/base" "$work/tree/src/core"
cp "$source_dir/README.md" "$work/tree/"
cp "$source_dir/src/base/settings_table.cpp" "$work/tree/src/base/"
printf '#include <cstdlib>\nconst char* a() { return std::getenv("MEMLOOM_TIMEOUT_S"); }\n' \
  >"$work/tree/src/core/known.cpp"
"$python" "$source_dir/ci/check_env_docs.py" --root "$work/tree" >/dev/null
printf '#include <cstdlib>\nconst char* b() { return std::getenv("MEMLOOM_NOT_DOCUMENTED"); }\n' \
  >"$work/tree/src/core/planted.cpp"
if "$python" "$source_dir/ci/check_env_docs.py" --root "$work/tree" >"$work/out" 2>&1; then
  echo "planted_variable_test: an undocumented variable passed the check" >&2
  exit 1
fi
grep -q "MEMLOOM_NOT_DOCUMENTED is read in src/core/planted.cpp but missing from README" "$work/out"
grep -q "MEMLOOM_NOT_DOCUMENTED is read in src/core/planted.cpp but missing from memloom-info" "$work/out"
echo "planted_variable_test: the undocumented variable failed the check"
