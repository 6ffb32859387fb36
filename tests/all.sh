#!/usr/bin/env bash
# Every test: the installed package checked from outside the tree, the CTest suites (GoogleTest, the ndk package's pytest suite, the scenarios, the
# benchmark smoke runs) in the normal build, again under ASan+UBSan, and the C++ suites under
# TSan; with NDK_VM=1 (what .ci/run sets) also the verbs lane: every scenario against real
# RDMA devices (rxe, siw) in a QEMU guest, tests/vm/verbs-lane.sh.  Exits non-zero if
# anything fails.
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
# The random walker and the fuzzer run only when asked: under ASan on this 2-core machine the
# walker reported a send that never completed (docs/walk.md, "Open finding"), not yet
# explained, and a CI step that may fail at random blocks every landing.
if [[ ${NDK_WALK_CI:-0} == 1 ]]; then
  echo "== ndk walk: build-asan/ (ASan + UBSan), seeds 1 and 2 (docs/walk.md)"
  bash tests/walk/ci-walk.sh build-asan
fi
echo "== ctest: build-tsan/ (TSan, C++ suites)"
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L unit -E '^python_'
if [[ -n ${NDK_FUZZ_SECONDS:-} ]]; then
  echo "== fuzz_dispatch: libFuzzer on the dispatch surface, build-fuzz/ (clang, ASan + UBSan)"
  # 240 s: about 0.2-0.4M executions on two shared cores (docs/testing.md, "The dispatch fuzzer").
  bash tests/fuzz/run.sh "$NDK_FUZZ_SECONDS"
fi
if [[ ${NDK_VM:-0} == 1 ]]; then
  echo "== verbs lane: scenarios on rxe0 and siw0 in a QEMU guest (NDK_VM=1)"
  bash tests/vm/verbs-lane.sh build
fi
