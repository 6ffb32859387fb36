#!/usr/bin/env bash
# tests/vm/repeat-scenario.sh BUILD_DIR PROVIDER COUNT TEST... - run the given scenarios COUNT
# times each, in one pytest session, against one provider (verbs:rxe0, verbs:siw0, soft), to
# tell a timing-dependent failure from a steady one.  TEST is a pytest node id without the
# provider, e.g. scenarios/test_completions.py::test_mixed_initiator_results_in_issue_order
# (tests/vm/repeat_plugin.py makes the repetitions).
# Meant for the VM lane's guest:
#   bash tests/vm/ndk-vm.sh -- bash tests/vm/repeat-scenario.sh build-lane verbs:siw0 100 TEST
# A TEST may also be a scenario file.  NDK_REPEAT_PYTEST_ARGS: extra pytest arguments (e.g.
# "-v -v -rfEX": one line per run, so a run cut short still shows what failed).
# Prints pytest's summary (failures with their short tracebacks) and the pass/fail counts.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: repeat-scenario.sh BUILD_DIR PROVIDER COUNT TEST...}
provider=${2:?provider} count=${3:?count}
shift 3
(($#)) || { echo "repeat-scenario: no TEST given" >&2; exit 2; }
[[ $build == /* ]] || build=$PWD/$build
export PYTHONPATH=$build/python:$PWD/tests/vm PYTHONDONTWRITEBYTECODE=1 NDK_REPEAT=$count
sysctl -qw net.ipv4.ip_local_port_range="49152 65535" 2>/dev/null || true
bash tests/vm/give-addresses.sh "$provider" || exit 1
start=$SECONDS
/usr/bin/python3 -m pytest -p no:cacheprovider -p ndk.testing -p repeat_plugin --color=no -q --tb=short \
  -p timeout --timeout="${NDK_VM_TEST_TIMEOUT:-60}" -o console_output_style=classic \
  --ndk-provider "$provider" ${NDK_REPEAT_PYTEST_ARGS:-} "$@" # word list on purpose
rc=$?
echo "repeat-scenario: $((SECONDS - start)) s for $count x $# on $provider (exit $rc)"
exit $rc
