#!/usr/bin/python3
"""Write the manual page of an argparse command line, with python3-argparse-manpage's formatter.

    argparse-man.py MODULE:FUNCTION --summary TEXT --version TEXT
                    [--see-also PAGE ...] --output FILE

FUNCTION returns the command's ArgumentParser (``ndk.cli:build_parser``); every subcommand gets
its own OPTIONS section.  The formatter (build_manpages.manpage.Manpage) is used as it is, with
four changes that Debian's lintian asks for: a NAME line with a summary (the whatis entry), a
title line naming the package and version, the usage blocks set without filling, so that
groff keeps argparse's own line breaks instead of warning that it cannot adjust them, and help
text lines that start with "." or "'" escaped, so that groff does not read them as requests.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from build_manpages.manpage import Manpage


def title(name: str, version: str) -> str:
    return f'.TH {name.upper()} 1 "" "{version}" "User Commands"'


# The requests the formatter writes; any other line that starts with "." or "'" is help text that
# argparse's wrapping put at the start of a line (".so; not cacheline"), which groff would read
# as a request.
FORMATTER_REQUESTS = re.compile(r"^[.'](TH|SH|SS|TP|PP|IP|br|B|BR|I|nf|fi|UR|UE)( |$)")


def escape_text_lines(lines: list[str]) -> list[str]:
    """Help text lines that start with a control character, made text with the ``\\&`` escape."""
    return [line if line[:1] not in (".", "'") or FORMATTER_REQUESTS.match(line)
            else "\\&" + line for line in lines]


def unfilled_usage(lines: list[str]) -> list[str]:
    """argparse's usage text (``usage: ...`` and its indented continuation lines) between
    ``.nf`` and ``.fi``, its minus signs escaped."""
    out: list[str] = []
    in_usage = False
    for line in lines:
        starts = line.startswith("usage: ")
        if in_usage and not (line.startswith(" ") and line.strip()):
            out.append(".fi")
            in_usage = False
        if starts:
            out.append(".nf")
            in_usage = True
        out.append(line.replace("-", "\\-") if in_usage else line)
    if in_usage:
        out.append(".fi")
    return out


def page(parser: argparse.ArgumentParser, summary: str, version: str,
         see_also: list[str]) -> str:
    parser.man_short_description = summary  # type: ignore[attr-defined]  # the formatter reads it
    if see_also:
        parser._manpage = [{"heading": "see also",  # type: ignore[attr-defined]
                            "content": ", ".join(see_also)}]
    lines = str(Manpage(parser)).splitlines()
    assert lines[0].startswith(".TH "), lines[0]
    body = unfilled_usage(escape_text_lines(lines[1:]))
    return "\n".join([title(parser.prog, version)] + body) + "\n"


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("function", metavar="MODULE:FUNCTION")
    args.add_argument("--summary", required=True, help="the whatis line after 'NAME \\-'")
    args.add_argument("--version", required=True, help="shown in the page's title line")
    args.add_argument("--see-also", nargs="*", default=[], metavar="PAGE")
    args.add_argument("--output", required=True, metavar="FILE")
    options = args.parse_args()
    module, _, function = options.function.partition(":")
    parser = getattr(importlib.import_module(module), function)()
    text = page(parser, options.summary, options.version, options.see_also)
    with open(options.output, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
