#!/usr/bin/env bash
# The pair scenarios across two network namespaces joined by a veth pair: the test's
# interpreter in the first, the peer interpreter (the passive side of every `pair`) in the
# second (--ndk-peer netns=NAME), the soft provider over transport=tcp (soft:tcp), so that every
# pair connection is a kernel TCP connection crossing the veth (docs/providers.md, "Running
# across hosts").  Needs root (ip netns add); exits 77 (CTest: skipped) with the reason when
# not root.
#
#   tests/tcp/two-namespaces.sh [PYTEST-ARGS...]
#
# Runs `python3 -m pytest scenarios -m pair --ndk-provider soft:tcp --ndk-peer netns=B
# --ndk-pair-addresses 192.0.2.31,192.0.2.32 -rs PYTEST-ARGS...` in namespace A, from the
# repository root, with $PYTHONPATH as given (CTest: the build's python/).  The namespaces are named
# ndk-2ns-<pid>-a and -b; the veth's ends are created in them directly (veth0 in A with
# 192.0.2.31/24, veth1 in B with 192.0.2.32/24), so the host's own network is not touched.
# Each namespace's addresses are local there and only there: a connection from the client's
# address to the server's leaves A on veth0 and enters B on veth1.  Everything made is removed
# at the end, also after a failure, Ctrl-C or SIGTERM: the processes still in the two
# namespaces (a peer that did not leave), then the namespaces (their veth ends go with them).
# $NDK_PYTHON is the interpreter (default Debian's /usr/bin/python3, the one the peer uses).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "two-namespaces.sh: needs root (ip netns add, ip netns exec)" >&2
  exit 77
fi
cd "$(dirname "$0")/../.."
python=${NDK_PYTHON:-/usr/bin/python3}
client_address=192.0.2.31 server_address=192.0.2.32  # the pair fixture's defaults
ns_a=ndk-2ns-$$-a ns_b=ndk-2ns-$$-b
made=() child=

# remove_namespace NAME: end what still runs in namespace NAME (one of ours: the test's
# interpreter, its peers), then delete it; its veth end goes with it.
remove_namespace() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  # shellcheck disable=SC2086  # one pid per word
  [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
  ip netns delete "$1" 2>/dev/null
}
# shellcheck disable=SC2317  # run by the traps
cleanup() {
  local ns
  trap - EXIT INT TERM
  if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  for ns in "${made[@]}"; do
    remove_namespace "$ns" || echo "two-namespaces.sh: could not delete $ns" >&2
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A run killed with SIGKILL (CTest's timeout) could not clean up: remove the namespaces of a
# run whose script is gone, with what still runs in them.
for ns in $(ip netns list | awk '$1 ~ /^ndk-2ns-[0-9]+-[ab]$/ {print $1}'); do
  pid=${ns#ndk-2ns-} pid=${pid%-?}
  if ! grep -qs two-namespaces "/proc/$pid/cmdline"; then
    remove_namespace "$ns" || true
    echo "two-namespaces.sh: removed $ns, left by an earlier run that was killed"
  fi
done

for ns in "$ns_a" "$ns_b"; do
  ip netns add "$ns"
  made+=("$ns")
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link add veth0 type veth peer name veth1 netns "$ns_b"
ip -n "$ns_a" addr add "$client_address/24" dev veth0
ip -n "$ns_b" addr add "$server_address/24" dev veth1
ip -n "$ns_a" link set veth0 up
ip -n "$ns_b" link set veth1 up
# The first connection must not race the link coming up (no carrier yet: ENETUNREACH or an
# unanswered ARP): wait, at most 5 s, until both ends report it up.
for _ in $(seq 50); do
  [[ $(ip netns exec "$ns_a" cat /sys/class/net/veth0/operstate) == up &&
     $(ip netns exec "$ns_b" cat /sys/class/net/veth1/operstate) == up ]] && break
  sleep 0.1
done

echo "two-namespaces.sh: test process in $ns_a ($client_address on veth0), peer in $ns_b" \
     "($server_address on veth1)"
# In the background so that the traps run at once on a signal (bash defers them while a
# foreground child runs; a background one ignores Ctrl-C, the trap ends it); its exit status
# is the script's.
ip netns exec "$ns_a" "$python" -m pytest scenarios -m pair --ndk-provider soft:tcp \
  --ndk-peer "netns=$ns_b" --ndk-pair-addresses "$client_address,$server_address" -rs "$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=
exit "$rc"
