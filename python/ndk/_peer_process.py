"""The peer's interpreter, seen from the test's process: starting it where ``--ndk-peer`` says,
reaching its ``ndk`` through rpyc, and telling clearly when it died.

The peer is Debian's ``/usr/bin/python3`` with ``PYTHONPATH`` pointing at the same ``ndk``
package as this process (the build's ``python/`` folder, or the installed package), started
by ``subprocess`` as is (popen), under ``ssh HOST`` or under ``ip netns exec NAME``; its
standard input and output carry the rpyc connection (``ndk._peer_rpyc``), its standard error
goes to a file that an error report quotes.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional

from ._peer import NETNS, POPEN, SSH, PeerSpec
from ._peer_rpyc import BOOTSTRAP, CONFIG, fetch_buffers_whole, send_ndk_values_by_value

PYTHON = "/usr/bin/python3"  # Debian's: the one the ndk package is built for
START_TIMEOUT = 30.0  # seconds for the peer to start and import ndk (ssh may be slow)
SSH_CONNECT_TIMEOUT = 10  # seconds for ssh to reach the peer's host


class PeerError(RuntimeError):
    """The peer could not be started, or it died: the message says what and quotes its
    standard error."""


def package_path() -> str:
    """The folder holding the ``ndk`` package this process uses (the build's ``python/``), for
    the peer's PYTHONPATH."""
    import ndk

    # absolute, not resolved: the build's python/ndk holds symbolic links into the sources,
    # where the extension is not
    return str(Path(os.path.abspath(ndk.__file__)).parent.parent)


def peer_command(spec: PeerSpec, pythonpath: str) -> list[str]:
    """The command line that starts the peer for ``spec`` (not for ``local``)."""
    python = ["env", f"PYTHONPATH={pythonpath}", PYTHON, "-c", BOOTSTRAP]
    if spec.mode == POPEN:
        return python
    if spec.mode == NETNS:
        return ["ip", "netns", "exec", str(spec.target), *python]
    if spec.mode == SSH:
        # ssh hands the remote shell one string; BatchMode: a password prompt would hang;
        # ConnectTimeout: a host that does not answer fails the start well within its timeout.
        return ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT}",
                "-T", str(spec.target), shlex.join(python)]
    raise ValueError(f"--ndk-peer {spec}: not a remote peer")


def describe_exit(status: Optional[int]) -> str:
    if status is None:
        return "still running"
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name} (signal {-status})"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exited with status {status}"


class Peer:
    """A running peer interpreter: ``ndk`` is its ``ndk`` module (an rpyc proxy);
    ``open_adapter`` opens an adapter there and keeps it for :meth:`close_adapters`."""

    def __init__(self, spec: PeerSpec, process: subprocess.Popen, connection: Any,
                 stderr: Any) -> None:
        self.spec = spec
        self.process = process
        self.connection = connection
        self._stderr = stderr
        self.ndk: Any = connection.modules.ndk
        self.adapters: list[Any] = []
        self.killed = False  # by kill(): its death is what the test asked for

    @property
    def where(self) -> str:
        return str(self.spec)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self.connection.closed

    def stderr_tail(self, limit: int = 2000) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-limit:].strip()

    def death(self) -> Optional[str]:
        """What happened to the peer if it is gone (None while it runs, or when a test killed
        it on purpose): the exit and the end of its standard error."""
        if self.killed or (self.process.poll() is None and not self.connection.closed):
            return None
        try:
            status = self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            status = None
        text = f"the peer process ({self.where}, pid {self.pid}) {describe_exit(status)}"
        if status is None:
            text = (f"the connection to the peer process ({self.where}, pid {self.pid}) "
                    "closed")
        tail = self.stderr_tail()
        return f"{text}; its stderr: {tail}" if tail else text

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL the peer interpreter, for a scenario about a peer that dies: its sockets and
        devices are left to its kernel, as after a crash.  The peer sends the signal to itself
        (with ssh=HOST the local process is only the ssh client), so the request is never
        answered: it returns when the pipe closes, then waits for the local process to end.  The test is not failed for this death, and the
        next test gets a new peer."""
        self.killed = True
        os_module = self.connection.modules.os
        remote_pid = os_module.getpid()
        try:
            os_module.kill(remote_pid, signal.SIGKILL)  # never answered: the pipe closes
        except EOFError:
            pass
        self.process.wait(timeout=timeout)
        self.adapters = []

    def open_adapter(self, provider: str, **knobs: Any) -> Any:
        """``ndk.open_adapter`` in the peer; the adapter is a proxy."""
        adapter = self.ndk.open_adapter(provider, **knobs)
        self.adapters.append(adapter)
        return adapter

    def close_adapters(self) -> None:
        """Close what :meth:`open_adapter` opened (a closed one is left), newest first."""
        adapters, self.adapters = self.adapters, []
        if not self.alive:
            return
        for adapter in reversed(adapters):
            if not adapter.closed:
                adapter.close()

    def close(self) -> None:
        """End the peer: closing its pipe ends its main loop; a peer that does not leave is
        killed."""
        try:
            self.connection.close()
        except Exception:  # already broken: the process is ended below either way
            pass
        try:
            self.process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5.0)
        self._stderr.close()


def start_peer(spec: PeerSpec, pythonpath: Optional[str] = None,
               timeout: float = START_TIMEOUT) -> Peer:
    """Start the peer interpreter for ``spec`` and connect to it; PeerError (with the peer's
    standard error) when it does not answer within ``timeout`` seconds."""
    from rpyc.core.service import MasterService
    from rpyc.utils.factory import connect_pipes

    send_ndk_values_by_value()
    fetch_buffers_whole()
    command = peer_command(spec, pythonpath or package_path())
    stderr = tempfile.TemporaryFile(mode="w+", prefix="ndk-peer-")
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=stderr, start_new_session=True)
    except OSError as error:
        stderr.close()
        raise PeerError(f"--ndk-peer {spec}: cannot run {command[0]}: {error}") from None
    try:
        # Connecting makes the first request (rpyc asks for the peer's root), answered once the
        # peer imported ndk and serves; it fails at once when the peer exits first.
        connection = connect_pipes(process.stdout, process.stdin, MasterService, dict(CONFIG))
        connection.ping(timeout=timeout)
        return Peer(spec, process, connection, stderr)
    except Exception as error:
        process.kill()
        process.wait(timeout=5.0)
        stderr.seek(0)
        tail = stderr.read()[-2000:].strip()
        stderr.close()
        raise PeerError(f"--ndk-peer {spec}: the peer did not start ({' '.join(command[:4])} "
                        f"...: {describe_exit(process.returncode)}; {type(error).__name__}: "
                        f"{error})" + (f"; its stderr: {tail}" if tail else "")) from None
