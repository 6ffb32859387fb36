"""mypy --strict (mypy.ini) on the README's Python snippets, and with --scenarios on the
scenarios too, each copied into a temporary folder as a user would (they import nothing from
beside them: their helpers are the package's ndk.scenario).

    python3 tests/typing/check_types.py [--scenarios] [--cache-dir DIR] [mypy arguments]

Run from anywhere; paths are the repository's.  The package is found through mypy.ini's
mypy_path (python/, with the hand-kept stub python/ndk/_core.pyi), so no build is needed.
CTest runs it as typing_mypy (tests/CMakeLists.txt).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readme_snippets import write_snippets  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    scenarios = sorted((ROOT / "scenarios").glob("*.py")) if "--scenarios" in argv else []
    argv = [arg for arg in argv if arg != "--scenarios"]
    with tempfile.TemporaryDirectory(prefix="ndk-readme-") as tmp:
        snippets = write_snippets(ROOT / "README.md", Path(tmp))
        copies = [Path(shutil.copy(scenario, tmp)) for scenario in scenarios]
        command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "mypy.ini"),
                   *argv, *map(str, copies + snippets)]
        return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
