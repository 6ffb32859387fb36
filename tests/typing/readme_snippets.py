"""The README's ```python blocks, as files mypy can check (tests/typing/check_types.py).

    python3 tests/typing/readme_snippets.py README.md OUTDIR   # writes OUTDIR/readme_1.py, ...

Each block becomes its own module, headed by a comment naming the README line it starts at.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets(text: str) -> list[tuple[int, str]]:
    """(1-based line of the block's first code line, code) for every ```python block."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1))
            for match in _BLOCK.finditer(text)]


def write_snippets(readme: Path, out_dir: Path) -> list[Path]:
    """Write each block of `readme` to out_dir/readme_N.py; returns the files, in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (line, code) in enumerate(snippets(readme.read_text()), start=1):
        path = out_dir / f"readme_{number}.py"
        path.write_text(f"# {readme.name}, line {line}\n{code}")
        files.append(path)
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for path in write_snippets(Path(argv[0]), Path(argv[1])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
