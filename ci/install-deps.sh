#!/usr/bin/env bash
# Installs memloom's build and test dependencies from Debian's packages. Idempotent: packages that
# are already installed are skipped, so a warm machine spends no time here.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache python3
  libzmq3-dev cppzmq-dev
  libboost-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format
)
# Open MPI and OpenSHMEM serve only as benchmark references; skipped when MEMLOOM_NO_MPI=1.
if [[ "${MEMLOOM_NO_MPI:-0}" != "1" ]]; then
  packages+=(openmpi-bin libopenmpi-dev)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [[ "$(id -u)" != "0" ]]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
