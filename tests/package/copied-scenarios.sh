#!/usr/bin/env bash
# Scenario files copied out of their folder into an empty one run there with the package
# alone: their helpers (ndk.scenario) and fixtures (ndk.testing) are the package's, nothing is
# imported from beside them (docs/scenarios.md).
#
#   tests/package/copied-scenarios.sh SCENARIOS_DIR [pytest arguments]
#
# Which ndk runs is the caller's: PYTHONPATH=build/python with `-p ndk.testing` (CTest
# scenarios_copied), or the installed package and its pytest11 entry point
# (tests/package/check-installed.sh).  The files between them import every ndk.scenario module
# and use the plugin's buffer, mr and qp fixtures.
set -euo pipefail
src=$(cd "$1" && pwd)
shift
files=(test_qp.py test_memory_access.py test_oid.py)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for file in "${files[@]}"; do cp "$src/$file" "$work/"; done
cd "$work"
/usr/bin/python3 -m pytest -q -p no:cacheprovider --ndk-provider soft "$@" "${files[@]}"
