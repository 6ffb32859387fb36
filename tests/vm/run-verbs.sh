#!/usr/bin/env bash
# tests/vm/run-verbs.sh [BUILD_DIR] - the conformance scenarios against every RDMA device of
# this machine through the verbs provider: one pytest run per device (--ndk-provider=verbs:rxe0,
# verbs:siw0, ...), then the pass/skip/fail counts per device.  Meant to run inside the VM
# lane's guest (tests/vm/verbs-lane.sh); works on any host with RDMA devices.  Exits 1 if a
# scenario failed or no device exists.
#
#   NDK_VM_TEST_TIMEOUT=60   per-scenario limit in seconds (pytest-timeout, when installed)
#   NDK_VERBS_PYTEST_ARGS    extra pytest arguments, e.g. "-k connect -x"
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
timeout_args=()
if /usr/bin/python3 -c 'import pytest_timeout' 2>/dev/null; then
  timeout_args=(-p timeout --timeout="${NDK_VM_TEST_TIMEOUT:-60}")
fi
results=$build/verbs-results
mkdir -p "$results"
rc=0
for dev in $devices; do
  echo "== scenarios: --ndk-provider=verbs:$dev ($(cat /sys/class/infiniband/$dev/node_type 2>/dev/null))"
  start=$SECONDS
  # shellcheck disable=SC2086  # NDK_VERBS_PYTEST_ARGS is a word list on purpose
  /usr/bin/python3 -m pytest -q -p no:cacheprovider --color=no -rfE "${timeout_args[@]}" scenarios \
    --ndk-provider="verbs:$dev" --junitxml="$results/$dev.xml" ${NDK_VERBS_PYTEST_ARGS:-} \
    || rc=1
  echo "(verbs:$dev took $((SECONDS - start)) s)"
done
echo "== verbs lane: scenario counts per device"
/usr/bin/python3 - "$results" $devices <<'EOF'
import sys, xml.etree.ElementTree as ET
results, devices = sys.argv[1], sys.argv[2:]
total = dict(passed=0, skipped=0, failed=0)
for dev in devices:
    try:
        suite = ET.parse(f"{results}/{dev}.xml").getroot()
    except (OSError, ET.ParseError) as exc:
        print(f"  verbs:{dev}: no results ({exc})")
        continue
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    tests, skipped = int(suite.get("tests")), int(suite.get("skipped"))
    failed = int(suite.get("failures")) + int(suite.get("errors"))
    passed = tests - skipped - failed
    print(f"  verbs:{dev}: {passed} passed, {failed} failed, {skipped} skipped "
          f"({float(suite.get('time')):.0f} s)")
    for key, value in dict(passed=passed, skipped=skipped, failed=failed).items():
        total[key] += value
print(f"verbs: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
EOF
exit $rc
