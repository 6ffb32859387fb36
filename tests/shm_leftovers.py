"""What a test run left in /dev/shm/ndk-harness-<uid> (tests/all.sh's last stage): nothing.

The shm transport's registry (core/src/providers/soft/shm/shm_registry.hpp) keeps one
file per endpoint, "<address>#<port>", naming its owner by pid and start time, and one
directory per fabric (knob shm_fabric), which goes with its last user.  After a run, every
process of the run has exited, so anything the run made and left is an entry (or a writer's
temporary file) whose owner no longer runs, or a fabric directory without an entry of a
running process.  Only what changed since --since (the run's start) counts: another user of
this account may run meanwhile, and what it holds is alive and not ours.

Exits 1 and lists the leftovers when there are any; 0 otherwise (also when the directory does
not exist).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

LOCK = ".lock"
TEMP = re.compile(r"\.tmp-(\d+)-(\d+)-\d+$")


def running(pid: int, start: int) -> bool:
    """Whether (pid, start time) still runs (process_identity.hpp): /proc/<pid>/stat field 22."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2:].split()  # from field 3 (state) on
    return fields[0] != "Z" and int(fields[19]) == start


def owner(entry: Path) -> tuple[int, int] | None:
    """(pid, start) of a registry entry, or None for a file that is not one."""
    values = {}
    try:
        for line in entry.read_text().splitlines()[1:]:
            key, _, value = line.partition(" ")
            values[key] = value
        return int(values["pid"]), int(values["start"])
    except (OSError, KeyError, ValueError):
        return None


def alive(path: Path) -> bool:
    """Whether a file of a registry directory belongs to a running process."""
    temp = TEMP.match(path.name)
    who = (int(temp[1]), int(temp[2])) if temp else owner(path)
    return who is not None and running(*who)


def leftovers(base: Path, since: float) -> list[str]:
    found = []
    for path in sorted(base.iterdir()) if base.is_dir() else []:
        try:
            if path.name == LOCK or path.lstat().st_ctime < since:
                continue
            if path.is_dir():
                if not any(alive(p) for p in path.iterdir() if p.name != LOCK):
                    found.append(f"{path}/ (a fabric directory no running process uses)")
            elif not alive(path):
                found.append(f"{path} (its owner no longer runs)")
        except FileNotFoundError:
            continue  # its last user removed it as we looked
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", type=float, required=True,
                        help="the run's start, seconds since the epoch (date +%%s)")
    parser.add_argument("--directory", type=Path,
                        default=Path(f"/dev/shm/ndk-harness-{os.geteuid()}"))
    args = parser.parse_args()
    found = leftovers(args.directory, args.since)
    for line in found:
        print("left behind:", line)
    print(f"{args.directory}: {len(found)} leftover(s) of this run")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
