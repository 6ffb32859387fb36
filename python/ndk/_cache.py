"""Where pytest's cache (``--lf``, ``--ff``) goes for a conformance run: a folder the user owns.

pytest keeps its cache in ``.pytest_cache`` under the run's rootdir.  For the installed
scenarios that is /usr/share/ndk-harness/scenarios, which a user cannot write and root must
not (the package's files are the package manager's).  ``ndk conformance`` always puts the
cache in :func:`user_cache_dir`; the ``ndk.testing`` plugin does the same for a plain pytest
run whose rootdir is not the user's (:func:`foreign`), unless the run chose a ``cache_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path

SYSTEM_PREFIXES = (Path("/usr"), Path("/opt"), Path("/etc"), Path("/var/lib"))


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/ndk-harness/pytest``, or ``~/.cache/ndk-harness/pytest``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ndk-harness" / "pytest"


def foreign(folder: Path) -> bool:
    """The folder is not the user's to write a cache in: a system folder (/usr, /opt, ...),
    one owned by another user, or one the user cannot write."""
    folder = folder.resolve()
    if any(folder == prefix or prefix in folder.parents for prefix in SYSTEM_PREFIXES):
        return True
    try:
        owner = folder.stat().st_uid
    except OSError:
        return True
    return owner != os.geteuid() or not os.access(folder, os.W_OK)
