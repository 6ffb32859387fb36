#!/usr/bin/env bash
# Every test: the CTest suites (GoogleTest, the ndk package's pytest suite, the scenarios, the
# benchmark smoke runs) in the normal build, again under ASan+UBSan, and the C++ suites under
# TSan.  Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash tests/setup.sh default asan tsan

echo "== ctest: build/ (RelWithDebInfo)"
ctest --test-dir build --output-on-failure -j "$jobs" -LE vm
echo "== ctest: build-asan/ (ASan + UBSan)"
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'unit|scenario'
echo "== ctest: build-tsan/ (TSan, C++ suites)"
ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L unit -E '^python_'
