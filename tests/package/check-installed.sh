#!/usr/bin/env bash
# Does the installed ndk package work as a Python package, from a folder outside the repository?
#
#   tests/package/check-installed.sh          the system's installation (the .deb that
#                                             tests/setup.sh installs); what CI checks
#   tests/package/check-installed.sh ROOT     an installation staged under ROOT
#                                             (DESTDIR=ROOT cmake --install build --prefix /usr),
#                                             as the CTest test package_install does
#
# Checks, with no PYTHONPATH into the source or build tree: `import ndk` and its version against
# the distribution's metadata; a user's own pytest file using the plugin's `adapter` fixture,
# loaded through the pytest11 entry point (no conftest, no -p); installed scenario files copied
# into an empty folder, run there (copied-scenarios.sh) and, with python3-mypy, checked by
# `mypy --strict` with the README's Python snippets, as a user's code; `ndk conformance` on the
# installed scenarios; the installed expectations files; `ndk info`; `ndk --version`; the manual
# pages of ndk, ndk_perf and ndk_walk (man renders each, its NAME line names the program); the
# bash completion of `ndk conf` (the installed completion script, driven in bash as readline
# would, offers `conformance`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-}
python=/usr/bin/python3
unset PYTHONPATH NDK_SCENARIOS
if [[ -n $root ]]; then
  root=$(cd "$root" && pwd)
  export PYTHONPATH=$root/usr/lib/python3/dist-packages
  export PATH=$root/usr/bin:$PATH
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export PYTHONDONTWRITEBYTECODE=1

echo "== import ndk (from $work)"
$python - "$root" <<'PY'
import importlib.metadata, sys
from pathlib import Path
import ndk
root = sys.argv[1]
where = Path(ndk.__file__).resolve()
expected = Path(root or "/", "usr/lib/python3/dist-packages/ndk").resolve()
assert where.parent == expected, f"ndk imported from {where}, not from {expected}"
dist = importlib.metadata.version("ndk-harness")
assert ndk.__version__ == dist, (ndk.__version__, dist)
plugins = {e.name: e.value for e in importlib.metadata.entry_points(group="pytest11")}
assert plugins.get("ndk.testing") == "ndk.testing", plugins
print(f"ndk {ndk.__version__} from {where.parent}; pytest11 entry point ndk.testing")
PY

echo "== the installed expectations files, found by provider name"
$python - "$root" <<'PY'
import sys
from pathlib import Path
from ndk import expectations
root = sys.argv[1]
folder = expectations.expectations_dir()
assert folder == Path(root or "/", "usr/share/ndk-harness/expectations").resolve(), folder
files = expectations.default_files(["verbs:rxe0", "/x/libndk_loop_provider.so", "soft"])
assert [path.name for path in files] == ["verbs.toml", "loop.toml"], files
loaded = expectations.load_all(files)
assert loaded.lookup("verbs:siw0", "MW-CREATE").action == "skip"
print(f"{len(loaded.entries)} entries in {', '.join(path.name for path in files)} ({folder})")
PY

echo "== pytest --ndk-provider soft test_mine.py (no conftest)"
cat > test_mine.py <<'PY'
import ndk
from ndk import Status


def test_create_cq_through_the_adapter_fixture(adapter: ndk.Adapter) -> None:
    call = adapter.create_cq(cq_depth=16)
    assert call.status in (Status.SUCCESS, Status.PENDING)
    cq = call.get(timeout=5.0)
    assert isinstance(cq, ndk.Cq)
    assert adapter.create_cq(cq_depth=0xFFFFFFFF).status == Status.INVALID_PARAMETER
PY
out=$($python -m pytest -q -p no:cacheprovider --ndk-provider soft test_mine.py 2>&1) || {
  echo "$out"; exit 1; }
echo "$out" | tail -1
grep -Eq '^1 passed' <<<"$(echo "$out" | tail -1)" || { echo "$out"; exit 1; }

