#!/usr/bin/env bash
# tests/vm/verbs-lane.sh - the verbs lane: build the harness on this host (Debian 12, the same
# libibverbs/librdmacm as the guest), then boot the RDMA guest (tests/vm/ndk-vm.sh: rxe0 and
# siw0, cached after the first use) and run every scenario against each device in it, then the
# pair scenarios with soft:tcp against siw0 each way, then the verbs provider against perftest
# on each device (tests/vm/run-verbs.sh, tests/vm/run-interop.sh, tests/vm/perf-rows.py).  Prints the per-device counts; exits non-zero on a failure.
#
#   bash tests/vm/verbs-lane.sh [BUILD_DIR]      (root; default build/, configured if needed)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
start=$SECONDS
if [[ ! -f $build/build.ninja ]]; then
  bash tests/setup.sh default >/dev/null
  [[ -f $build/build.ninja ]] || cmake --preset default -B "$build" >/dev/null
fi
cmake --build "$build" --target _core ndk_verbs_provider ndk_walk ndk_perf >/dev/null
echo "== verbs lane: guest with rxe0 + siw0 (tests/vm/ndk-vm.sh)"
rc=0
bash tests/vm/ndk-vm.sh -- bash tests/vm/run-verbs.sh "$build" || rc=$?
echo "== verbs lane: $((SECONDS - start)) s wall (exit $rc)"
exit $rc
