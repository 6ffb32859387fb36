#!/usr/bin/env bash
# tests/vm/two-guests.sh - the two-machine RDMA lane: two QEMU guests of the VM lane's image
# joined by virtual Ethernet links, the pair scenarios' test process in guest A and their
# passive side (the peer) in guest B, over rxe, siw and the soft provider's TCP transport.
#
#   bash tests/vm/two-guests.sh [BUILD_DIR]      (root; default build/, configured if needed)
#
# Both guests are tests/vm/ndk-vm.sh's guest: one image (built and cached on first use), each
# guest booting it copy-on-write (snapshot=on), the repository shared over 9p at the same path.
# Two links join them, each a QEMU `-netdev socket` (guest B listens on a free TCP port of the
# host's loopback, guest A connects): ndk_rxe carries rxe0 (192.0.2.31 in A, .32 in B) and the
# ssh connection, ndk_siw carries siw0 and soft:tcp (198.51.100.31 / .32).  Guest B runs sshd
# with a key made for this run; guest A runs pytest with `--ndk-peer ssh=ndk-peer`, so every
# pair's passive side lives in B (docs/providers.md, "Running across hosts").  The cells, the
# scenarios and the budget: tests/vm/two-guests-guest.sh, tests/vm/two-guests-scenarios.txt,
# docs/testing.md ("The two-guest lane").  Results: BUILD_DIR/two-guests-results (JUnit XML per
# cell, guest B's output).  Exits non-zero if a scenario failed or a guest did not come up.
#
#   NDK_TWO_GUESTS_SMP=1          vCPUs per guest (two guests on this 2-core machine)
#   NDK_TWO_GUESTS_CELLS=...      the cells to run (default all four)
#   NDK_TWO_GUESTS_SCENARIOS=all  every pair scenario instead of the list
#   NDK_TWO_GUESTS_TIMEOUT=900    seconds for guest A's whole run (guest B: 120 s more)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-build}
[[ $build == /* ]] || build=$root/$build
start=$SECONDS
say() { echo "two-guests: $*"; }
[[ $(id -u) == 0 ]] || { say "must run as root (tests/vm/ndk-vm.sh)"; exit 1; }
if [[ ! -f $build/build.ninja ]]; then
  bash tests/setup.sh default >/dev/null
  [[ -f $build/build.ninja ]] || cmake --preset default -B "$build" >/dev/null
fi
cmake --build "$build" --target _core ndk_verbs_provider >/dev/null
command -v ssh-keygen >/dev/null || apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
  --no-install-recommends openssh-client >/dev/null
bash tests/vm/ndk-vm.sh --build-only # the image once, before two guests wait for it

results=$build/two-guests-results
mkdir -p "$results"
run=$(mktemp -d "$build/two-guests-run.XXXXXX") # on the share: both guests read it
peer_pid=''
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  touch "$run/stop"
  if [[ -n $peer_pid ]] && kill -0 "$peer_pid" 2>/dev/null; then
    # guest B leaves by itself once it sees the stop file; it is stopped if it does not
    for _ in $(seq 30); do kill -0 "$peer_pid" 2>/dev/null || break; sleep 1; done
    kill -TERM -- "-$peer_pid" 2>/dev/null || true
    wait "$peer_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ssh-keygen -q -t ed25519 -N '' -C ndk-two-guests -f "$run/key"
# Two free ports on the host's loopback for the links (guest B listens, guest A connects).
read -r rxe_port siw_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
nics() { # nics a|b listen|connect: the two NICs of one guest, MAC 52:54:00:4e:0<guest>:0<link>
  local guest=$1 how=$2
  echo "-netdev socket,id=rxe,$how=127.0.0.1:$rxe_port" \
       "-device virtio-net-pci,netdev=rxe,mac=52:54:00:4e:0${guest}:01" \
       "-netdev socket,id=siw,$how=127.0.0.1:$siw_port" \
       "-device virtio-net-pci,netdev=siw,mac=52:54:00:4e:0${guest}:02"
}
smp=${NDK_TWO_GUESTS_SMP:-1}
timeout=${NDK_TWO_GUESTS_TIMEOUT:-900}
rel_run=${run#"$root"/}
rel_build=${build#"$root"/}

say "guest B (the peer) boots, its links listening on 127.0.0.1:$rxe_port and :$siw_port"
set -m # guest B in a process group of its own, so cleanup stops QEMU with it
NDK_VM_SMP=$smp NDK_VM_TIMEOUT=$((timeout + 120)) NDK_VM_QEMU_ARGS="$(nics b listen)" \
  bash tests/vm/ndk-vm.sh -- bash tests/vm/two-guests-guest.sh peer "$rel_run" "$rel_build" \
  >"$results/guest-b.log" 2>&1 </dev/null &
peer_pid=$!
set +m
listening() { [[ -n $(ss -Hltn "( sport = :$1 )" 2>/dev/null) ]]; }
for _ in $(seq 120); do
  listening "$rxe_port" && listening "$siw_port" && break
  kill -0 "$peer_pid" 2>/dev/null || break
  sleep 0.5
done
if ! listening "$rxe_port" || ! listening "$siw_port"; then
  say "guest B's QEMU is not listening on the links; its output:"
  cat "$results/guest-b.log"
  exit 1
fi

say "guest A (the test's process) boots, its links connected to guest B's"
rc=0
NDK_VM_SMP=$smp NDK_VM_TIMEOUT=$timeout NDK_VM_QEMU_ARGS="$(nics a connect)" \
  bash tests/vm/ndk-vm.sh -- bash tests/vm/two-guests-guest.sh test "$rel_run" "$rel_build" ||
  rc=$?
touch "$run/stop"
peer_rc=0
wait "$peer_pid" || peer_rc=$?
peer_pid=''
if ((rc || peer_rc)); then
  say "guest B's output (exit $peer_rc):"
  sed 's/^/  B| /' "$results/guest-b.log"
fi
((peer_rc == 0)) || rc=1
say "$((SECONDS - start)) s wall (exit $rc)"
exit $rc
