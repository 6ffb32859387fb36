"""``python3 -m ndk``: the same command line as the ``ndk`` script."""

from ndk.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
