#!/usr/bin/env bash
# Every test: lintian on the .deb, the installed package checked from outside the tree, the
# CTest suites (GoogleTest, the ndk package's pytest suite, the scenarios, the benchmark smoke
# runs) in the normal build, again under ASan+UBSan, the random walker, the C++ suites under
# TSan, the fuzzers; with NDK_VM=1 (what .ci/run sets) also the verbs lane: every scenario
# against real RDMA devices (rxe, siw) in a QEMU guest, tests/vm/verbs-lane.sh.
# docs/testing.md says what runs where and each stage's budget.  Exits non-zero if anything fails.
#
# Order: build/ (everything waits for it); then the verbs lane starts in the background while
# build-asan/, build-tsan/ and build-fuzz/ build, its QEMU at nice -10 (the guest's run is
# timed and keeps the CPU it asks for, about half a core; the compilers take the rest); then,
# once the lane is done, the host test stages run one after another with the machine to
# themselves.  Every stage prints its wall and CPU time ("== NAME: N s wall, M s CPU"), and a
# table of them ends the output, also after a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

stage_names=() stage_times=()
run_start=$SECONDS
run_epoch=$(date +%s) # for the last stage: what the run left in /dev/shm
lane_pid='' lane_dir=''
# The CPU seconds of this shell's finished children (/proc: cutime + cstime, in ticks), so that
# a stage's CPU time shows beside its wall time: on a shared machine the wall time also counts
# the others' load.
ticks=$(getconf CLK_TCK)
children_cpu() { awk -v t="$ticks" '{ printf "%d", ($16 + $17) / t }' "/proc/$$/stat"; }
# stage NAME COMMAND...: run one stage, print and record its wall and CPU time.
stage() {
  local name=$1 t0=$SECONDS c0 rc=0 line
  c0=$(children_cpu)
  shift
  echo "== $name"
  "$@" || rc=$?
  line="$((SECONDS - t0)) s wall, $(($(children_cpu) - c0)) s CPU"
  stage_names+=("$name")
  stage_times+=("$line")
  if ((rc)); then echo "== $name: $line, FAILED (exit $rc)"; else echo "== $name: $line"; fi
  return $rc
}
finish() {
  local rc=$? i
  if [[ -n $lane_pid ]] && kill -0 "$lane_pid" 2>/dev/null; then
    # An earlier stage failed: stop the lane (its own process group: QEMU and the scripts).
    kill -TERM -- "-$lane_pid" 2>/dev/null || true
    wait "$lane_pid" 2>/dev/null || true
    echo "== verbs lane: stopped (an earlier stage failed); its output so far:"
    cat "$lane_dir/log" 2>/dev/null || true
  fi
  [[ -z $lane_dir ]] || rm -rf "$lane_dir"
  echo "== stage times (docs/testing.md has the budgets)"
  for i in "${!stage_names[@]}"; do
    printf '   %-24s  %s\n' "${stage_times[i]}" "${stage_names[i]}"
  done
  printf '   %-24s  total (%d min %02d s), exit %d\n' \
    "$((SECONDS - run_start)) s wall, $(children_cpu) s CPU" \
    $(((SECONDS - run_start) / 60)) $(((SECONDS - run_start) % 60)) "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage "setup: Debian packages, build/ (RelWithDebInfo), the .deb" bash tests/setup.sh default

fuzz=0
[[ ${NDK_FUZZ_SECONDS:-60} == 0 ]] || fuzz=1
# clang for build-fuzz/, installed before the lane starts: the lane's first use installs QEMU
# and fetches the guest's packages, and two apt-get runs at once fail on apt's lock.
((!fuzz)) || bash tests/fuzz/run.sh --install-only

# The verbs lane needs only build/.  It runs in its own process group (job control on for the
# launch), its output into a file that is printed when it is waited for.  The guest's whole
# run is bounded by NDK_VM_TIMEOUT (here 1500 s unless set; tests/vm/ndk-vm.sh).
if [[ ${NDK_VM:-0} == 1 ]]; then
  export NDK_VM_TIMEOUT=${NDK_VM_TIMEOUT:-1500} NDK_VM_NICE=${NDK_VM_NICE:--10}
  lane_dir=$(mktemp -d)
  echo "== verbs lane: started in the background (scenarios on rxe0 and siw0 in a QEMU guest)"
  set -m
  (
    t0=$SECONDS
    rc=0
    bash tests/vm/verbs-lane.sh build </dev/null >"$lane_dir/log" 2>&1 || rc=$?
    # then the pair scenarios between two guests (docs/testing.md, "The two-guest lane")
    bash tests/vm/two-guests.sh build </dev/null >>"$lane_dir/log" 2>&1 || rc=$?
    echo "$((SECONDS - t0))" >"$lane_dir/seconds"
    exit $rc
  ) &
  lane_pid=$!
  set +m
fi
stage "setup: build-asan/ (ASan + UBSan)" bash tests/setup.sh asan
stage "setup: build-tsan/ (TSan)" bash tests/setup.sh tsan
if ((fuzz)); then
  stage "setup: build-fuzz/ (clang, libFuzzer, ASan + UBSan)" bash tests/fuzz/run.sh --build-only
fi

wait_for_lane() {
  local rc=0 seconds c0
  c0=$(children_cpu)
  wait "$lane_pid" || rc=$?
  lane_pid=''
  cat "$lane_dir/log"
  seconds=$(cat "$lane_dir/seconds" 2>/dev/null || echo 0)
  stage_names+=("verbs lane, in the background from the end of build/ (exit $rc)")
  stage_times+=("$seconds s wall, $(($(children_cpu) - c0)) s CPU")
  return $rc
}
if [[ -n $lane_pid ]]; then
  stage "waiting for the verbs lane (its output follows; the CPU is the lane's)" wait_for_lane
fi

stage "lintian on the .deb (packed afresh; any tag fails)" bash tests/package/lintian.sh
if [[ ${NDK_NO_INSTALL:-0} != 1 ]]; then
  stage "the installed package (.deb), from a folder outside the repository" \
    bash tests/package/check-installed.sh
fi
# stress_long (label bench) is the stress test's benchmark run, 60 s of one core: not CI's.
stage "ctest: build/ (RelWithDebInfo)" \
  ctest --test-dir build --output-on-failure -j "$jobs" -LE vm -E '^stress_long$'
stage "ctest: build-asan/ (ASan + UBSan)" \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'unit|scenario'
# The random walker (ASan+UBSan, fixed seeds: docs/walk.md, "CI"); NDK_WALK_CI=0 leaves it out
# of a quick local run.
if [[ ${NDK_WALK_CI:-1} == 1 ]]; then
  stage "ndk walk: build-asan/ (ASan + UBSan), seeds 1 and 2 (docs/walk.md)" \
    bash tests/walk/ci-walk.sh build-asan
fi
stage "ctest: build-tsan/ (TSan, C++ suites)" \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L unit -E '^python_'
# The fuzzers, fuzz_dispatch one pinned process per core for NDK_FUZZ_SECONDS (default 60),
# then fuzz_iwarp (docs/testing.md, "The dispatch fuzzer"); NDK_FUZZ_SECONDS=0 skips them.
if ((fuzz)); then
  stage "fuzz_dispatch and fuzz_iwarp: libFuzzer, build-fuzz/ (clang, ASan + UBSan)" \
    bash tests/fuzz/run.sh "${NDK_FUZZ_SECONDS:-60}"
fi
# Last: the run left nothing in /dev/shm/ndk-harness-<uid> (shm fabric directories and registry
# entries go with their last user; docs/testing.md, "Leaks").
stage "nothing left in /dev/shm/ndk-harness-$(id -u)" \
  /usr/bin/python3 tests/shm_leftovers.py --since "$run_epoch"
