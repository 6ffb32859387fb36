#!/usr/bin/env bash
# Every test: the installed package checked from outside the tree, the CTest suites (GoogleTest,
# the ndk package's pytest suite, the scenarios, the benchmark smoke runs) in the normal build,
# again under ASan+UBSan, the random walker, the C++ suites under TSan, the dispatch fuzzer
# (docs/testing.md says what runs where, and for how long); with NDK_VM=1 (what .ci/run sets)
# also the verbs lane: every scenario against real RDMA devices (rxe, siw) in a QEMU guest,
# tests/vm/verbs-lane.sh.  Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash tests/setup.sh default asan tsan

if [[ ${NDK_NO_INSTALL:-0} != 1 ]]; then
  echo "== the installed package (.deb), from a folder outside the repository"
  bash tests/package/check-installed.sh
fi
echo "== ctest: build/ (RelWithDebInfo)"
ctest --test-dir build --output-on-failure -j "$jobs" -LE vm
echo "== ctest: build-asan/ (ASan + UBSan)"
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'unit|scenario'
# The random walker (2M operations under ASan+UBSan, fixed seeds: docs/walk.md, "CI");
# NDK_WALK_CI=0 leaves it out of a quick local run.
if [[ ${NDK_WALK_CI:-1} == 1 ]]; then
  echo "== ndk walk: build-asan/ (ASan + UBSan), seeds 1 and 2 (docs/walk.md)"
  bash tests/walk/ci-walk.sh build-asan
fi
echo "== ctest: build-tsan/ (TSan, C++ suites)"
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L unit -E '^python_'
# The dispatch fuzzer, one pinned process per core for NDK_FUZZ_SECONDS (default 300: about
# 1.15M executions here; docs/testing.md, "The dispatch fuzzer"); NDK_FUZZ_SECONDS=0 skips it.
if [[ ${NDK_FUZZ_SECONDS:-300} != 0 ]]; then
  echo "== fuzz_dispatch: libFuzzer on the dispatch surface, build-fuzz/ (clang, ASan + UBSan)"
  bash tests/fuzz/run.sh "${NDK_FUZZ_SECONDS:-300}"
fi
if [[ ${NDK_VM:-0} == 1 ]]; then
  echo "== verbs lane: scenarios on rxe0 and siw0 in a QEMU guest (NDK_VM=1)"
  bash tests/vm/verbs-lane.sh build
fi
