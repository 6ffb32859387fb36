#!/usr/bin/env bash
# The fuzzers (docs/testing.md): configure and build build-fuzz/ (clang, libFuzzer, ASan +
# UBSan) when needed, run fuzz_dispatch for SECONDS (default 120) over a copy of the
# checked-in corpus (tests/fuzz/corpus/dispatch), print executions, execs/s, run time and the
# coverage reached, and exit non-zero on any crash, sanitizer report, provider violation, leak
# or timeout.  Then the iWARP codec's fuzzer, fuzz_iwarp, for NDK_FUZZ_IWARP_SECONDS (default
# 30; 0 skips it) over a copy of tests/fuzz/corpus-iwarp (docs/iwarp.md).  Then the soft
# provider's tcp receive path, fuzz_tcp_receive, for NDK_FUZZ_TCP_SECONDS (default 45; 0
# skips it) over a copy of tests/fuzz/corpus-tcp-receive.
#
#   tests/fuzz/run.sh [SECONDS]     NDK_FUZZ_DIR=build-fuzz  NDK_FUZZ_JOBS=$(nproc)
#                                   NDK_FUZZ_SEED=1 (process k: seed 1+k)  NDK_FUZZ_ARGS="..."
#                                   NDK_FUZZ_IWARP_SECONDS=30  NDK_FUZZ_TCP_SECONDS=45
#   tests/fuzz/run.sh --install-only   install clang and libFuzzer if missing, nothing else
#   tests/fuzz/run.sh --build-only     that, and configure and build build-fuzz/ (tests/all.sh
#                                      builds it beside the other trees, fuzzes later)
#
# A finding leaves its input as build-fuzz/fuzz-artifacts/crash-* (or timeout-*, leak-*):
# reproduce it with build-fuzz/bin/fuzz_dispatch FILE (NDK_FUZZ_TRACE=1 prints each call).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=fuzz
case ${1:-} in
  --install-only) mode=install; shift ;;
  --build-only) mode=build; shift ;;
esac
seconds=${1:-120}
dir=${NDK_FUZZ_DIR:-build-fuzz}

# clang brings libFuzzer (libclang-rt-14-dev); installed here, not in tests/setup.sh, so that
# a normal set-up does not pull in the compiler.
if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null |
    grep -q "install ok installed"; then
  echo "fuzz: installing clang"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
[[ $mode != install ]] || exit 0
if [[ ! -f $dir/build.ninja ]]; then
  # Not the verbs provider: the fuzzers open soft adapters only, and without pkg-config's
  # libibverbs and librdmacm the tree leaves it out (CMakeLists.txt).  NDK_DEBUG_INFO=lines
  # (tests/setup.sh): line tables only, enough for the reports' file:line.
  debug=-g
  [[ ${NDK_DEBUG_INFO:-full} != lines ]] || debug=-gline-tables-only
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 $debug -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $debug -DNDEBUG" \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON \
    -DNDK_FUZZ=ON -DNDK_SANITIZE=address,undefined >/dev/null
fi
iwarp_seconds=${NDK_FUZZ_IWARP_SECONDS:-30}
targets=(fuzz_dispatch)
[[ $iwarp_seconds == 0 ]] || targets+=(fuzz_iwarp)
tcp_seconds=${NDK_FUZZ_TCP_SECONDS:-45}
[[ $tcp_seconds == 0 ]] || targets+=(fuzz_tcp_receive)
cmake --build "$dir" --target "${targets[@]}"
[[ $mode != build ]] || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r tests/fuzz/corpus/dispatch "$work/corpus"
artifacts="$dir/fuzz-artifacts"
mkdir -p "$artifacts"
jobs=${NDK_FUZZ_JOBS:-$(nproc)}
echo "== fuzz_dispatch for ${seconds} s x ${jobs} processes (corpus: $(ls tests/fuzz/corpus/dispatch | wc -l) seeds)"
start=$SECONDS
# One fuzzing process per core, each pinned to its core (taskset) and sharing the corpus
# directory, as libFuzzer's -jobs does: pinned, an input's engine thread wakes on the core of
# the thread that waits for it, which doubled the executions per second of two unpinned
# processes (-fork=2: 2,286/s; pinned: 4,253/s; docs/testing.md).
# -max_len bounds the calls of one input; -timeout catches a hang (every wait in the target is
# bounded, so an input that runs 10 s is stuck); leaks are detected (-detect_leaks=1 is the
# default with ASan): every input closes its adapters.  -entropic=0 turns off the entropic
# schedule, whose feature bookkeeping took a third of the CPU (perf; +32% executions).  Each
# process has its own fixed -seed, so that a CI run is as repeatable as threads allow.
pids=()
for ((job = 0; job < jobs; ++job)); do
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=malloc_context_size=8 \
    taskset -c "$((job % $(nproc)))" "$dir/bin/fuzz_dispatch" -max_total_time="$seconds" \
    -max_len=160 -timeout=10 -rss_limit_mb=4096 -entropic=0 \
    -seed="$((${NDK_FUZZ_SEED:-1} + job))" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    ${NDK_FUZZ_ARGS:-} "$work/corpus" >"$work/fuzz-$job.log" 2>&1 &
  pids+=($!)
