#!/usr/bin/env bash
# tests/vm/ndk-vm.sh - run a command inside a QEMU guest that has real RDMA devices:
# Soft-RoCE (rxe0, RoCEv2) and soft-iWARP (siw0, iWARP over TCP).
#
#   bash tests/vm/ndk-vm.sh [--build-only] [--] COMMAND...     (run as root)
#
# The host kernel here has no RDMA, so the guest boots Debian's own kernel package.  On first
# use the script builds and caches (in $NDK_VM_CACHE, default ~/.cache/ndk-vm): the kernel,
# siw.ko (Debian does not build siw: compiled out of tree against the kernel's headers, from
# linux-source of its upstream release), a debootstrap'ed root file system with the run-time packages the harness needs
# (libibverbs, librdmacm, rdma-core, python3 + pytest, the same versions as a Debian 12 host,
# so a host build runs in the guest) and a small initramfs.  Later runs reuse the cache and
# boot in about 10 s.  The repository is shared read-write over 9p at the same path, and is
# the command's working directory; the command's output streams to stdout and the script
# exits with its status (125: the VM itself failed or timed out).
#
# In the guest: rxe0 on dummy netdev rxe_net (192.168.77.1), siw0 on siw_net (192.168.78.1);
# NDK_VM_RXE_IP / NDK_VM_SIW_IP hold the addresses of the devices that came up.  Traffic
# never leaves the guest: both ends of every connection are in it.
#
# Environment (all optional):
#   NDK_VM_CACHE=~/.cache/ndk-vm   cached artefacts        NDK_VM_ACCEL=auto|kvm|tcg
#   NDK_VM_MEM=2G NDK_VM_SMP=2     guest size              NDK_VM_TIMEOUT=2400 (seconds)
#   NDK_VM_VERBOSE=1               print the guest's kernel console at the end
#   NDK_VM_PASS=VAR1,VAR2          host variables to pass into the guest (CI, NDK_* are passed)
#   NDK_VM_QEMU_ARGS="..."         more QEMU arguments (words), e.g. the links between the two
#                                  guests of tests/vm/two-guests.sh
#   NDK_VM_NICE=N                  run QEMU at nice N (root; tests/all.sh sets -10 for the lane
#                                  it runs beside the builds: the guest's run is timed, they are not)
#
# Facts this follows were measured in ../shared/tools/rdma-vm/REPORT.md: KVM is used only when
# /dev/kvm works *and* the CPU has vmx/svm (a para-virtual /dev/kvm cannot run a stock kernel);
# the kernel boots as an uncompressed vmlinux through PVH (the in-guest decompression costs
# ~5 s under TCG); the root is an ext4 image on virtio-blk opened snapshot=on; rdma_cm needs
# real (dummy) netdevs, not lo; rxe needs the crc32 crypto modules.
set -euo pipefail

SCRIPT=$(cd "$(dirname "$0")" && pwd -P)/$(basename "$0")
ROOT=$(cd "$(dirname "$SCRIPT")/../.." && pwd -P)
CACHE=${NDK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ndk-vm}
ACCEL=${NDK_VM_ACCEL:-auto}
MEM=${NDK_VM_MEM:-2G}
SMP=${NDK_VM_SMP:-2}
TIMEOUT=${NDK_VM_TIMEOUT:-2400}
KPKG=linux-image-amd64
GUEST_PKGS="rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,libibverbs1,librdmacm1"
GUEST_PKGS+=",python3,python3-pytest,python3-pytest-timeout,iproute2,kmod,procps"
GUEST_PKGS+=",python3-rpyc,openssh-server" # a pair's peer in another guest: tests/vm/two-guests.sh
GUEST_PKGS+=",perftest" # the verbs provider beside ib_send_lat & co: tests/vm/perf-rows.py
BUILD_ONLY=0

