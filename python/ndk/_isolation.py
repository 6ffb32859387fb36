"""Crashes and hangs as failed scenarios: the ``ndk.testing`` plugin's part for pytest-xdist
and pytest-timeout.

A scenario that kills its process (a segfault or an abort in a provider) or runs past its time
limit must be that scenario's failure, naming the signal or the timeout and the last NDK calls
it made, and the run must go on.  The pieces:

* :class:`CallRing`: the last NDK calls of the running test, a ring of fixed-size slots in a
  shared memory-mapped file (one per xdist worker).  A write is a memory copy, no system call,
  and what the process wrote is still in the file after it dies, for the controller to read.
  :func:`record_calls` wraps the methods of the ``ndk`` classes so that each call writes its
  name and short arguments there first; it is installed only while scenarios run in a worker
  or under ``--timeout``, and taken off at the end of the session.
* :class:`Isolation`: the pytest plugin object (``ndk.testing`` registers it).  On the xdist
  controller it gives each worker a shared folder (``pytest_configure_node``), reads the
  collection the workers wrote there (rule and provider per test, for the report and the
  progress display: the controller collects nothing itself), and turns xdist's "worker crashed"
  report into the scenario's failure: the signal (from the worker's exit status), the last NDK
  calls (the worker's ring) and the Python traceback (the worker's ``faulthandler`` file).  In
  a worker it writes those files.  Anywhere, a test that pytest-timeout stopped (``--timeout``,
  method ``signal``: the test fails and the run goes on) is marked as a timeout with its last
  NDK calls.  A worker test still running some time after its ``--timeout`` (stuck in native
  code, where the signal cannot interrupt it) is ended by a ``faulthandler`` watchdog, and
  reported as a timeout too.

What it adds to a test report (plain data: it travels from the workers with the report):
``ndk_fate`` ("crashed" or "timeout"), ``ndk_fate_detail`` (one line: the signal or time
limit and the last NDK call) and a report section "ndk last calls".
"""

from __future__ import annotations

import enum
import faulthandler
import functools
import json
import mmap
import os
import shutil
import signal
import struct
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from ._report import CRASHED, DETAIL_ATTR, DIED_ATTR, FATE_ATTR, TIMEOUT
from ._selection import WHERE_KEY, where_of

DIR_KEY = "ndk_isolation_dir"  # workerinput entry: the controller's shared folder
COLLECTION_FILE = "collection.json"
SECTION = "ndk last calls"
_BACKSTOP_GRACE = 5.0  # seconds past --timeout before the watchdog ends a stuck worker


# --- the ring of last calls -------------------------------------------------------------------


class CallRing:
    """The last ``SLOTS`` NDK calls of the current test, in a memory-mapped file (or anonymous
    memory when ``path`` is None: the same process reads it back).

    Layout: a header (magic, calls so far, test start time, its --timeout and method, node ID)
    then ``SLOTS`` slots of (seconds since the test started, call text).
    """

    SLOTS = 32
    _HEADER = struct.Struct("<4sQdd8s1000s")  # magic, count, started, timeout, method, nodeid
    _SLOT = struct.Struct("<d184s")
    _MAGIC = b"NDK1"
    SIZE = _HEADER.size + SLOTS * _SLOT.size

    def __init__(self, path: str | os.PathLike | None = None, create: bool = True) -> None:
        if path is None:
            self._map = mmap.mmap(-1, self.SIZE)
        else:
            flags = os.O_RDWR | (os.O_CREAT if create else 0)
            fd = os.open(path, flags, 0o600)
            try:
                if create:
                    os.ftruncate(fd, self.SIZE)
                elif os.fstat(fd).st_size < self.SIZE:
                    raise ValueError(f"{path}: not a call ring")
                self._map = mmap.mmap(fd, self.SIZE)
            finally:
                os.close(fd)
        self._count = 0
        self._started = time.time()

    def close(self) -> None:
        self._map.close()

    def begin(self, nodeid: str) -> None:
        """A new test starts: forget the previous one's calls."""
        self._count = 0
        self._started = time.time()
        self._HEADER.pack_into(self._map, 0, self._MAGIC, 0, self._started, 0.0, b"",
                               nodeid.encode("utf-8", "replace")[:1000])

    def set_timeout(self, timeout: float, method: str) -> None:
        struct.pack_into("<d8s", self._map, 4 + 8 + 8, float(timeout), method.encode()[:8])

    def add(self, text: str) -> None:
        """Record one call (cheap: two copies into the mapping)."""
        slot = self._count % self.SLOTS
        self._SLOT.pack_into(self._map, self._HEADER.size + slot * self._SLOT.size,
                             time.time() - self._started, text.encode("utf-8", "replace")[:184])
        self._count += 1
        struct.pack_into("<Q", self._map, 4, self._count)

    def read(self) -> dict[str, Any] | None:
        """What the ring holds: ``nodeid``, ``started`` (time.time()), ``timeout``, ``method``,
        ``count`` (calls made) and ``calls`` (the last ones, oldest first, as
        ``(seconds, text)``); None if nothing was written yet."""
        magic, count, started, timeout, method, nodeid = self._HEADER.unpack_from(self._map, 0)
        if magic != self._MAGIC:
            return None
        first = max(0, count - self.SLOTS)
        calls = []
        for n in range(first, count):
            offset = self._HEADER.size + (n % self.SLOTS) * self._SLOT.size
            seconds, text = self._SLOT.unpack_from(self._map, offset)
            calls.append((seconds, text.rstrip(b"\0").decode("utf-8", "replace")))
        return dict(nodeid=nodeid.rstrip(b"\0").decode("utf-8", "replace"), started=started,
                    timeout=timeout, method=method.rstrip(b"\0").decode(), count=count,
                    calls=calls)


