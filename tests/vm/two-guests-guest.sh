#!/usr/bin/env bash
# tests/vm/two-guests-guest.sh ROLE RUN_DIR BUILD_DIR - one guest's part of the two-machine
# lane (tests/vm/two-guests.sh starts both guests; this runs inside each, as root, from the
# repository the guests share over 9p).
#
#   ROLE peer    guest B: the links, rxe0 and siw0 on them, sshd for guest A's key; then waits
#                until RUN_DIR/stop appears (the host writes it when guest A is done)
#   ROLE test    guest A: the links, rxe0 and siw0, ssh to guest B; then the pair scenarios
#                of each cell with the test's process here and their passive side in guest B
#                (--ndk-peer ssh=ndk-peer), JUnit XML per cell in BUILD_DIR/two-guests-results
#
# The two links (virtio-net NICs that tests/vm/two-guests.sh joins with QEMU -netdev socket)
# are found by their MAC addresses and named after the device bound to them: ndk_rxe carries
# rxe0 (192.0.2.31 in A, .32 in B; also the ssh connection), ndk_siw carries siw0 and the soft
# provider's TCP (198.51.100.31 in A, .32 in B).  One link per device because rdma_cm binds an
# address to the RDMA device of the address's netdev: two devices on one netdev would share
# its addresses, and a connection could land on either.  The VM lane's own rxe0 and siw0 (on
# dummy netdevs, tests/vm/ndk-vm.sh) are removed first, so the names stay verbs:rxe0/siw0.
#
# Cells (test side <-> peer side; NDK_TWO_GUESTS_CELLS selects them by name, space-separated):
#   rxe0-rxe0  verbs:rxe0 <-> verbs:rxe0      siw0-siw0  verbs:siw0 <-> verbs:siw0
#   tcp-siw0   soft:tcp   <-> verbs:siw0      siw0-tcp   verbs:siw0 <-> soft:tcp
# Each runs the scenarios listed in tests/vm/two-guests-scenarios.txt, or every pair scenario
# with NDK_TWO_GUESTS_SCENARIOS=all (pytest -m pair).  NDK_TWO_GUESTS_TEST_TIMEOUT (60):
# pytest-timeout's limit per scenario; NDK_TWO_GUESTS_PYTEST_ARGS: more pytest arguments.
set -uo pipefail
role=${1:?usage: two-guests-guest.sh peer|test RUN_DIR BUILD_DIR}
run=${2:?usage: two-guests-guest.sh peer|test RUN_DIR BUILD_DIR}
build=${3:?usage: two-guests-guest.sh peer|test RUN_DIR BUILD_DIR}
cd "$(dirname "$0")/../.." || exit 1
[[ $run == /* ]] || run=$PWD/$run # sshd's children run in /
say() { echo "two-guests ($role): $*"; }
die() { say "ERROR: $*"; exit 1; }

# MAC addresses given by tests/vm/two-guests.sh: 52:54:00:4e:0<guest>:0<link>, guest a or b,
# link 1 (rxe) or 2 (siw).
case $role in
  test) mine=a host=31 ;;
  peer) mine=b host=32 ;;
  *) die "ROLE is peer or test, not $role" ;;
esac
modprobe -a virtio_net || die "no virtio_net module in the guest image (tests/vm/ndk-vm.sh)"
link_of_mac() {
  local dev
  for dev in /sys/class/net/*; do
    [[ $(cat "$dev/address" 2>/dev/null) == "$1" ]] && { basename "$dev"; return 0; }
  done
  return 1
}
tag=0$mine
for _ in $(seq 50); do # the NICs appear once virtio_net has probed them
  link_of_mac "52:54:00:4e:$tag:02" >/dev/null && break
  sleep 0.1
done
# Away with the VM lane's own devices (each on a dummy netdev): the names are ours now.
for dev in rxe0 siw0; do rdma link delete "$dev" 2>/dev/null; done
ip link delete rxe_net 2>/dev/null; ip link delete siw_net 2>/dev/null
for link in rxe:1:192.0.2 siw:2:198.51.100; do
  IFS=: read -r kind number net <<<"$link"
  nic=$(link_of_mac "52:54:00:4e:$tag:0$number") || die "no NIC with MAC 52:54:00:4e:$tag:0$number"
  ip link set "$nic" name "ndk_$kind" || die "cannot rename $nic"
  if ! ip addr add "$net.$host/24" dev "ndk_$kind" || ! ip link set "ndk_$kind" up; then
    die "cannot put $net.$host on ndk_$kind"
  fi
  rdma link add "${kind}0" type "$kind" netdev "ndk_$kind" || die "rdma link add ${kind}0 failed"
done
# NDK's ephemeral ports are 49152-65535 (tests/vm/run-verbs.sh does the same).
sysctl -qw net.ipv4.ip_local_port_range="49152 65535"
say "$(rdma link show | sed 's/^link //' | tr '\n' ';')"

if [[ $role == peer ]]; then
  mkdir -p /root/.ssh /run/sshd
  chmod 700 /root/.ssh
  cp "$run/key.pub" /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
  # Debian's sshd with its host keys from the image; only the key, on the rxe link's address.
  # The peer interpreter it starts inherits this shell's limits (memlock unlimited: the guest's
  # init), as UsePAM=no leaves them alone.
  /usr/sbin/sshd -E "$run/sshd.log" -o ListenAddress=192.0.2.32 -o UsePAM=no \
    -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
    -o PermitRootLogin=prohibit-password || die "sshd did not start ($(cat "$run/sshd.log"))"
  touch "$run/peer-ready"
  say "sshd listening on 192.0.2.32:22; waiting for $run/stop"
  while [[ ! -e $run/stop ]]; do sleep 1; done
  say "stopping"
  exit 0
fi

# ---- guest A: the test's process ----
mkdir -p /root/.ssh && chmod 700 /root/.ssh
cp "$run/key" /root/.ssh/ndk_peer_key && chmod 600 /root/.ssh/ndk_peer_key
cat >/root/.ssh/config <<'EOF'
Host ndk-peer
  HostName 192.0.2.32
  User root
  IdentityFile /root/.ssh/ndk_peer_key
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
EOF
waited=0
while [[ ! -e $run/peer-ready ]]; do
  ((waited < 600)) || die "guest B did not get ready within 600 s"
  sleep 1
  waited=$((waited + 1))
done
ssh -o BatchMode=yes -o ConnectTimeout=30 ndk-peer true ||
  die "ssh to guest B failed; its sshd log: $(cat "$run/sshd.log" 2>/dev/null)"
say "guest B answers over ssh (192.0.2.32) after $waited s"

export PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
results=$build/two-guests-results
mkdir -p "$results"
rm -f "$results"/*.xml
if [[ ${NDK_TWO_GUESTS_SCENARIOS:-} == all ]]; then
  selection=(scenarios -m pair)
else
  mapfile -t selection < <(sed 's/#.*//; /^[[:space:]]*$/d; s/[[:space:]]*$//' tests/vm/two-guests-scenarios.txt)
fi
cells=${NDK_TWO_GUESTS_CELLS:-rxe0-rxe0 siw0-siw0 tcp-siw0 siw0-tcp}
rc=0
summary=()
for cell in $cells; do
  case $cell in
    rxe0-rxe0) test_side=verbs:rxe0 peer_side=verbs:rxe0 net=192.0.2 ;;
    siw0-siw0) test_side=verbs:siw0 peer_side=verbs:siw0 net=198.51.100 ;;
    tcp-siw0) test_side=soft:tcp peer_side=verbs:siw0 net=198.51.100 ;;
    siw0-tcp) test_side=verbs:siw0 peer_side=soft:tcp net=198.51.100 ;;
    *) die "unknown cell $cell (rxe0-rxe0 siw0-siw0 tcp-siw0 siw0-tcp)" ;;
  esac
  say "cell $cell: $test_side here (guest A, $net.31) <-> $peer_side in guest B ($net.32)"
  start=$SECONDS
  # shellcheck disable=SC2086  # NDK_TWO_GUESTS_PYTEST_ARGS is a word list
  /usr/bin/python3 -m pytest -p no:cacheprovider -p ndk.testing -p timeout \
    --timeout="${NDK_TWO_GUESTS_TEST_TIMEOUT:-60}" --color=no --tb=short -rfEsxX \
    --ndk-provider "$test_side" --ndk-peer ssh=ndk-peer --ndk-peer-provider "$peer_side" \
    --ndk-pair-addresses "$net.31,$net.32" --junitxml "$results/$cell.xml" \
    -o junit_suite_name="$cell" ${NDK_TWO_GUESTS_PYTEST_ARGS:-} "${selection[@]}"
  cell_rc=$?
  # 0: passed; 1: a scenario failed; anything else (no scenario, a usage error) fails too
  ((cell_rc == 0)) || rc=1
  counts=$(/usr/bin/python3 - "$results/$cell.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError) as error:
    print(f"no results ({error})")
    raise SystemExit
count = {"passed": 0, "skipped": 0, "xfailed": 0, "failed": 0}
for case in root.iter("testcase"):
    skipped = case.find("skipped")
    if case.find("failure") is not None or case.find("error") is not None:
        count["failed"] += 1
    elif skipped is None:
        count["passed"] += 1  # an XPASS too (not strict): the known failure is fixed
    else:
        count["xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"] += 1
print(", ".join(f"{n} {what}" for what, n in count.items()))
EOF
)
  summary+=("$(printf '%-10s %-11s <-> %-11s %-44s %4d s' "$cell" "$test_side" "$peer_side" "$counts" $((SECONDS - start)))")
done
say "cells (test side in guest A <-> peer side in guest B):"
printf '  %s\n' "${summary[@]}"
exit $rc
