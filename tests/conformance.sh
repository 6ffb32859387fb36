#!/usr/bin/env bash
# The main job: set up, build, and run the conformance scenarios against the built-in soft
# provider, printing the rules x providers report.  Extra arguments go to `ndk conformance`
# (e.g. --junit report.xml, --provider path/to/libmyprovider.so).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh default
exec build/bin/ndk conformance "$@"
