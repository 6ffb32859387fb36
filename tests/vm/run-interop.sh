#!/usr/bin/env bash
# tests/vm/run-interop.sh [BUILD_DIR] - the soft provider's iWARP wire against Linux siw: the
# pair scenarios (-m pair) with soft:tcp on one side and verbs:siw0 on the other, both ways:
#   soft:tcp active, siw0 passive:  ndk conformance --provider soft:tcp  --ndk-peer-provider verbs:siw0
#   siw0 active, soft:tcp passive:  ndk conformance --provider verbs:siw0 --ndk-peer-provider soft:tcp
# Both sides in this process (--ndk-peer local; the scenario that kills the peer with the passive
# side in a process of its own, --ndk-peer popen), on this machine's network: the pair's two
# addresses (192.0.2.31, the active side; 192.0.2.32, the passive one) sit on siw0's netdev
# (tests/vm/give-addresses.sh verbs:siw0), where siw0 owns them and soft:tcp finds them local.
# What differs from soft<->soft is in python/expectations/verbs.toml under the pair (active, passive;
# docs/expectations.md; evidence in docs/semantics.md, "Quirks of soft:tcp against siw").
# tests/vm/run-verbs.sh runs it in the VM lane's guest after the matrix (root); exits 1 on a
# failure, 0 with a note when there is no siw0.  Each way prints its counts and the report's
# "pair scenarios, where their peer ran" line; JUnit XML and HTML go to
# BUILD_DIR/verbs-results/interop-*.
#
#   NDK_VM_TEST_TIMEOUT=60        per-scenario limit in seconds (pytest-timeout, when installed)
#   NDK_INTEROP_PYTEST_ARGS       extra pytest arguments, e.g. "-x"
#   NDK_INTEROP_KEYWORD           a pytest -k expression selecting scenarios
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${NDK_BUILD_DIR:-build}}
[[ $build == /* ]] || build=$PWD/$build
export PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
siw=verbs:siw0
if [[ ! -e /sys/class/infiniband/siw0 ]]; then
  echo "run-interop: no siw0 here (/sys/class/infiniband): soft:tcp against siw not run"
  exit 0
fi
sysctl -qw net.ipv4.ip_local_port_range="49152 65535" 2>/dev/null || true
bash tests/vm/give-addresses.sh "$siw" || exit 1
pytest_args=(--color=no --tb=short -m pair)
if /usr/bin/python3 -c 'import pytest_timeout' 2>/dev/null; then
  pytest_args+=(-p timeout --timeout="${NDK_VM_TEST_TIMEOUT:-60}")
fi
# shellcheck disable=SC2206  # NDK_INTEROP_PYTEST_ARGS is a word list on purpose
pytest_args+=(${NDK_INTEROP_PYTEST_ARGS:-})
keyword=()
[[ -n ${NDK_INTEROP_KEYWORD:-} ]] && keyword=(-k "$NDK_INTEROP_KEYWORD")
results=$build/verbs-results
mkdir -p "$results"
rc=0
all=$SECONDS
for direction in "soft:tcp $siw" "$siw soft:tcp"; do
  read -r active passive <<<"$direction"
  name=interop-${active%%[0-9]}-${passive%%[0-9]}
  name=${name//:/_}
  echo "run-interop: $active active, $passive passive (pair scenarios)"
  start=$SECONDS
  /usr/bin/python3 -m ndk conformance --provider "$active" "${keyword[@]}" \
    --junit "$results/$name.xml" --html "$results/$name.html" -- \
    --ndk-peer-provider "$passive" "${pytest_args[@]}" || rc=1
  echo "run-interop: $((SECONDS - start)) s for $active -> $passive"
done
# A killed peer needs the passive side in a process of its own (--ndk-peer popen): the
# scenario that kills it, each way.
for direction in "soft:tcp $siw" "$siw soft:tcp"; do
  read -r active passive <<<"$direction"
  name=interop-${active%%[0-9]}-${passive%%[0-9]}-killed
  name=${name//:/_}
  echo "run-interop: $active active, $passive passive in another process, killed"
  /usr/bin/python3 -m ndk conformance --provider "$active" -k test_peer_killed \
    --junit "$results/$name.xml" -- --ndk-peer popen \
    --ndk-peer-provider "$passive" "${pytest_args[@]}" || rc=1
done
echo "run-interop: $((SECONDS - all)) s in all (exit $rc)"
exit $rc