done
status=0 failed_log=
for ((job = 0; job < jobs; ++job)); do
  if ! wait "${pids[job]}"; then
    status=1
    failed_log=$work/fuzz-$job.log
  fi
done
elapsed=$((SECONDS - start))
execs=0
for ((job = 0; job < jobs; ++job)); do
  log=$work/fuzz-$job.log
  grep -E '^(==[0-9]+==|SUMMARY|fuzz_dispatch:|#[0-9]+ +DONE)' "$log" | tail -20 || true
  n=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  execs=$((execs + ${n:-0}))
done
echo "fuzz: ${execs} executions, $((execs / (elapsed > 0 ? elapsed : 1))) execs/s, ${elapsed} s" \
  "(${jobs} processes)"
if ((status != 0)); then
  tail -60 "$failed_log"
  echo "fuzz: FAILED (exit $status); reproduce with $dir/bin/fuzz_dispatch $(ls -t "$artifacts" | head -1 | sed "s|^|$artifacts/|")"
  exit 1
fi

# One fuzz target in one process over a copy of its checked-in corpus, the streams up to
# 4 KiB, the same oracle: any finding fails the run.
#   run_one TARGET SECONDS CORPUS REPRODUCE-PREFIX RSS-MB [LIBFUZZER-ARGS...]
run_one() {
  local target=$1 seconds=$2 corpus=$3 reproduce=$4 rss=$5
  shift 5
  cp -r "tests/fuzz/$corpus" "$work/$corpus"
  echo "== $target for ${seconds} s (corpus: $(ls "tests/fuzz/$corpus" | wc -l) seeds)"
  local start=$SECONDS log=$work/$target.log status=0
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=malloc_context_size=8 \
    "$dir/bin/$target" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb="$rss" "$@" \
    -seed="${NDK_FUZZ_SEED:-1}" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$work/$corpus" >"$log" 2>&1 || status=$?
  local elapsed=$((SECONDS - start))
  local execs
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  echo "$target: ${execs:-0} executions, $((${execs:-0} / (elapsed > 0 ? elapsed : 1))) execs/s, ${elapsed} s"
  if ((status != 0)); then
    tail -60 "$log"
    echo "$target: FAILED (exit $status); reproduce with $reproduce$dir/bin/$target $(ls -t "$artifacts" | head -1 | sed "s|^|$artifacts/|")"
    exit 1
  fi
}

# fuzz_iwarp: the codec is pure computation, no threads to pin.
[[ $iwarp_seconds == 0 ]] || run_one fuzz_iwarp "$iwarp_seconds" corpus-iwarp "" 2048

# fuzz_tcp_receive: a soft adapter with transport=tcp on 127.0.0.9 and one TCP connection per
# input from the target's own thread, -entropic=0 as for fuzz_dispatch; a hang (each wait in
# the target is bounded by 5 s) or a socket left open fails the run too.
[[ $tcp_seconds == 0 ]] ||
  run_one fuzz_tcp_receive "$tcp_seconds" corpus-tcp-receive "NDK_FUZZ_TRACE=1 " 4096 -entropic=0
