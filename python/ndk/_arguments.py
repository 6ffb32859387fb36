"""argparse types with ranges, for the ``ndk`` subcommands: a bad value is argparse's usage
error, one line naming the option and its valid range, exit code 2 (never a run with a
negative count or a time that cannot pass)."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Callable


def check_range(value: int, text: str, bounds: tuple[int, int]) -> int:
    if not bounds[0] <= value <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text} is out of range (valid: {bounds[0]}..{bounds[1]})")
    return value


def whole_number(bounds: tuple[int, int]) -> Callable[[str], int]:
    """An argparse type: a whole number (digits, optionally signed) within ``bounds``."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[-+]?\d+\s*", text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number (valid: {bounds[0]}..{bounds[1]})")
        return check_range(int(text), text, bounds)

    return parse


def seconds(most: float) -> Callable[[str], float]:
    """An argparse type: a time in seconds, more than 0 and at most ``most``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value <= most:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a time in seconds (valid: more than 0, at most {most:g})")
        return value

    return parse


def new_file(text: str) -> str:
    """An argparse type: a file to write, in a folder that exists (none is created)."""
    folder = Path(text).parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: the folder {str(folder)!r} does not exist")
    return text


def existing_folder(text: str) -> str:
    """An argparse type: a folder that exists (none is created)."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder that exists")
    return text
