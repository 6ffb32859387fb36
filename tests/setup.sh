#!/usr/bin/env bash
# Set-up shared by the README commands: install the Debian packages the project needs (only
# the missing ones), then configure and build the requested presets.  Idempotent: a second
# run with nothing changed installs nothing and rebuilds nothing.
#
#   tests/setup.sh [preset ...]      presets: default (build/), asan (build-asan/), tsan
#   NDK_ASAN_TARGETS=...             targets to build for asan (default: what tests/all.sh runs
#                                    there: ndk_unit_tests, the providers, _core, ndk_walk,
#                                    ndk_stress, ndk_perf; "all": every target, the benchmarks too)
#   NDK_TSAN_TARGETS=...             targets to build for tsan (default: ndk_unit_tests,
#                                    ndk_soft_provider, ndk_stress; "all": every target)
#   NDK_DEBUG_INFO=lines             configure a new tree with line tables only (-g1) instead of
#                                    full debug information (-g): the same code, file:line in
#                                    backtraces and sanitizer reports, no local variables for a
#                                    debugger; a fifth less compiling (.ci/run sets it)
#   NDK_NO_INSTALL=1                 do not install the ndk package (the default preset builds
#                                    build/ndk-harness_*.deb with CPack and installs it, so that
#                                    `import ndk`, `ndk` and `pytest --ndk-provider` work anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  python3 python3-dev python3-pytest python3-pybind11 pybind11-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libibverbs-dev librdmacm-dev
  iproute2  # ip and ss: the tcp transport's namespaces (tests/tcp/in-netns.sh), its tests
  python3-numpy libfabric-bin iperf3 python3-rich python3-hypothesis python3-matplotlib
  python3-pytest-xdist python3-pytest-timeout python3-execnet python3-rpyc
  python3-ipython  # IPython's pretty printer: tests/binding/test_display.py checks _repr_pretty_
  mypy
  chromium  # headless: lays out the HTML report for its layout test (tests/report/)
  python3-argparse-manpage help2man python3-argcomplete  # the .deb's manual pages, completion
  lintian man-db  # the .deb's checks (tests/package/: lintian, `man ndk`)
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

# What each tree is built for (tests/all.sh, docs/testing.md): build/ everything (all labels,
# the package); build-asan/ the unit and scenario labels and the walker, not the Google
# Benchmark suites; build-tsan/ the C++ suites only (the Python interpreter is not built for
# TSan): the unit label's GoogleTest suites and the short stress runs (docs/stress.md).
asan_targets="ndk_unit_tests ndk_soft_provider ndk_loop_provider _core ndk_walk ndk_stress ndk_perf"
tsan_targets="ndk_unit_tests ndk_soft_provider ndk_stress"
presets=("$@")
((${#presets[@]})) || presets=(default)
for preset in "${presets[@]}"; do
  start=$SECONDS
  dir=build
  [[ $preset == default ]] || dir="build-$preset"
  if [[ ! -f $dir/build.ninja ]]; then
    debug_info=()
    if [[ ${NDK_DEBUG_INFO:-full} == lines ]]; then
      debug_info=(-DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1
                  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
                  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
    fi
    # The sanitizer trees leave the verbs provider out (no pkg-config, so no libibverbs): their
    # stages open soft and loop adapters only, the verbs provider's own tests skip without
    # it and run in build/ and the VM lane, and it was a sixth of build-asan/'s compiling.
    no_verbs=()
    [[ $preset == default ]] || no_verbs=(-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON)
    cmake --preset "$preset" "${debug_info[@]}" "${no_verbs[@]}" >/dev/null
  fi
  case $preset in
    asan) targets=${NDK_ASAN_TARGETS:-$asan_targets} ;;
    tsan) targets=${NDK_TSAN_TARGETS:-$tsan_targets} ;;
    *) targets=all ;;
  esac
  # shellcheck disable=SC2086  # a word list of targets
  cmake --build "$dir" --target $targets
  echo "setup: $dir/ configured and built in $((SECONDS - start)) s"
done

# The package, installed like any Debian package: stage the default build's install tree, and
# when a staged file differs from what is installed, build the .deb (CPack) and install it with
# apt, which brings its dependencies.  Nothing is rebuilt or reinstalled when nothing changed.
install_package() {
  local stage=build/package-root
  rm -rf "$stage"
  DESTDIR="$PWD/$stage" cmake --install build --prefix /usr --strip >/dev/null
  local differs=0 file
  while IFS= read -r -d '' file; do
    cmp -s "$stage/$file" "/$file" || { differs=1; break; }
  done < <(cd "$stage" && find . -type f -printf '%P\0')
  ((differs)) || return 0
  rm -f build/ndk-harness_*.deb
  (cd build && cpack -G DEB >/dev/null)
  local deb=(build/ndk-harness_*.deb)
  echo "setup: installing ${deb[0]}"
  local sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --reinstall \
    --no-install-recommends "$PWD/${deb[0]}" >/dev/null
}
if [[ " ${presets[*]} " == *" default "* && ${NDK_NO_INSTALL:-0} != 1 ]]; then
  start=$SECONDS
  install_package
  echo "setup: the package staged and checked against the installed one in $((SECONDS - start)) s"
fi
