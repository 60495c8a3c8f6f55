#!/usr/bin/env bash
# Plants include edges in a scratch tree that carries the real LAYERS.md: every forbidden one
# must fail check_layers.py and name the file, every allowed one must pass.
set -euo pipefail
python="$1"
source_dir="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

reset_tree() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree"/{src/base,src/core,src/store,hw/hal,hw/host,hw/emulated,hw/cuda,include/memloom}
  cp "$source_dir/LAYERS.md" "$work/tree/"
  echo '#pragma once' >"$work/tree/src/core/group.h"
  echo '#pragma once' >"$work/tree/src/store/client.h"
  echo '#pragma once' >"$work/tree/src/base/log.h"
  echo '#pragma once' >"$work/tree/hw/hal/platform.h"
  echo '#pragma once' >"$work/tree/hw/host/shm_group.h"
  echo '#pragma once' >"$work/tree/hw/emulated/emulated_platform.h"
  echo '#pragma once' >"$work/tree/include/memloom/error.h"
}

# expect RESULT FILE INCLUDED: writes FILE including INCLUDED, runs the check.
expect() {
  local result="$1" file="$2" included="$3"
  reset_tree
  printf '#include "%s"\n' "$included" >"$work/tree/$file"
  if "$python" "$source_dir/ci/check_layers.py" --root "$work/tree" >"$work/out" 2>&1; then
    actual=pass
  else
    actual=fail
  fi
  if [[ "$actual" != "$result" ]]; then
    echo "planted $file -> $included: expected $result, got $actual" >&2
    cat "$work/out" >&2
    exit 1
  fi
  if [[ "$result" == fail ]] && ! grep -q "$file:1" "$work/out"; then
    echo "planted $file -> $included: the failure does not name $file:1" >&2
    cat "$work/out" >&2
    exit 1
  fi
}

expect fail hw/host/planted.cpp src/core/group.h          # hw above core
expect fail src/store/planted.cpp src/core/group.h        # store above core
expect fail hw/cuda/planted.cpp hw/emulated/emulated_platform.h  # backends are siblings
expect fail src/core/planted.cpp hw/emulated/emulated_platform.h  # core sees only the HAL
expect fail src/base/planted.cpp src/store/client.h       # base is the bottom
expect fail hw/hal/planted.cpp hw/host/shm_group.h        # hal below host
expect pass hw/host/planted.cpp hw/hal/platform.h
expect pass src/core/planted.cpp src/store/client.h
expect pass hw/emulated/planted.cpp hw/host/shm_group.h
expect pass src/base/planted.cpp memloom/error.h
echo "planted edges: 6 forbidden ones failed, 4 allowed ones passed"
