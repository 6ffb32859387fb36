#!/usr/bin/env bash
# tests/vm/give-addresses.sh PROVIDER - put the scenarios' adapter addresses on the RDMA device
# PROVIDER names (verbs:rxe0 -> rxe0's netdev), taking them off every other device's netdev.
# Any other provider (soft) needs nothing.  Root; run by the plugin's --ndk-provider-setup
# before each provider's group of tests (tests/vm/run-verbs.sh sets it).
#
# Why: the scenarios name their adapters by TEST-NET addresses (open_adapter(address=...), the
# soft provider's knob), and the verbs provider opens the device that owns such an address.
# They are the constants of python/ndk/scenario/ (ndk.scenario.CLIENT, ...) and literals in
# scenarios/.
# One address can only be on one netdev, so the devices take turns.  Left off: 192.0.2.20
# (V4_OTHER) and 2001:db8::99, which the listener and shared-endpoint scenarios use as
# addresses their adapter does not own;
# 203.0.113.x and 2001:db8:ffff::77, which no adapter owns, do not match the pattern.
set -euo pipefail
cd "$(dirname "$0")/../.."
provider=${1:?usage: give-addresses.sh PROVIDER}
[[ $provider == verbs:* ]] || exit 0
device=${provider#verbs:}

netdev_of() { rdma link show "$1/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'; }
netdev=$(netdev_of "$device")
[[ -n $netdev ]] || { echo "give-addresses: RDMA device $device has no netdev" >&2; exit 1; }
netdevs=$(for d in $(ls /sys/class/infiniband); do netdev_of "$d"; done | sort -u)

addresses=$(grep -ohE '"(192\.0\.2\.[0-9]+|2001:db8::[0-9a-f]+)"' scenarios/*.py python/ndk/scenario/*.py | tr -d '"' |
            sort -u | grep -vxE '192\.0\.2\.20|2001:db8::99')
for a in $addresses; do
  len=24; [[ $a == *:* ]] && len=64
  for other in $netdevs; do
    ip addr del "$a/$len" dev "$other" 2>/dev/null || true
  done
  if [[ $a == *:* ]]; then ip -6 addr add "$a/$len" dev "$netdev" nodad; else ip addr add "$a/$len" dev "$netdev"; fi
done
