#!/usr/bin/env bash
# Set-up shared by the README commands: install the Debian packages the project needs (only
# the missing ones), then configure and build the requested presets.  Idempotent: a second
# run with nothing changed installs nothing and rebuilds nothing.
#
#   tests/setup.sh [preset ...]      presets: default (build/), asan (build-asan/), tsan
#   NDK_TSAN_TARGETS=...             targets to build for tsan (default: ndk_unit_tests)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  python3 python3-dev python3-pytest python3-pybind11 pybind11-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libibverbs-dev librdmacm-dev
  python3-numpy libfabric-bin
  mypy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

presets=("$@")
((${#presets[@]})) || presets=(default)
for preset in "${presets[@]}"; do
  dir=build
  [[ $preset == default ]] || dir="build-$preset"
  [[ -f $dir/build.ninja ]] || cmake --preset "$preset" >/dev/null
  if [[ $preset == tsan ]]; then
    # Under TSan the C++ suites run (the Python interpreter is not built for it).
    cmake --build "$dir" --target ${NDK_TSAN_TARGETS:-ndk_unit_tests ndk_soft_provider}
  else
    cmake --build "$dir"
  fi
done