def format_calls(state: dict[str, Any] | None) -> str:
    """The ring's calls as report lines, oldest first ("none recorded" when empty)."""
    if not state or not state["calls"]:
        return "no NDK call recorded"
    skipped = state["count"] - len(state["calls"])
    lines = [f"  (and {skipped} earlier)"] if skipped else []
    lines += [f"  +{seconds:8.3f} s  {text}" for seconds, text in state["calls"]]
    return "\n".join(lines)


def last_call(state: dict[str, Any] | None) -> str:
    if not state or not state["calls"]:
        return "no NDK call recorded"
    return f"last NDK call {state['calls'][-1][1]}"


# --- recording calls --------------------------------------------------------------------------


def _short(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, tuple) and len(value) <= 4:
        return "(" + ", ".join(_short(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return type(value).__name__


def _describe(owner: str, name: str, args: tuple, kwargs: dict) -> str:
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{owner}.{name}({', '.join(parts)})"


class _Recording:
    """The ``ndk`` classes' methods, wrapped to write each call into a ring; undone by
    :meth:`remove`."""

    def __init__(self) -> None:
        self.ring: CallRing | None = None
        self._saved: list[tuple[Any, str, Any]] = []  # (owner, name, original attribute)

    def _wrap_method(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def method(self_: Any, *args: Any, **kwargs: Any) -> Any:
            ring = recording.ring
            if ring is not None:
                ring.add(_describe(type(self_).__name__, name, args, kwargs))
            return function(self_, *args, **kwargs)

        return method

    def _wrap_function(self, function: Callable[..., Any], owner: str, name: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            ring = recording.ring
            if ring is not None:
                ring.add(_describe(owner, name, args, kwargs))
            return function(*args, **kwargs)

        return call

    def install(self, ndk: Any) -> None:
        if self._saved:
            return
        try:
            core = ndk._compiled()
        except ImportError:  # the scenario errors at its fixtures, saying why
            return
        if core is None:  # a stand-in ndk without the extension: nothing to record
            return
        for cls in {value for value in vars(core).values() if isinstance(value, type)}:
            if issubclass(cls, BaseException) or issubclass(cls, enum.Enum):
                continue
            for name, attribute in list(vars(cls).items()):
                if name.startswith("__") or isinstance(attribute, (property, classmethod)):
                    continue
                if isinstance(attribute, staticmethod):
                    wrapped: Any = staticmethod(self._wrap_function(
                        attribute.__func__, cls.__name__, name))
                elif callable(attribute) and not isinstance(attribute, type):
                    wrapped = self._wrap_method(attribute, name)
                else:
                    continue
                self._saved.append((cls, name, attribute))
                setattr(cls, name, wrapped)
        raw = getattr(core, "raw", None)
        if raw is not None:
            for name, function in list(vars(raw).items()):
                if not name.startswith("_") and callable(function) and not isinstance(function, type):
                    self._saved.append((raw, name, function))
                    setattr(raw, name, self._wrap_function(function, "raw", name))

    def remove(self) -> None:
        for owner, name, attribute in reversed(self._saved):
            setattr(owner, name, attribute)
        self._saved.clear()
        self.ring = None


recording = _Recording()


# --- the worker's death, as the controller sees it -------------------------------------------

_FATAL = {  # faulthandler's words -> the signal
    "Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE", "Illegal instruction": "SIGILL",
}


def _exit_status(node: Any, wait: float = 2.0) -> int | None:
    """The dead worker's exit status (negative: the signal that killed it), when xdist's
    execnet gateway shows its process; None otherwise."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if popen is None or not hasattr(popen, "wait"):
        return None
    try:
        return popen.wait(timeout=wait)
    except Exception:  # still running (it closed its pipes), or not a child of ours
        return None


def describe_death(status: int | None, fault: str, state: dict[str, Any] | None,
                   now: float | None = None) -> tuple[str, str]:
    """(fate, what happened) for a worker that died running a test: from its exit status, the
    ``faulthandler`` output it left, and its call ring's header."""
    first = fault.lstrip().splitlines()[0] if fault.strip() else ""
    if first.startswith("Timeout ("):  # our watchdog: stuck past --timeout, ended
        limit = state["timeout"] if state else 0.0
        return TIMEOUT, (f"timeout: still running {_BACKSTOP_GRACE:g} s after its "
                         f"--timeout of {limit:g} s (not interruptible), worker ended")
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return CRASHED, f"crashed: killed by {name} (signal {-status})"
    if first.startswith("Fatal Python error: "):
        words = first[len("Fatal Python error: "):].strip()
        signame = _FATAL.get(words)
        return CRASHED, f"crashed: {signame} ({words})" if signame else f"crashed: {words}"
    if state and state["timeout"] > 0 and status == 1 and state["method"] == "thread":
        elapsed = (now if now is not None else time.time()) - state["started"]
        if elapsed >= state["timeout"] * 0.99:
            return TIMEOUT, (f"timeout: ran past its --timeout of {state['timeout']:g} s "
                             "(method thread: pytest-timeout ended the worker)")
    if status is not None:
        return CRASHED, f"crashed: worker exited with status {status}"
    return CRASHED, "crashed: worker process died"


_PLUMBING = ("/_pytest/", "/pluggy/", "/xdist/", "/execnet/", '"<string>"', '"<frozen ')


def trim_fault(text: str) -> str:
    """faulthandler's dump without the test runner's own frames (pytest, pluggy, xdist,
    execnet), and without the threads that had nothing else (xdist's receiver thread)."""
    blocks, out = text.strip().split("\n\n"), []
    for block in blocks:
        lines = block.splitlines()
        frames = [line for line in lines[1:] if line.startswith("  File ")]
        if not frames:
            out.append(block)
            continue
        kept = [line for line in frames if not any(mark in line for mark in _PLUMBING)]
        if kept:
            out.append("\n".join([lines[0], *kept]))
    return "\n\n".join(out)


class _Where:
    """A ``reprcrash`` for the crash report: what the terminal's summary and JUnit's failure
    message show."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.lineno, self.message = path, 0, message


class CrashRepr:
    """The longrepr of a crashed test's report (built on the controller, never serialized
    again): one line for summaries (``reprcrash.message``), the whole text for the terminal."""

    def __init__(self, path: str, message: str, text: str) -> None:
        self.reprcrash = _Where(path, message)
        self._text = text

    def toterminal(self, tw: Any) -> None:
        for line in self._text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self._text


# --- the plugin -------------------------------------------------------------------------------


def _timeout_failure(call: pytest.CallInfo) -> bool:
    """pytest-timeout's signal method stopped this phase (it fails it with "Timeout >Ns")."""
    excinfo = call.excinfo
    return (excinfo is not None and excinfo.errisinstance(pytest.fail.Exception)
            and str(excinfo.value).startswith("Timeout >"))


class Isolation:
    """The plugin object (see the module doc); ``ndk.testing`` registers one per session."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        workerinput = getattr(config, "workerinput", None)
        self._worker_dir = Path(workerinput[DIR_KEY]) if workerinput and DIR_KEY in workerinput else None
        self._worker_id = workerinput.get("workerid", "gw") if workerinput else None
        self._dir: Path | None = None  # the controller's shared folder, once a worker exists
        self._ring: CallRing | None = None
        self._fault: Any = None  # the worker's faulthandler file
        self._backstop = False

    # --- which runs record calls -------------------------------------------------------------

    def _timeout_on(self) -> bool:
        timeout = self._config.getoption("timeout", default=None)
        return bool(timeout and float(timeout) > 0)

    def _start_recording(self, item: pytest.Item) -> None:
        if "ndk_provider" not in getattr(item, "fixturenames", ()):
            return  # not a scenario
        if self._ring is None:
            if self._worker_dir is None and not self._timeout_on():
                return
            try:
                import ndk
            except ImportError:
                return
            if self._worker_dir is not None:
                self._ring = CallRing(self._worker_dir / f"{self._worker_id}.calls")
                self._fault = open(self._worker_dir / f"{self._worker_id}.fault", "w+")
                faulthandler.enable(file=self._fault, all_threads=True)
            else:
                self._ring = CallRing()
            recording.install(ndk)
            recording.ring = self._ring
        self._ring.begin(item.nodeid)
        if self._fault is not None:
            self._fault.truncate(0)
            self._fault.seek(0)

    # --- every process ------------------------------------------------------------------------

    # Outermost (before pytest-timeout's wrapper sets the test's timer).
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        self._start_recording(item)
        yield

    @pytest.hookimpl(hookwrapper=True, optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> Any:
        yield
        if self._ring is not None and recording.ring is self._ring:
            self._ring.set_timeout(settings.timeout, settings.method)
            # A worker stuck where the signal cannot reach (native code) is ended by
            # faulthandler's own thread; the controller reports it as a timeout.  Not when
            # pytest's faulthandler_timeout uses the same (only) watchdog.
            if self._fault is not None and not float(item.config.getini("faulthandler_timeout") or 0):
                faulthandler.dump_traceback_later(settings.timeout + _BACKSTOP_GRACE, exit=True,
                                                  file=self._fault)
                self._backstop = True

    @pytest.hookimpl(hookwrapper=True, optionalhook=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> Any:
        yield
        if self._backstop:
            faulthandler.cancel_dump_traceback_later()
            self._backstop = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        outcome = yield
        report = outcome.get_result()
        if report.failed and call.excinfo is not None and _timeout_failure(call):
            state = self._ring.read() if self._ring is not None else None
            setattr(report, FATE_ATTR, TIMEOUT)
            setattr(report, DETAIL_ATTR, f"timeout: {call.excinfo.value} in {report.when}; "
                                         f"{last_call(state)}")
            report.sections.append((SECTION, format_calls(state)))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._ring is not None:
            recording.remove()
            if self._backstop:
                faulthandler.cancel_dump_traceback_later()
            self._ring.close()
            self._ring = None
        if self._fault is not None:
            # pytest's faulthandler plugin (unconfigured after us) restores its own file.
            self._fault.close()
            self._fault = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # --- an xdist worker -----------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Tell the controller what each test stands for (written before xdist sends it the
        collected IDs, so the file is complete when it reads them)."""
        if self._worker_dir is None:
            return
        where = {item.nodeid: list(where_of(item)) for item in session.items}
        target = self._worker_dir / COLLECTION_FILE
        scratch = self._worker_dir / f"{COLLECTION_FILE}.{self._worker_id}"
        scratch.write_text(json.dumps(where), encoding="utf-8")
        os.replace(scratch, target)

    # --- the xdist controller ------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="ndk-workers-"))
        node.workerinput[DIR_KEY] = str(self._dir)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Iterable[str]) -> None:
        if self._dir is None or WHERE_KEY in self._config.stash:
            return
        try:
            where = json.loads((self._dir / COLLECTION_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # a worker without the plugin's collection: no rules known
        self._config.stash[WHERE_KEY] = {nodeid: (rule, provider, reference)
                                         for nodeid, (rule, provider, reference) in where.items()}

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist's "worker crashed" report becomes the scenario's failure: what killed it, its
        last NDK calls, the traceback faulthandler wrote."""
        node = getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", None)
        state: dict[str, Any] | None = None
        fault = ""
        if self._dir is not None and worker is not None:
            try:
                ring = CallRing(self._dir / f"{worker}.calls", create=False)
                state = ring.read()
                ring.close()
            except (OSError, ValueError):
                state = None
            if state is not None and state["nodeid"] != crashitem:
                state = None  # died before it began this test: its ring is the previous one's
            try:
                fault = (self._dir / f"{worker}.fault").read_text(encoding="utf-8", errors="replace")
            except OSError:
                fault = ""
        fate, what = describe_death(_exit_status(node), fault, state)
        detail = f"{what}; {last_call(state)}" if state is not None else what
        setattr(report, FATE_ATTR, fate)
        setattr(report, DETAIL_ATTR, detail)
        setattr(report, DIED_ATTR, True)
        report.when = "call"  # the test's failure (xdist says "???": no phase known)
        report.location = (crashitem.split("::")[0], None, crashitem.split("::", 1)[-1])
        lines = [f"worker {worker!r} {what}, running {crashitem}", "",
                 f"{SECTION} (oldest first):", format_calls(state)]
        if fault.strip():
            lines += ["", trim_fault(fault)]
        longrepr: Any = CrashRepr(crashitem.split("::")[0], detail, "\n".join(lines))
        report.longrepr = longrepr
