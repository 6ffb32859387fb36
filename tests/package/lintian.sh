#!/usr/bin/env bash
# Does Debian's lintian accept the .deb with no tag at all (no error, no warning)?
#
#   tests/package/lintian.sh [BUILD_DIR]      (default build/) packs the .deb afresh from the
#                                             built tree (cpack -G DEB) and runs lintian on it
#
# Fails on any tag lintian prints, so a new warning fails CI as an error does.  As root, lintian
# runs as nobody (it warns against running with root privileges), on a copy of the .deb.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rm -f "$build"/ndk-harness_*.deb
out=$(cd "$build" && cpack -G DEB 2>&1) || { echo "$out"; exit 1; }
debs=("$build"/ndk-harness_*.deb)
[[ -f ${debs[0]} ]] || { echo "lintian.sh: cpack wrote no $build/ndk-harness_*.deb"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "${debs[0]}" "$work/"
deb=$work/$(basename "${debs[0]}")
as_user=()
if [[ $(id -u) -eq 0 ]]; then
  chmod 755 "$work" && chmod 644 "$deb"
  as_user=(runuser -u nobody -- env HOME="$work" TMPDIR="$work")
fi
rc=0
out=$("${as_user[@]}" lintian "$deb" 2>&1) || rc=$?
if [[ -n $out || $rc -ne 0 ]]; then
  echo "$out"
  echo "lintian: $(grep -c . <<<"$out") line(s), exit $rc on ${debs[0]}"
  exit 1
fi
echo "lintian: no tag on ${debs[0]}"
