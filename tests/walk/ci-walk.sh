#!/usr/bin/env bash
# tests/walk/ci-walk.sh [BUILD_DIR [PYTHON_BUILD_DIR]] - the CI run of the random walker
# (docs/walk.md): `ndk walk --provider soft` on BUILD_DIR's ndk_walk (CI: build-asan, ASan +
# UBSan), seed 1 on one thread, then seed 2 on two threads: fixed seeds, so that a CI run is
# repeatable (NDK_WALK_SEED=random draws one, printed for reproduction, for exploring).
# The driver is the ndk package of PYTHON_BUILD_DIR (default build/: the interpreter is not
# built with the sanitizers; the walk runs in the helper).  Fails on a violation, a data
# mismatch, a lost completion, a hang, a crash or a sanitizer report; a failure leaves its
# traces and the shrunk pytest scenario in BUILD_DIR/walk-results.
#
#   NDK_WALK_OPS=1000000        operations of the fixed-seed run (the budget: docs/walk.md)
#   NDK_WALK_RANDOM_OPS=250000  operations per thread of the random-seed run (2 threads)
#   NDK_WALK_SEED=N|random      the two-thread run's seed (default: 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-asan}
python_build=${2:-build}
[[ $build == /* ]] || build=$PWD/$build
[[ $python_build == /* ]] || python_build=$PWD/$python_build
out=$build/walk-results
mkdir -p "$out"
export PYTHONPATH=$python_build/python PYTHONDONTWRITEBYTECODE=1 NDK_WALK=$build/bin/ndk_walk
# Sanitizer reports end the walking child (-fno-sanitize-recover): the walker reports a crash.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
random_seed=${NDK_WALK_SEED:-2}
[[ $random_seed != random ]] || random_seed=$(( (RANDOM << 15 | RANDOM) + 1 ))
rc=0
for run in "1 ${NDK_WALK_OPS:-1000000} 1" "$random_seed ${NDK_WALK_RANDOM_OPS:-250000} 2"; do
  read -r seed ops threads <<<"$run"
  echo "ndk walk: seed $seed, $ops operations x $threads thread(s) (reproduce: ndk walk" \
       "--provider soft --seed $seed --ops $ops --threads $threads)"
  start=$SECONDS
  /usr/bin/python3 -m ndk walk --provider soft --seed "$seed" --ops "$ops" --threads "$threads" \
    --seconds 100000 --out "$out" --shrink-seconds 120 || rc=1
  echo "ndk walk: seed $seed took $((SECONDS - start)) s"
done
exit $rc
