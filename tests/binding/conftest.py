"""Tests of the real binding (ndk._core) and the ndk package on top of it: run with
PYTHONPATH=build/python (CTest test `python_binding`)."""