scenarios=$root/usr/share/ndk-harness/scenarios
echo "== installed scenarios copied into an empty folder"
# Their summary line, or everything pytest said when one fails (which one, and why).
out=$(bash "$here/copied-scenarios.sh" "$scenarios" -rfE 2>&1) || { echo "$out"; exit 1; }
echo "$out" | tail -1

if $python -c "import mypy" 2>/dev/null; then
  echo "== mypy --strict on a copied scenario and the README's snippets (no config)"
  mkdir typed
  cp "$scenarios/test_memory_access.py" "$scenarios/test_oid.py" typed/
  $python "$here/../typing/readme_snippets.py" "$here/../../README.md" typed >/dev/null
  (cd typed && $python -m mypy --strict --no-error-summary --cache-dir=/dev/null *.py)
fi

echo "== ndk conformance (installed scenarios), its HTML report"
out=$(ndk conformance -k test_create_cq --html report.html 2>&1) || { echo "$out"; exit 1; }
echo "$out" | tail -3
# The report links each rule to the installed scenario file and quotes the docs/semantics.md
# entry a reference choice cites, from the copy installed beside the scenarios.
scenarios_real=$(realpath "$scenarios")
grep -q "href=\"file://$scenarios_real/test_cq.py\"" report.html || {
  echo "the report does not link the installed $scenarios_real/test_cq.py"; exit 1; }
grep -q '<tr id="semantics-ZERO-DEPTH"><td>ZERO-DEPTH</td><td class="ids">[^<]*</td><td><code>CqDepth' \
  report.html || { echo "the report does not quote the installed docs/semantics.md"; exit 1; }
echo "== ndk info"
ndk info --provider soft >/dev/null

echo "== ndk --version"
version=$($python -c 'import importlib.metadata as m; print(m.version("ndk-harness"))')
out=$(ndk --version)
[[ $out == "ndk $version" ]] || { echo "ndk --version printed '$out', not 'ndk $version'"; exit 1; }
echo "$out"

echo "== man ndk, man ndk_perf, man ndk_walk"
for program in ndk ndk_perf ndk_walk; do
  if [[ -n $root ]]; then
    page=(-l "$root/usr/share/man/man1/$program.1.gz")
  else
    page=("$program")
  fi
  # 120 columns, the width at which lintian checks the pages; groff's warnings fail the check
  text=$(MANWIDTH=120 man "${page[@]}" 2>"$work/man.err") || {
    cat "$work/man.err"; echo "man $program failed"; exit 1; }
  [[ ! -s $work/man.err ]] || { cat "$work/man.err"; echo "man $program: warnings"; exit 1; }
  name=$(sed -n '/^NAME$/{n;p;q}' <<<"$text")
  [[ $name =~ ^\ +$program\ +-\ +.+ ]] || {
    echo "$text" | head -20; echo "man $program: no 'NAME: $program - ...' line"; exit 1; }
  echo "$name" | sed 's/^ *//'
done

echo "== bash completion: ndk conf<TAB>"
completion=$root/usr/share/bash-completion/completions/ndk
[[ -f $completion ]] || { echo "no $completion"; exit 1; }
# The function the script registers for ndk (`complete -p ndk`), called as readline calls it
# for the line "ndk conf" with the cursor at its end.
offered=$(bash -c 'source "$1" || exit 1
  function=$(complete -p ndk | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
  [[ -n $function ]] || { echo "the script registers no completion function for ndk" >&2; exit 1; }
  COMP_LINE="ndk conf" COMP_POINT=8 COMP_WORDS=(ndk conf) COMP_CWORD=1 COMP_TYPE=9
  "$function" ndk conf ndk
  printf "%s\n" "${COMPREPLY[@]}"' completion "$completion")
[[ $(echo $offered) == conformance ]] || {
  echo "ndk conf<TAB> offered '$offered', not 'conformance'"; exit 1; }
echo "ndk conf<TAB> -> $offered"
echo "package check: ok"
