#!/usr/bin/env bash
# Can a provider team outside this tree build a provider on the installed SDK, and judge it?
#
#   tests/package/check-sdk.sh --deb BUILD   the .deb files CPack makes of the build tree BUILD,
#                                            extracted with dpkg-deb -x (CTest package_sdk)
#   tests/package/check-sdk.sh ROOT          the package extracted or installed under ROOT;
#                                            "/" for the system's installation
#
# From folders outside the repository and with nothing of the repository on any path:
#   1. every installed header compiles alone (the C ones as C11 and C++20, the rest as C++20),
#      its include path from `pkg-config --cflags ndk-harness` (ndk-harness-kit for the kit's);
#   2. a program linked with `pkg-config --libs ndk-harness-kit` runs (the kit's status names);
#   3. the template provider (ROOT/usr/share/ndk-harness/examples/provider-template) is copied
#      to a temporary folder and built with find_package(NdkHarness CONFIG) from ROOT only:
#      the compile commands name no file of the repository;
#   4. the installed `ndk` loads it by path and opens an adapter on it (`ndk info`);
#   5. `ndk conformance --provider TMP/build/libndk_template_provider.so --expectations
#      TMP/expectations.toml -n 2 --timeout 120` runs the installed scenarios on it with the
#      installed ndk package and the template's own expectations file: it must exit 0 (no
#      failure, crash or timeout); its closing lines are printed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: check-sdk.sh --deb BUILD | ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ ${1:-} == --deb ]]; then
  build=$(cd "${2:?$usage}" && pwd)
  (cd "$build" && cpack -G DEB -B "$work/deb" >/dev/null)
  for deb in "$work"/deb/*.deb; do
    dpkg-deb -x "$deb" "$work/root"
    echo "extracted $(basename "$deb")"
  done
  root=$work/root
else
  root=$(cd "${1:?$usage}" && pwd)
fi
usr=${root%/}/usr
unset PYTHONPATH NDK_SCENARIOS PKG_CONFIG_PATH CMAKE_PREFIX_PATH
if [[ $root != / ]]; then
  export PYTHONPATH=$usr/lib/python3/dist-packages
  export PATH=$usr/bin:$PATH
fi
arch=$(gcc -print-multiarch)
export PKG_CONFIG_PATH=$usr/lib/$arch/pkgconfig
[[ -f $PKG_CONFIG_PATH/ndk-harness.pc ]] || {
  echo "check-sdk: $PKG_CONFIG_PATH/ndk-harness.pc is not there: the package has no SDK" >&2
  exit 1; }
cd "$work"
export PYTHONDONTWRITEBYTECODE=1

# No path into the repository may reach a compiler: only the package's own.
no_repository_path() {
  if grep -F -- "$repo/" "$@"; then
    echo "check-sdk: the build above reached into the repository ($repo)" >&2
    exit 1
  fi
}

echo "== every installed header compiles alone (pkg-config --cflags)"
cflags=$(pkg-config --cflags ndk-harness)
kit_cflags=$(pkg-config --cflags ndk-harness-kit)
include=$usr/include/ndk-harness
read -r given <<<"${cflags#-I}"     # one -I, without pkg-config's trailing space
given=$(realpath -m "$given")
[[ $given == "$include" ]] || {
  echo "check-sdk: pkg-config gives '$cflags', not -I$include" >&2; exit 1; }
count=0
while IFS= read -r -d '' header; do
  rel=${header#"$include"/}
  echo "#include <$rel>" > one.cpp
  # shellcheck disable=SC2086  # pkg-config's flags are words
  c++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -fsyntax-only $kit_cflags one.cpp
  if [[ $rel == *.h ]]; then
    echo "#include <$rel>" > one.c
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only $cflags one.c
  fi
  count=$((count + 1))
done < <(find "$include" -type f -print0 | sort -z)
echo "$count headers"

echo "== a program linked with pkg-config --libs ndk-harness-kit"
cat > status_name.cpp <<'CPP'
#include <ndk/status.hpp>
#include <providers/kit/kit_provider_entry.hpp>
#include <cstdio>

int main()
{
    NDK_VERSION granted{};
    NDIS_STATUS s = ndk::kit::negotiate_version(NDK_VERSION{2, 0}, ndk::kit::implemented_minor(2),
                                                granted);
    std::printf("%s %s %u.%u\n", ndk::status_name(STATUS_PENDING).c_str(),
                ndk::status_name(s).c_str(), granted.Major, granted.Minor);
}
CPP
# shellcheck disable=SC2046
c++ -std=c++20 -Wall -Werror status_name.cpp $(pkg-config --cflags --libs ndk-harness-kit) \
  -o status_name
out=$(./status_name)
[[ $out == "STATUS_PENDING STATUS_SUCCESS 2.1" ]] || {
  echo "check-sdk: the kit program printed '$out'" >&2; exit 1; }
echo "$out"

echo "== the template provider, copied out of the package and built with find_package(NdkHarness)"
template=$usr/share/ndk-harness/examples/provider-template
cp -r "$template" provider
cmake -S provider -B provider/build -G Ninja -DCMAKE_PREFIX_PATH="$usr" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >cmake.log
found=$(sed -n 's/^NdkHarness_DIR:PATH=//p' provider/build/CMakeCache.txt)
[[ $found == "$usr/"* ]] || {
  echo "check-sdk: find_package(NdkHarness) found '$found', not the package under $usr" >&2
  exit 1; }
cmake --build provider/build >build.log || { cat build.log; exit 1; }
no_repository_path provider/build/compile_commands.json provider/build/build.ninja
library=$work/provider/build/libndk_template_provider.so
nm -D --defined-only "$library" | grep -w NdkHarnessGetProvider
echo "built $library against $found"

echo "== ndk info --provider $library (the installed ndk)"
ndk info --provider "$library" >info.txt
head -3 info.txt

echo "== ndk conformance --provider $library --expectations provider/expectations.toml"
if ndk conformance --provider "$library" --expectations provider/expectations.toml -n 2 \
    --timeout 120 >conformance.log 2>&1; then
  tail -4 conformance.log
else
  rc=$?
  cat conformance.log
  echo "check-sdk: ndk conformance on the template exited $rc" >&2
  exit 1
fi
echo "sdk check: ok"
