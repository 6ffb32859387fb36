#!/usr/bin/env bash
# tests/vm/run-verbs.sh [BUILD_DIR] - the conformance scenarios against every RDMA device of
# this machine through the verbs provider (verbs:rxe0, verbs:siw0, ...) and, for the
# cross-check, against the soft provider, in one `ndk conformance` run: one rules x providers
# matrix, then the pass/fail/skip counts per provider.  Meant to run inside the VM lane's guest
# (tests/vm/verbs-lane.sh); works on any host with RDMA devices (root: the scenario addresses
# are moved between the devices' netdevs by tests/vm/give-addresses.sh).
# Exits 1 if a scenario failed or no device exists.
#
#   NDK_VM_TEST_TIMEOUT=60   per-scenario limit in seconds (pytest-timeout, when installed)
#   NDK_VERBS_CROSSCHECK=1   also run the soft provider (0: the devices only)
#   NDK_VERBS_PYTEST_ARGS    extra pytest arguments, e.g. "-x"
#   NDK_VERBS_KEYWORD        a pytest -k expression selecting scenarios
#   NDK_VERBS_INTEROP=1      then soft:tcp against siw0, each way (tests/vm/run-interop.sh;
#                            0: not); a failure there fails the lane
#   NDK_VERBS_PERF=1         then ndk perf --provider verbs:DEV beside perftest on each device
#                            (tests/vm/perf-rows.py: the lane's perf rows; 0: not); a run that
#                            fails fails the lane
#   NDK_VERBS_WALK_SECONDS=60  ndk walk per device afterwards (0: none); NDK_VERBS_WALK_SEED=1
#   NDK_VERBS_SHRINK_SECONDS=60  the shrinker's time for a walk's failure the quirk table
#                              does not know; each device's walk is stopped after
#                              NDK_VERBS_WALK_SECONDS + NDK_VERBS_SHRINK_SECONDS + 60 s in all
#                              (a hang on rxe0 costs about 2 min per replay in the kernel: the
#                              walker's watchdog kills the walking child, whose ibv_destroy_qp
#                              returns only then); a device's traces and shrunk scenarios go
#                              to BUILD_DIR/verbs-results/walk/DEVICE
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${NDK_BUILD_DIR:-build}}
[[ $build == /* ]] || build=$PWD/$build
export PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
devices=$(ls /sys/class/infiniband 2>/dev/null | sort)
if [[ -z $devices ]]; then
  echo "run-verbs: no RDMA device (/sys/class/infiniband is empty)" >&2
  exit 1
fi
# NDK's ephemeral ports are 49152-65535 (spec/ndkpi.md, NdkCreateSharedEndpoint); rdma_cm
# takes them from the kernel's local port range, which is 32768-60999 by default.
sysctl -qw net.ipv4.ip_local_port_range="49152 65535" 2>/dev/null ||
  echo "run-verbs: cannot set the local port range to 49152-65535" >&2
providers=()
[[ ${NDK_VERBS_CROSSCHECK:-1} == 1 ]] && providers+=(--provider soft)
for dev in $devices; do
  echo "run-verbs: verbs:$dev is $(rdma link show "$dev/1" 2>/dev/null | sed 's/^link //')"
  providers+=(--provider "verbs:$dev")
done
pytest_args=(--color=no --tb=short)
if /usr/bin/python3 -c 'import pytest_timeout' 2>/dev/null; then
  pytest_args+=(-p timeout --timeout="${NDK_VM_TEST_TIMEOUT:-60}")
fi
# shellcheck disable=SC2206  # NDK_VERBS_PYTEST_ARGS is a word list on purpose
pytest_args+=(${NDK_VERBS_PYTEST_ARGS:-})
results=$build/verbs-results
mkdir -p "$results"
keyword=()
[[ -n ${NDK_VERBS_KEYWORD:-} ]] && keyword=(-k "$NDK_VERBS_KEYWORD")
start=$SECONDS
NDK_PROVIDER_SETUP="bash $PWD/tests/vm/give-addresses.sh" \
  /usr/bin/python3 -m ndk conformance "${providers[@]}" "${keyword[@]}" \
    --junit "$results/conformance.xml" --html "$results/conformance.html" -- "${pytest_args[@]}"
rc=$?
echo "run-verbs: $((SECONDS - start)) s for ${providers[*]}"
# The walker's fixed findings on the verbs provider (tests/walk/findings/verbs, docs/walk.md):
# each trace replayed on every device must run clean, or the lane fails.
start=$SECONDS
mkdir -p "$results/walk" # ndk walk --out takes a folder that exists
for dev in $devices; do
  for trace in tests/walk/findings/verbs/*.jsonl; do
    sed "1s/\"provider\": \"[^\"]*\"/\"provider\": \"verbs:$dev\"/" "$trace" >"$results/replay.jsonl"
    if /usr/bin/python3 -m ndk walk --replay "$results/replay.jsonl" --no-shrink \
      --out "$results/walk" >"$results/replay.txt" 2>&1; then
      echo "run-verbs: finding $(basename "$trace") replays clean on verbs:$dev"
    else
      echo "run-verbs: finding $(basename "$trace") recurs on verbs:$dev:"
      grep -E "FAILED|ndk walk:" "$results/replay.txt" || cat "$results/replay.txt"
      rc=1
    fi
  done
done
echo "run-verbs: $((SECONDS - start)) s for the findings' replays"
# The interop stage: the pair scenarios with soft:tcp on one side and siw0 on the other.
if [[ ${NDK_VERBS_INTEROP:-1} == 1 ]]; then
  bash tests/vm/run-interop.sh "$build" || rc=1
fi
# The verbs provider against perftest on each device: the cost of the NDK mapping over raw
# verbs, as ratios from the same run (tests/vm/perf-rows.py).
if [[ ${NDK_VERBS_PERF:-1} == 1 ]]; then
  start=$SECONDS
  # shellcheck disable=SC2086  # one argument per device
  /usr/bin/python3 tests/vm/perf-rows.py $devices || rc=1
  echo "run-verbs: $((SECONDS - start)) s for the perf rows"
fi
# The random walker on each device (docs/walk.md), bounded; its summary is printed and its
# findings (with the shrunk scenario in $results/walk/DEVICE) go to the walker's table
# (python/ndk/quirks.py) or the expectations (python/expectations/verbs.toml, docs/semantics.md): they
# do not change this lane's exit code.
walk_seconds=${NDK_VERBS_WALK_SECONDS:-60}
shrink_seconds=${NDK_VERBS_SHRINK_SECONDS:-60}
if [[ $walk_seconds != 0 ]]; then
  for dev in $devices; do
    echo "run-verbs: ndk walk --provider verbs:$dev --seconds $walk_seconds"
    start=$SECONDS
    mkdir -p "$results/walk/$dev"
    walk_rc=0
    timeout -k 10 $((walk_seconds + shrink_seconds + 60)) \
      /usr/bin/python3 -m ndk walk --provider "verbs:$dev" --seconds "$walk_seconds" \
      --seed "${NDK_VERBS_WALK_SEED:-1}" --out "$results/walk/$dev" \
      --shrink-seconds "$shrink_seconds" --past-known || walk_rc=$?
    case $walk_rc in
      0) ;;
      124 | 137)
        echo "run-verbs: ndk walk on verbs:$dev stopped at its budget of" \
             "$((walk_seconds + shrink_seconds + 60)) s; its traces are in $results/walk/$dev" ;;
      *) echo "run-verbs: ndk walk on verbs:$dev reported a failure (above)" ;;
    esac
    echo "run-verbs: $((SECONDS - start)) s for the walk on verbs:$dev"
  done
fi
exit $rc
