#!/usr/bin/env bash
# Installs memloom's build and test dependencies from Debian's packages. Idempotent: packages that
# are already installed are skipped, so a warm machine spends no time here.
set -euo pipefail

# MEMLOOM_DEPS=demo: only what the library, memloom-run and the examples build with (ci/demo.sh).
packages=(
  build-essential cmake ninja-build pkg-config ccache python3
  libzmq3-dev cppzmq-dev libucx-dev
  libboost-dev libssl-dev
)
if [[ "${MEMLOOM_DEPS:-all}" != "demo" ]]; then
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev clang-format)
  # The etcd store's tests (tests/etcd) and memloom-bench store start real etcd servers.
  packages+=(etcd-server curl)  # curl: tests/etcd/with_etcd.sh asks etcd for its health
  # The Python packages (python/) and their tests; skipped when MEMLOOM_NO_PYTHON=1 (the build
  # then leaves them out: MEMLOOM_BUILD_PYTHON is AUTO).
  if [[ "${MEMLOOM_NO_PYTHON:-0}" != "1" ]]; then
    packages+=(python3-dev pybind11-dev python3-numpy python3-pytest python3-torch python3-venv
               python3-pip python3-wheel python3-setuptools)
  fi
  # Open MPI: the benchmarks' references and the launcher tests (tests/launchers); skipped when
  # MEMLOOM_NO_MPI=1.
  if [[ "${MEMLOOM_NO_MPI:-0}" != "1" ]]; then
    packages+=(openmpi-bin libopenmpi-dev)
  fi
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
