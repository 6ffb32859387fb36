#!/usr/bin/python3
"""The installed `ndk` command (Debian's interpreter, which the package is built for)."""
import sys

from ndk.cli import main

sys.exit(main())
