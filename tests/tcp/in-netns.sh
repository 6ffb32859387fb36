#!/usr/bin/env bash
# Run a command in a network namespace of its own whose loopback holds the addresses the
# scenarios and the soft provider give their adapters, so that soft adapters with
# transport=tcp (which listen and connect on real sockets, from addresses of this host) can
# use them without touching the host's network (docs/transport.md, "The tcp transport in the
# soft provider").  Needs root (unshare --net); the namespace ends with the command.
#
#   tests/tcp/in-netns.sh python3 -m pytest scenarios --ndk-option transport=tcp
#
# Local there: 192.0.2.0/24 (TEST-NET-1: the scenarios' fixed addresses), 198.18.0.0/15 and
# fd00:6e64:6b::/64 (what the soft provider picks when no address is given), 2001:db8::/64
# (the scenarios' IPv6 ones), each as a local route on lo (AnyIP).  203.0.113.0/24 (TEST-NET-3,
# the scenarios' "nobody has it") stays unreachable.
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "in-netns.sh: needs root (unshare --net)" >&2
  exit 77
fi
exec unshare --net -- bash -c '
  set -e
  ip link set lo up
  ip route add local 192.0.2.0/24 dev lo
  ip route add local 198.18.0.0/15 dev lo
  ip -6 route add local 2001:db8::/64 dev lo table local
  ip -6 route add local fd00:6e64:6b::/64 dev lo table local
  exec "$@"' in-netns "$@"