while (($#)); do
  case $1 in
    --build-only) BUILD_ONLY=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$SCRIPT" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "ndk-vm: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
((BUILD_ONLY || $#)) || { echo "usage: $0 [--build-only] [--] COMMAND..." >&2; exit 2; }

T0=$SECONDS
log() { echo "[ndk-vm $((SECONDS - T0))s] $*" >&2; }
die() { log "ERROR: $*"; exit 125; }
[[ $(id -u) == 0 ]] || die "must run as root (apt-get, debootstrap, mkfs)"

# ---- host tools -----------------------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -o DPkg::Lock::Timeout=600 -qq)
need=()
for tool in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap depmod:kmod cpio:cpio \
            mkfs.ext4:e2fsprogs xz:xz-utils zstd:zstd make:make gcc-12:gcc-12 strip:binutils \
            flock:util-linux; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
if ((${#need[@]})); then
  log "installing host packages: ${need[*]}"
  "${APT[@]}" update
  "${APT[@]}" install -y --no-install-recommends "${need[@]}" >/dev/null
fi

# The first Debian archive URI apt is configured with for a suite (deb822 or one-line lists),
# so no mirror name is written into the project.
apt_mirror() {
  local suite=$1 f
  {
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      awk -v s="$suite" 'BEGIN{RS="";FS="\n"}
        { uri="";ok=0;deb=0
          for(i=1;i<=NF;i++){ l=$i; if(l ~ /^[ \t]*#/) continue
            if(l ~ /^Types:/ && l ~ /[ \t]deb([ \t]|$)/) deb=1
            if(l ~ /^URIs:/){ sub(/^URIs:[ \t]*/,"",l); split(l,a,/[ \t]+/); uri=a[1] }
            if(l ~ /^Suites:/){ n=split(l,a,/[ \t]+/); for(j=2;j<=n;j++) if(a[j]==s) ok=1 } }
          if(deb && ok && uri!="") print uri }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      awk -v s="$suite" '$1=="deb" { i=2; if($2 ~ /^\[/){ while($i !~ /\]$/) i++; i++ } if($(i+1)==s) print $i }' "$f"
    done
  } | head -n1
}
apt_download() { # quietly: apt warns that a download as root is unsandboxed
  apt-get download "$@" 2>&1 | { grep -v '^W: Download is performed unsandboxed' || true; } >&2
}

SUITE=$(. /etc/os-release; echo "${VERSION_CODENAME:-bookworm}")
mkdir -p "$CACHE"
cd "$CACHE"
exec 9>"$CACHE/.lock" # one builder at a time; runs may then share the artefacts
flock 9

# A cached artefact carries its key in .stamp-NAME; another key rebuilds it.
fresh() { [[ -f .stamp-$1 && $(cat ".stamp-$1") == "$2" ]]; }
SELF=$(sha256sum < "$SCRIPT" | cut -c1-16) # the guest's init is written by this script
KEY_KERNEL=$KPKG
KEY_ROOTFS="$SUITE $GUEST_PKGS"
KEY_IMAGE="$SELF $KEY_KERNEL $KEY_ROOTFS"

# ---- kernel: Debian's package, unpacked (never installed on the host) ------------------------
if ! fresh kernel "$KEY_KERNEL"; then
  rm -f .stamp-siw .stamp-image vmlinux initrd.cpio
  log "downloading Debian's kernel ($KPKG)"
  "${APT[@]}" update
  real=$(apt-cache depends "$KPKG" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [[ -n $real ]] || real=$KPKG
  rm -rf debs kernel && mkdir -p debs
  (cd debs && apt_download "$real")
  dpkg -x debs/"$real"_*.deb kernel
  echo "$KEY_KERNEL" > .stamp-kernel
fi
KV=$(ls kernel/lib/modules | head -n1)
VMLINUZ=kernel/boot/vmlinuz-$KV
[[ -f $VMLINUZ ]] || die "no kernel image in $CACHE/kernel/boot"
KVER_PKG=$(dpkg-deb -f debs/linux-image-"$KV"*.deb Version 2>/dev/null || true)
KSERIES=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$KV")
[[ -f kernel/lib/modules/$KV/modules.dep ]] || depmod -b kernel "$KV"

# Uncompressed ELF vmlinux (the kernel's scripts/extract-vmlinux trick: find the xz or zstd
# magic inside the bzImage and decompress from there), booted through the PVH entry point.
if [[ ! -f vmlinux ]]; then
  log "extracting vmlinux for a PVH boot"
  try_decompress() { # MAGIC(tr-escaped) PLACEHOLDER DECOMPRESSOR
    local pos
    for pos in $(LC_ALL=C tr "$1\n$2" "\n$2=" < "$VMLINUZ" | LC_ALL=C grep -abo "^$2" | cut -d: -f1); do
      tail -c+"$pos" "$VMLINUZ" | $3 > vmlinux.tmp 2>/dev/null || true
      if [[ $(head -c4 vmlinux.tmp | od -An -c | tr -d ' ') == '177ELF' ]]; then
        mv vmlinux.tmp vmlinux; return 0
      fi
    done
    return 1
  }
  try_decompress '\3757zXZ\000' abcde 'xz -dc' || try_decompress '(\265/\375' xxx 'zstd -dc' || true
  rm -f vmlinux.tmp
  [[ -f vmlinux ]] || log "warning: no vmlinux extracted; booting the bzImage (slower)"
fi

# ---- siw.ko, out of tree (CONFIG_RDMA_SIW is not set in Debian's kernels) --------------------
# PACKAGE=VERSION to download: the kernel's own package version where the archive still has it,
# else the newest of the same upstream release (the archive drops a build package's older
# Debian revisions before the kernel's: linux-kbuild-6.1 was 6.1.192-3 only beside
# linux-image 6.1.192-2).  kbuild is host tools and source the same upstream code; the
# module's version magic comes from the headers, which match the kernel exactly.
same_release() {
  local pkg=$1 v
  if apt-cache madison "$pkg" | awk -v v="$KVER_PKG" '$3 == v {f=1} END {exit !f}'; then
    echo "$pkg=$KVER_PKG"; return
  fi
  v=$(apt-cache madison "$pkg" | awk -v u="${KVER_PKG%-*}-" 'index($3, u) == 1 {print $3; exit}')
  [[ -n $v ]] || { echo "no $pkg of release ${KVER_PKG%-*} in the archive" >&2; return 1; }
  echo "$pkg=$v"
}
build_siw() {
  rm -rf siw && mkdir -p siw/debs
  local hdr=linux-headers-$KV common kbuild kbuild_at source_at
  common=$(apt-cache depends "$hdr=$KVER_PKG" | awk '/Depends: linux-headers-.*-common/{print $2; exit}')
  kbuild=$(apt-cache depends "$hdr=$KVER_PKG" | awk '/Depends: linux-kbuild-/{print $2; exit}')
  kbuild_at=$(same_release "$kbuild")
  source_at=$(same_release "linux-source-$KSERIES")
  (cd siw/debs && apt_download "$hdr=$KVER_PKG" "$common=$KVER_PKG" "$kbuild_at" "$source_at")
  for d in siw/debs/linux-headers-*.deb siw/debs/linux-kbuild-*.deb; do dpkg -x "$d" siw/root; done
  # the headers' Makefile includes the -common tree by absolute path
  sed -i "s|^include /usr/src/|include $CACHE/siw/root/usr/src/|" siw/root/usr/src/"$hdr"/Makefile
  dpkg-deb --fsys-tarfile siw/debs/linux-source-*.deb |
    tar -xO ./usr/src/linux-source-"$KSERIES".tar.xz |
    tar -xJ -C siw linux-source-"$KSERIES"/drivers/infiniband/sw/siw
  mv siw/linux-source-"$KSERIES"/drivers/infiniband/sw/siw siw/src
  # no BTF for an out-of-tree module (it would need pahole)
  make -s -C siw/root/usr/src/"$hdr" M="$CACHE/siw/src" CONFIG_RDMA_SIW=m \
       CONFIG_DEBUG_INFO_BTF_MODULES= -j"$(nproc)" modules >&2
  strip --strip-debug -o siw/siw.ko siw/src/siw.ko
  rm -rf siw/root siw/debs siw/linux-source-"$KSERIES"
}
if ! fresh siw "$KEY_KERNEL"; then
  if grep -q '^CONFIG_RDMA_SIW=' kernel/boot/config-"$KV"; then
    log "the kernel ships siw itself"
  else
    log "building siw.ko from linux-source-$KSERIES $KVER_PKG"
    set +e; (set -e; build_siw); st=$?; set -e
    ((st == 0)) || log "WARNING: building siw.ko failed ($st): the guest will have no siw0"
  fi
  # Only a build that worked is kept: a failed one (the archive, a compiler) is tried again.
  if [[ -f siw/siw.ko ]] || grep -q '^CONFIG_RDMA_SIW=' kernel/boot/config-"$KV"; then
    echo "$KEY_KERNEL" > .stamp-siw
  fi
fi

# ---- root file system -----------------------------------------------------------------------
if ! fresh rootfs "$KEY_ROOTFS"; then
  MIRROR=$(apt_mirror "$SUITE"); [[ -n $MIRROR ]] || MIRROR=$(apt_mirror stable)
  [[ -n $MIRROR ]] || die "no apt source for $SUITE in /etc/apt"
  log "debootstrap $SUITE minbase + $GUEST_PKGS"
  rm -rf rootfs
  debootstrap --variant=minbase --include="$GUEST_PKGS" "$SUITE" rootfs "$MIRROR" \
    > debootstrap.log 2>&1 || { tail -20 debootstrap.log >&2; die "debootstrap failed"; }
  echo "$KEY_ROOTFS" > .stamp-rootfs
fi

# PID 1 after switch_root: mounts, the 9p share, the RDMA devices, then the command.
write_guest_init() {
cat > "$1" <<'GUEST_INIT'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc 2>/dev/null; mount -t sysfs sysfs /sys 2>/dev/null
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd # bash process substitution
mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /tmp
echo ndkvm > /proc/sys/kernel/hostname; ip link set lo up
log() { echo "NDKVM: $* [t=$(cut -d' ' -f1 /proc/uptime)s]" > /dev/ttyS0; }
finish() { log "done"; sync; echo "NDKVM_EXIT_CODE=$1" > /dev/ttyS0; echo o > /proc/sysrq-trigger; sleep 60; }
modprobe qemu_fw_cfg
FW=/sys/firmware/qemu_fw_cfg/by_name/opt/ndkvm
mkdir -p /run/ndkvm
cat $FW/cmd/raw > /run/ndkvm/cmd.sh || { log "no command"; finish 125; }
cat $FW/env/raw > /run/ndkvm/env
set -a; . /run/ndkvm/env; set +a
modprobe -a 9pnet_virtio 9p
mkdir -p "$NDK_VM_SHARE"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "$NDK_VM_SHARE" || { log "9p mount failed"; finish 125; }
modprobe -a ib_uverbs rdma_ucm dummy rdma_rxe siw 2>/dev/null
modprobe -a ib_uverbs rdma_ucm dummy rdma_rxe
for dev in rxe siw; do
  case $dev in rxe) name=rxe0 net=rxe_net ip=192.168.77.1 var=NDK_VM_RXE_IP ;;
               siw) name=siw0 net=siw_net ip=192.168.78.1 var=NDK_VM_SIW_IP ;; esac
  if ip link add $net type dummy && ip addr add $ip/24 dev $net && ip link set $net up &&
     rdma link add $name type $dev netdev $net; then
    export $var=$ip
  else
    log "setting up $name failed"
  fi
done
ulimit -l unlimited
stty -F /dev/ttyS1 raw -echo 2>/dev/null
log "running the command"
cd "$NDK_VM_SHARE"
bash /run/ndkvm/cmd.sh < /dev/null > /dev/ttyS1 2>&1
rc=$?
stty -F /dev/ttyS1 raw -echo 2>/dev/null # TCSADRAIN: all output has left the UART
finish $rc
GUEST_INIT
chmod 755 "$1"
}

# The kernel modules the guest needs (~17 MB of the package's modules); configfs: rdma_cm.
MODDIRS="kernel/drivers/infiniband/core kernel/drivers/infiniband/sw kernel/crypto kernel/arch/x86/crypto
 kernel/lib kernel/net/ipv4 kernel/net/ipv6 kernel/net/9p kernel/net/core kernel/fs/9p kernel/fs/netfs
 kernel/fs/fscache kernel/fs/configfs kernel/drivers/virtio kernel/drivers/net/dummy.ko
 kernel/drivers/firmware/qemu_fw_cfg.ko kernel/drivers/net/virtio_net.ko
 kernel/drivers/net/net_failover.ko"

if [[ ! -f rootfs.img ]] || ! fresh image "$KEY_IMAGE"; then
  log "assembling the root image"
  rm -rf stage && cp -a rootfs stage
  rm -rf stage/var/cache/apt/* stage/var/lib/apt/lists/* stage/usr/share/doc stage/usr/share/man \
         stage/usr/share/info stage/usr/share/locale/*
  m=stage/lib/modules/$KV && mkdir -p "$m"
  for f in modules.order modules.builtin modules.builtin.modinfo; do cp "kernel/lib/modules/$KV/$f" "$m/"; done
  for p in $MODDIRS; do
    for q in kernel/lib/modules/$KV/$p kernel/lib/modules/$KV/$p.xz kernel/lib/modules/$KV/$p.zst; do
      [[ -e $q ]] || continue
      mkdir -p "$m/$(dirname "$p")" && cp -a "$q" "$m/$(dirname "$p")/"
    done
  done
  if [[ -f siw/siw.ko ]]; then mkdir -p "$m/updates" && cp siw/siw.ko "$m/updates/"; fi
  depmod -b stage "$KV"
  write_guest_init stage/sbin/ndkvm-init
  size_mb=$(($(du -sm stage | cut -f1) * 12 / 10 + 64))
  rm -f rootfs.img
  mkfs.ext4 -q -F -O ^has_journal -L ndkvmroot -d stage rootfs.img "${size_mb}M" >/dev/null
  rm -rf stage
  echo "$KEY_IMAGE" > .stamp-image
fi

# Boot initramfs: static busybox and the modules that reach the ext4 root on virtio-blk.
if [[ ! -f initrd.cpio || initrd.cpio -ot .stamp-image ]]; then
  log "building the boot initramfs"
  rm -rf initramfs && mkdir -p initramfs/bin initramfs/mods debs
  rm -f debs/busybox-static_*.deb && (cd debs && apt_download busybox-static)
  dpkg -x debs/busybox-static_*.deb initramfs/bbpkg
  cp initramfs/bbpkg/bin/busybox initramfs/bin/busybox && rm -rf initramfs/bbpkg
  n=0
  for mod in virtio_pci virtio_blk crc32c_generic ext4; do
    modprobe -d kernel -S "$KV" --show-depends "$mod" | awk '$1=="insmod"{print $2}'
  done | awk '!seen[$0]++' | while read -r f; do
    n=$((n + 1)); b=$(printf '%02d-%s' "$n" "$(basename "$f")")
    case $f in *.xz) xz -dc "$f" > "initramfs/mods/${b%.xz}" ;; *.zst) zstd -qdc "$f" > "initramfs/mods/${b%.zst}" ;;
               *) cp "$f" "initramfs/mods/$b" ;; esac
  done
  cat > initramfs/init <<'MINI_INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in /mods/*.ko; do insmod "$m" 2>/dev/null; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
mount -t ext4 /dev/vda /newroot || { echo "NDKVM_EXIT_CODE=125"; echo o > /proc/sysrq-trigger; sleep 60; }
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/ndkvm-init
MINI_INIT
  chmod 755 initramfs/init
  (cd initramfs && find . -print0 | cpio --null -o -H newc --quiet) > initrd.cpio
fi

if ((BUILD_ONLY)); then log "artefacts ready in $CACHE"; exit 0; fi
flock -u 9

# ---- run ------------------------------------------------------------------------------------
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
if (($# == 1)); then printf '%s\n' "$1" > "$RUN/cmd.sh"; else printf '%q ' "$@" > "$RUN/cmd.sh"; echo >> "$RUN/cmd.sh"; fi
{
  printf 'NDK_VM_SHARE=%q\n' "$ROOT"
  printf 'NDK_VM=guest\n'
  # CI and the project's own settings follow the command into the guest
  for v in CI $(compgen -v NDK_ | grep -v '^NDK_VM') $(tr , " " <<<"${NDK_VM_PASS:-}"); do
    if [[ -n ${!v+x} ]]; then printf '%s=%q\n' "$v" "${!v}"; fi
  done
} > "$RUN/env"

if [[ $ACCEL == auto ]]; then
  # /dev/kvm alone is not enough: a para-virtual one (kvm_pvm) cannot run a stock kernel
  if [[ -r /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
fi
if [[ $ACCEL == kvm ]]; then ACCEL_ARGS=(-accel kvm -cpu host); else ACCEL_ARGS=(-accel tcg,thread=multi -cpu max); fi
read -ra EXTRA_ARGS <<<"${NDK_VM_QEMU_ARGS:-}"
KERNEL_IMG=$CACHE/$VMLINUZ; [[ -f $CACHE/vmlinux ]] && KERNEL_IMG=$CACHE/vmlinux

touch "$RUN/console.log"
log "booting (accel=$ACCEL, kernel $KV, $SMP vCPU, $MEM, share=$ROOT)"
set +e
# --foreground: QEMU stays in this script's process group, so that whoever stops the group
# (tests/all.sh, when a stage fails while the lane runs in the background) stops the guest too.
NICE=()
[[ -z ${NDK_VM_NICE:-} ]] || NICE=(nice -n "$NDK_VM_NICE")
# no_timer_check: under TCG on a loaded host the kernel's check that the IO-APIC timer ticks
# can miss its window and panic at boot ("IO-APIC + timer doesn't work", seen beside eight
# builds on the 2-core machine); the guest's clock is QEMU's own, nothing to check.
timeout --foreground -k 10 "$TIMEOUT" "${NICE[@]}" qemu-system-x86_64 -nodefaults -no-user-config -machine pc "${ACCEL_ARGS[@]}" \
  -smp "$SMP" -m "$MEM" -display none -no-reboot \
  -kernel "$KERNEL_IMG" -initrd "$CACHE/initrd.cpio" \
  -append "console=ttyS0 quiet panic=-1 mitigations=off no_timer_check rdinit=/init" \
  -drive "file=$CACHE/rootfs.img,if=virtio,format=raw,snapshot=on,cache=unsafe" \
  -fw_cfg "name=opt/ndkvm/cmd,file=$RUN/cmd.sh" -fw_cfg "name=opt/ndkvm/env,file=$RUN/env" \
  -virtfs "local,path=$ROOT,mount_tag=share,security_model=none,id=share" \
  -serial "file:$RUN/console.log" -chardev stdio,id=out,signal=off -serial chardev:out \
  "${EXTRA_ARGS[@]}" < /dev/null
qrc=$?
set -e
rc=$(sed -n 's/.*NDKVM_EXIT_CODE=\([0-9]*\).*/\1/p' "$RUN/console.log" | tail -n1)
if [[ ${NDK_VM_VERBOSE:-0} == 1 || -z $rc ]]; then
  echo "----- guest console -----" >&2; tr -d '\r' < "$RUN/console.log" | tail -n 100 >&2
fi
[[ -n $rc ]] || die "the guest reported no exit code (qemu $qrc; 124 = timeout after ${TIMEOUT}s)"
grep -o 'NDKVM: .*' "$RUN/console.log" | tr -d '\r' | sed 's/^/  /' >&2 || true
log "guest command exited $rc"
exit "$rc"
