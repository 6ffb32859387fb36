#!/usr/bin/python3
# PYTHON_ARGCOMPLETE_OK  (bash completion: python3-argcomplete, ndk.cli)
"""The installed `ndk` command (Debian's interpreter, which the package is built for)."""
import sys

from ndk.cli import main

sys.exit(main())
