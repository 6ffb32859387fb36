"""``ndk walk``: a random walk over every NDK function, with the validation layer on.

The engine is the C++ helper ``ndk_walk`` (python/walk/, built into the build tree's ``bin/``);
this module runs it, prints what it measured and, when the walk failed, turns the shrunk trace
into a runnable pytest scenario (docs/walk.md)::

    ndk walk --provider soft --seconds 60 --seed 7
    ndk walk --replay walk-7.min.jsonl          # run a recorded trace once

A scenario written here uses the public API (``ndk.open_adapter`` and the objects' methods)
through :class:`Model`, which keeps the walker's oracle in Python: the bytes every transfer must
have written, each request's single completion, and the validation layer's record after every
operation.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ndk import quirks

# --- the helper ------------------------------------------------------------------------------


def find_helper() -> str:
    """The ``ndk_walk`` executable: $NDK_WALK, the build tree's bin/, or PATH."""
    explicit = os.environ.get("NDK_WALK")
    if explicit:
        return explicit
    candidates = []
    try:
        from . import _build_info

        if _build_info.BUILD_DIR:
            candidates.append(Path(_build_info.BUILD_DIR) / "bin" / "ndk_walk")
    except ImportError:
        pass
    candidates.append(Path(__file__).absolute().parent.parent.parent / "bin" / "ndk_walk")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("ndk_walk")
    if found:
        return found
    raise FileNotFoundError("ndk_walk not found: build the ndk_walk target or set NDK_WALK")


def run_helper(arguments: Sequence[str], helper: str | None = None,
               timeout: float | None = None) -> dict[str, Any]:
    """Run ``ndk_walk ARGUMENTS...``; its JSON result (exit 0 clean, 1 a failure)."""
    command = [helper or find_helper(), *arguments]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=None, text=True,
                          timeout=timeout, check=False)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode})")
    return json.loads(done.stdout)


# --- the summary -----------------------------------------------------------------------------


def format_summary(result: dict[str, Any]) -> str:
    """Operations per second, then per NDK function: status -> count."""
    ops = int(result.get("ops", 0))
    seconds = float(result.get("seconds", 0) or 0)
    rate = ops / seconds if seconds > 0 else 0.0
    lines = [f"ndk walk: provider {result.get('provider')}, seed {result.get('seed')}, "
             f"{result.get('threads', 1)} thread(s): {ops} operations in {seconds:.1f} s "
             f"({rate:,.0f} ops/s), {result.get('skipped', 0)} skipped"]
    statuses = result.get("statuses", {})
    if statuses:
        width = max(len(name) for name in statuses)
        for name in sorted(statuses):
            counts = ", ".join(f"{status} {n}" for status, n in
                               sorted(statuses[name].items(), key=lambda kv: -kv[1]))
            lines.append(f"  {name:<{width}}  {counts}")
    for key, title in (("warnings", "warnings"), ("intended", "consumer rules broken on purpose")):
        if result.get(key):
            lines.append(f"  {title}: " +
                         ", ".join(f"{rule} {n}" for rule, n in sorted(result[key].items())))
    failure = result.get("failure")
    if failure:
        lines.append(f"FAILED at op {failure['op']}: {failure['signature']}: {failure['detail']}")
        if result.get("trace"):
            lines.append(f"  raw trace:    {result['trace']} ({result.get('trace_ops')} ops)")
        if result.get("shrunk"):
            lines.append(f"  shrunk trace: {result['shrunk']} ({result.get('shrunk_ops')} ops, "
                         f"{result.get('shrink_runs')} replays)")
        if result.get("scenario"):
            lines.append(f"  scenario:     {result['scenario']}  (pytest it to reproduce)")
        if result.get("shrink_note"):
            lines.append(f"  {result['shrink_note']}")
    else:
        lines.append("clean: no violation, no data mismatch, every completion accounted for")
    return "\n".join(lines)


# --- traces and scenarios ----------------------------------------------------------------------


def read_trace(path: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the ops of a trace file (JSON lines)."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def _knob_kwargs(options: str) -> str:
    parts = []
    for item in options.split(";"):
        if "=" not in item:
            continue
        key, value = item.split("=", 1)
        parts.append(f"{key}={int(value) if value.isdigit() else repr(value)}")
    return ", ".join(parts)


def scenario_source(header: dict[str, Any], ops: list[dict[str, Any]]) -> str:
    """A pytest scenario that replays ``ops`` through the public API (one line per op)."""
    provider = header.get("provider", "soft")
    seed = header.get("seed", 0)
    adapters = header.get("options", "").split("|")
    signature = header.get("signature", "")
    out = [
        f'"""Shrunk by ndk walk (seed {seed}): {signature}.',
        "",
        f"{header.get('detail', '')}",
        "",
        "Each line is one operation of the walk (its number is the request context of a post and",
        "the name of a created object); Model keeps the walker's oracle: the validation layer's",
        'record after every operation, every byte a transfer wrote, every completion once."""',
        "",
        "import ndk",
        "from ndk.walk import Model",
        "",
        "",
        f"def test_walk_seed_{seed}():",
        "    m = Model()",
    ]
    for i, options in enumerate(adapters):
        kwargs = _knob_kwargs(options)
        out.append(f"    m.adapter(ndk.open_adapter({provider!r}, validate=True"
                   f"{', ' + kwargs if kwargs else ''}))")
    out.append("    try:")
    for op in ops:
        name = op["op"]
        args = ", ".join(f"{k}={v}" for k, v in op.items() if k not in ("i", "op"))
        out.append(f"        m.{name}({op['i']}{', ' + args if args else ''})")
    out.append("        m.finish()")
    out.append("    finally:")
    out.append("        m.close()")
    return "\n".join(out) + "\n"


def write_scenario(trace: str | os.PathLike, path: str | os.PathLike | None = None) -> str:
    """Write the pytest scenario of a (shrunk) trace next to it; its path."""
    header, ops = read_trace(trace)
    if path is None:
        stem = Path(trace).name.split(".")[0].replace("-", "_")
        path = Path(trace).with_name(f"test_{stem}.py")
    Path(path).write_text(scenario_source(header, ops), encoding="utf-8")
    return str(path)


# --- the oracle, in Python ---------------------------------------------------------------------

MASK = (1 << 64) - 1
KINTENT = (1 << 29) | (1 << 28)
PAGE = 4096


def pattern(op: int, off: int) -> int:
    """The byte at stream offset ``off`` of what op ``op`` moves (python/walk/world.hpp)."""
    if off < 8:
        return (op >> (8 * off)) & 0xFF
    x = (op * 0x9E3779B97F4A7C15 + (off >> 3) * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 31
    x = (x * 0x94D049BB133111EB) & MASK
    x ^= x >> 29
    return (x >> ((off & 7) * 8)) & 0xFF


def pattern_bytes(op: int, start: int, n: int) -> bytes:
    return bytes(pattern(op, i) for i in range(start, start + n))


def page_buffer(size: int) -> Any:
    """``size`` writable bytes starting on a page, as the engine's buffers do, so that an FBO
    (NdkBuildLAM) is the same as in the walk that wrote the trace."""
    return mmap.mmap(-1, max(size, 1))


class WalkFailure(AssertionError):
    pass


class Model:
    """The walker's model and oracle for a replayed trace (methods: the trace's op names)."""

    TIMEOUT = 5.0

    def __init__(self):
        import ndk

        self.ndk = ndk
        self.adapters: list[Any] = []
        self.hosts: list[str] = []
        self.objs: dict[int, Any] = {}
        self.kind: dict[int, str] = {}
        self.bufs: dict[int, bytearray] = {}      # MR id -> its registered buffer
        self.qp_of: dict[int, dict] = {}          # QP id -> {pd, rcq, icq, srq, peer}
        self.pd_of: dict[int, int] = {}
        self.out: dict[int, dict] = {}            # request context -> what to check
        self.sends: dict[int, tuple[int, int]] = {}
        self.mw_token: dict[int, int] = {}
        self.mw_window: dict[int, tuple[int, int]] = {}
        self.listen_port: dict[int, int] = {}
        self.lams: dict[int, dict] = {}           # LAM id -> its mapping and buffer region
        self.fr: dict[int, dict] = {}             # fast-register MR id -> its last mapping
        self.mapped: set[int] = set()             # fast-register MRs mapped now
        self.stale: set[int] = set()              # ... whose LAM was released
        self.corrupt_pending = False
        self.allowed: set[str] = set()

    # adapters
    def adapter(self, ad):
        self.adapters.append(ad)
        hosts = [h for h in (ad.addresses or []) if ":" not in h]
        self.hosts.append(hosts[0] if hosts else "0.0.0.0")
        return ad

    def _check(self):
        for ad in self.adapters:
            for v in ad.violations():
                if str(v.severity).lower().endswith("warning"):
                    continue
                if str(v.side).lower().endswith("consumer") and v.rule in self.allowed:
                    continue
                raise WalkFailure(f"violation {v.rule}: {v.side} on {v.object} in {v.call}: "
                                  f"{v.message}")
            ad.clear_violations()
        self.allowed = set()

    def _done(self, call):
        call.wait(timeout=self.TIMEOUT)
        if not call.done:
            raise WalkFailure("a call that returned STATUS_PENDING never completed")
        return call

    def _create(self, i, kind, call, invalid=False):
        self._done(call)
        status = call.wait(0)
        if invalid and status != self.ndk.Status.INVALID_PARAMETER:
            raise WalkFailure(f"a size above the adapter's limit gave {status}, documented: "
                              "STATUS_INVALID_PARAMETER")
        if status == self.ndk.Status.SUCCESS:
            self.objs[i] = call.object
            self.kind[i] = kind
        self._check()

    def _o(self, i):
        return self.objs.get(i)

    # ops: adapters and creates
    def knob(self, i, ad, key, val):
        names = ("create_mode", "request_mode", "close_mode")
        setattr(self.adapters[ad].knobs, names[key], ("inline", "pending")[val])

    def query(self, i, ad):
        self.adapters[ad].query_info()
        self._check()

    def _limit(self, ad):
        return self.adapters[ad].query_info()

    def cq_create(self, i, ad, new, depth):
        self._create(new, "cq", self.adapters[ad].create_cq(cq_depth=depth),
                     depth > self._limit(ad).max_cq_depth)

    def pd_create(self, i, ad, new):
        self._create(new, "pd", self.adapters[ad].create_pd())
        self.pd_of[new] = ad

    def conn_create(self, i, ad, new):
        self._create(new, "connector", self.adapters[ad].create_connector())

    def lis_create(self, i, ad, new):
        self._create(new, "listener", self.adapters[ad].create_listener())

    def se_create(self, i, ad, new, port):
        self._create(new, "endpoint",
                     self.adapters[ad].create_shared_endpoint((self.hosts[ad], port)))

    def mr_create(self, i, pd, new, fast):
        self._create(new, "mr", self._o(pd).create_mr(fast_register=bool(fast)))
        self.pd_of[new] = pd

    def mw_create(self, i, pd, new):
        self._create(new, "mw", self._o(pd).create_mw())
        self.pd_of[new] = pd

    def srq_create(self, i, pd, new, depth, sge, thr):
        self._create(new, "srq", self._o(pd).create_srq(depth, max_receive_request_sge=sge,
                                                        notify_threshold=thr))
        self.pd_of[new] = pd

    def qp_create(self, i, pd, new, rcq, icq, rdepth, idepth, rsge, isge, inl):
        self._create(new, "qp", self._o(pd).create_qp(
            self._o(rcq), self._o(icq), qp_context=new, receive_queue_depth=rdepth,
            initiator_queue_depth=idepth, max_receive_request_sge=rsge,
            max_initiator_request_sge=isge, inline_data_size=inl))
        self.qp_of[new] = dict(pd=pd, rcq=rcq, icq=icq, srq=-1, peer=-1)

    def qps_create(self, i, pd, new, rcq, icq, srq, idepth, isge, inl):
        self._create(new, "qp", self._o(pd).create_qp_with_srq(
            self._o(rcq), self._o(icq), self._o(srq), qp_context=new,
            initiator_queue_depth=idepth, max_initiator_request_sge=isge, inline_data_size=inl))
        self.qp_of[new] = dict(pd=pd, rcq=rcq, icq=icq, srq=srq, peer=-1)

    def priv(self, i, pd):
        self._o(pd).get_privileged_memory_region_token()

    def listen(self, i, lis, port):
        listener = self._o(lis)
        ad = self.adapters.index(listener.adapter) if listener.adapter in self.adapters else 0
        call = self._done(listener.listen((self.hosts[ad], port)))
        if call.wait(0) == self.ndk.Status.SUCCESS:
            self.listen_port[lis] = listener.get_local_address()[1]
        self._check()

    def pause(self, i, lis, on):
        self._o(lis).control_connect_events(bool(on))

    # memory
    def reg(self, i, mr, size, flags):
        buf = page_buffer(size)
        call = self._done(self._o(mr).register(buf, flags=flags))
        if call.wait(0) == self.ndk.Status.SUCCESS:
            self.bufs[mr] = buf
        self._check()

    def dereg(self, i, mr):
        call = self._done(self._o(mr).deregister_mr())
        if call.wait(0) == self.ndk.Status.SUCCESS:
            self.bufs.pop(mr, None)
        self._check()

    def frinit(self, i, mr, pages, remote):
        self._done(self._o(mr).initialize_fast_register_mr(pages, remote_access=bool(remote)))
        self._check()

    # CQs and SRQs
    def arm(self, i, cq, type):
        self._o(cq).arm(type)
        self._check()

    def poll(self, i, cq, n, ex):
        c = self._o(cq)
        results = c.get_results_ex(n) if ex else c.get_results(n)
        for r in results:
            self._complete(r)
        self._check()

    def resize(self, i, cq, depth):
        self._done(self._o(cq).resize_cq(depth))
        self._check()

    def moder(self, i, cq, interval, count):
        self._o(cq).control_cq_interrupt_moderation(interval, count)
        self._check()

    def srq_mod(self, i, srq, depth, thr):
        self._done(self._o(srq).modify_srq(srq_depth=depth, notify_threshold=thr))
        self._check()

    # posts
    def _pieces(self, mr, off, n):
        """(buffer, offset, length) of bytes [off, off + n) of MR ``mr``: its registered buffer,
        or for a fast-registered MR the LAM pages x FBO of its mapping (python/walk/world.hpp)."""
        fr = self.fr.get(mr)
        if fr is None:
            return [(self.bufs[mr], off, n)]
        out: list = []
        at = fr["fbo"] + off
        while n > 0:
            j, within = divmod(at, PAGE)
            k = min(n, PAGE - within)
            start = fr["map"][j] + within
            if out and out[-1][0] is fr["buf"] and out[-1][1] + out[-1][2] == start:
                out[-1] = (fr["buf"], out[-1][1], out[-1][2] + k)
            else:
                out.append((fr["buf"], start, k))
            at += k
            n -= k
        return out

    def _sge(self, mr, off, n):
        fr = self.fr.get(mr)
        if fr is None:
            return self._o(mr).sge(off, n)
        return self.ndk.Sge(fr["base"] + off, n, self._o(mr).local_token)

    def _sgl(self, mr, spans):
        return [self._sge(mr, off, n) for off, n in spans if n or len(spans) == 1]

    def _dest(self, mr, spans):
        return [p for off, n in spans for p in self._pieces(mr, off, n)]

    @staticmethod
    def _fill_pieces(pieces, op):
        pos = 0
        for buf, off, n in pieces:
            buf[off:off + n] = pattern_bytes(op, pos, n)
            pos += n

    def _fill(self, mr, spans, op):
        self._fill_pieces(self._dest(mr, spans), op)

    def _post(self, i, status, req, flags=0, on_ok=None, on_fail=None):
        """A post: in flight when it returned SUCCESS.  on_ok runs at its success (at once for
        a silent success, undone by on_fail if it fails after all)."""
        if status != self.ndk.Status.SUCCESS:
            return
        req.update(silent=bool(flags & 1), on_ok=on_ok, on_fail=on_fail)
        if req["silent"] and on_ok:
            on_ok()
        self.out[i] = req

    def srq_recv(self, i, srq, mr, off0, len0, off1, len1):
        spans = [(off0, len0)] + ([(off1, len1)] if len1 else [])
        status = self._o(srq).srq_receive(self._sgl(mr, spans), request_context=i)
        self._post(i, status, dict(kind="recv", dest=self._dest(mr, spans)))
        self._check()

    def recv(self, i, qp, mr, off0, len0, off1, len1):
        spans = [(off0, len0)] + ([(off1, len1)] if len1 else [])
        status = self._o(qp).receive(self._sgl(mr, spans), request_context=i)
        self._post(i, status, dict(kind="recv", dest=self._dest(mr, spans), qp=qp))
        self._check()

    def send(self, i, qp, mr, off0, len0, off1, len1, flags):
        flags &= ~KINTENT
        spans = [(off0, len0)] + ([(off1, len1)] if len1 else [])
        total = sum(n for _, n in spans)
        if flags & self.ndk.OpFlag.INLINE:
            import ctypes

            scratch = bytearray(8192)
            self._scratch = scratch
            base = ctypes.addressof((ctypes.c_char * len(scratch)).from_buffer(scratch))
            pos = 0
            sgl = []
            for off, n in spans:
                scratch[off:off + n] = pattern_bytes(i, pos, n)
                pos += n
                sgl.append(self.ndk.Sge(base + off, n, 0x5EED))
        else:
            self._fill(mr, spans, i)
            sgl = self._sgl(mr, spans)
        status = self._o(qp).send(sgl, flags=flags, request_context=i)
        if status == self.ndk.Status.SUCCESS:
            self.sends[i] = (self.qp_of[qp]["peer"], total)
        self._post(i, status, dict(kind="send"), flags)
        self._check()

    def sendinv(self, i, qp, mr, off0, len0, flags, tgt):
        flags &= ~KINTENT
        self._fill(mr, [(off0, len0)], i)
        fast = self.kind.get(tgt) == "mr"   # a fast-register MR the peer mapped
        token = self._o(tgt).remote_token if fast else self.mw_token[tgt]
        status = self._o(qp).send_and_invalidate(self._sgl(mr, [(off0, len0)]), token,
                                                 flags=flags, request_context=i)
        if status == self.ndk.Status.SUCCESS:
            self.sends[i] = (self.qp_of[qp]["peer"], len0)
        self._post(i, status, dict(kind="send"), flags,
                   on_ok=(lambda: self.mapped.discard(tgt)) if fast else None)
        self._check()

    def _remote(self, rmr, roff, n):
        """(address, token, destination pieces) of a remote MR, fast-registered MR or MW."""
        if self.kind.get(rmr) == "mw":
            under, off = self.mw_window[rmr]
            obj = self._o(under)
            return obj.address + off + roff, self.mw_token[rmr], [(self.bufs[under], off + roff, n)]
        if rmr in self.fr:
            return (self.fr[rmr]["base"] + roff, self._o(rmr).remote_token,
                    self._pieces(rmr, roff, n))
        obj = self._o(rmr)
        return obj.address + roff, obj.remote_token, [(self.bufs[rmr], roff, n)]

    def _want(self, rmr):
        # an access through a fast-registered MR whose LAM was released fails (docs/walk.md)
        return self.ndk.Status.ACCESS_VIOLATION if rmr in self.stale else None

    def write(self, i, qp, mr, off0, len0, rmr, roff, flags):
        flags &= ~KINTENT
        address, token, dest = self._remote(rmr, roff, len0)
        self._fill(mr, [(off0, len0)], i)
        status = self._o(qp).write(self._sgl(mr, [(off0, len0)]), address, token, flags=flags,
                                   request_context=i)
        self._post(i, status, dict(kind="write", dest=dest, want=self._want(rmr)), flags)
        self._check()

    def read(self, i, qp, mr, off0, len0, rmr, roff, flags):
        flags &= ~KINTENT
        address, token, source = self._remote(rmr, roff, len0)
        self._fill_pieces(source, i)
        status = self._o(qp).read(self._sgl(mr, [(off0, len0)]), address, token, flags=flags,
                                  request_context=i)
        invalidate = flags & self.ndk.OpFlag.RDMA_READ_LOCAL_INVALIDATE
        self._post(i, status, dict(kind="read", dest=self._dest(mr, [(off0, len0)]),
                                   want=self._want(rmr)), flags,
                   on_ok=(lambda: self.mapped.discard(mr)) if invalidate else None)
        self._check()

    def bind(self, i, qp, mr, mw, off, len, flags):
        flags &= ~KINTENT
        status = self._o(qp).bind(self._o(mr), self._o(mw), self._o(mr).address + off, len,
                                  flags=flags, request_context=i)
        self._post(i, status, dict(kind="bind", mw=mw, window=(mr, off)), flags)
        self._check()

    def inval(self, i, qp, tgt, flags):
        flags &= ~KINTENT
        status = self._o(qp).invalidate(self._o(tgt), flags=flags, request_context=i)
        fast = self.kind.get(tgt) == "mr"
        self._post(i, status, dict(kind="inval", want=self.ndk.Status.SUCCESS if fast else None),
                   flags, on_ok=(lambda: self.mapped.discard(tgt)) if fast else None,
                   on_fail=(lambda: self.mapped.add(tgt)) if fast else None)
        self._check()

    # logical address mappings and fast registers
    def lam(self, i, ad, new, mr, off, len, small):
        """NdkBuildLAM over [off, off + len) of MR ``mr``'s buffer (-1: a new buffer); small:
        a *pLAMSize with no room for a page (BUFFER_TOO_SMALL, digest 1.1)."""
        buf = self.bufs[mr] if mr >= 0 else page_buffer(off + len)
        call = self._done(self.adapters[ad].build_lam(self.ndk.Mdl(buf, [(off, len)]),
                                                      lam_size=16 if small else None))
        status = call.wait(0)
        if small and status != self.ndk.Status.BUFFER_TOO_SMALL:
            raise WalkFailure(f"NdkBuildLAM with no room for a page gave {status}, documented: "
                              "STATUS_BUFFER_TOO_SMALL")
        if not small and status == self.ndk.Status.SUCCESS:
            lam = call.lam
            pages = list(lam.adapter_page_array)
            self.lams[new] = dict(lam=lam, ad=ad, buf=buf, off=off, fbo=lam.fbo, pages=pages,
                                  count=lam.adapter_page_count)
        self._check()

    def lamrel(self, i, lam):
        """NdkReleaseLAM: an MR it maps stays fast-registered, its accesses fail."""
        self.lams.pop(lam)["lam"].release()
        self.stale.update(mr for mr, fr in self.fr.items() if fr["lam"] == lam)
        self._check()

    def fastreg(self, i, qp, mr, lam, page, n, fbo, len, flags, order):
        flags &= ~KINTENT
        ndk = self.ndk
        m = self.lams[lam]
        count = m["count"]
        index = [((page + n - 1 - j) if order else (page + j)) % count for j in range(n)]
        base = ((i & 0xFFF) + 1) * PAGE + fbo
        status = self._o(qp).fast_register(self._o(mr), [m["pages"][k] for k in index], fbo, len,
                                           base, flags=flags, request_context=i)
        foreign = m["ad"] != self.pd_of[self.qp_of[qp]["pd"]]
        if mr in self.mapped:   # mapped already: INVALID_DEVICE_REQUEST (docs/semantics.md)
            self._post(i, status, dict(kind="fastreg", want=ndk.Status.INVALID_DEVICE_REQUEST))
        elif foreign:           # another adapter's logical pages: ACCESS_VIOLATION
            self._post(i, status, dict(kind="fastreg", want=ndk.Status.ACCESS_VIOLATION))
        else:
            mapping = dict(base=base, fbo=fbo, buf=m["buf"], lam=lam,
                           map=[m["off"] - m["fbo"] + k * PAGE for k in index])

            def on_ok():
                self.fr[mr] = mapping
                self.mapped.add(mr)
                self.stale.discard(mr)

            self._post(i, status, dict(kind="fastreg", want=ndk.Status.SUCCESS), flags,
                       on_ok=on_ok, on_fail=lambda: self.mapped.discard(mr))
        self._check()

    def badtok(self, i, qp, mr, off0, len0):
        sge = self._o(mr).sge(off0, len0)
        bad = self.ndk.Sge(sge.virtual_address, len0, ~self._o(mr).local_token & 0xFFFFFFFF)
        self.allowed.add("SGE-TOKEN")
        if self._o(qp).send([bad], request_context=i) == self.ndk.Status.SUCCESS:
            self.out[i] = dict(kind="send", silent=False)
        self._check()

    def flush(self, i, qp):
        self._o(qp).flush()
        self._check()

    def corrupt(self, i, n=0):
        self.corrupt_pending = True   # the walker's --inject-failure-at: damage the next check

    def reset(self, i, n=0):
        self.finish()

    def _complete(self, r):
        i = int(r.request_context)
        req = self.out.pop(i, None)
        if req is None:
            raise WalkFailure(f"a result for request #{i} that is not in flight")
        want = req.get("want")
        if want is not None and r.status not in (want, self.ndk.Status.CANCELLED):
            raise WalkFailure(f"{req['kind']} #{i} completed {r.status}, the model expects "
                              f"{want} (or STATUS_CANCELLED)")
        if r.status != self.ndk.Status.SUCCESS:
            self.sends.pop(i, None)
            if req.get("silent") and req.get("on_fail"):
                req["on_fail"]()
            return
        if not req.get("silent") and req.get("on_ok"):
            req["on_ok"]()
        kind = req["kind"]
        if kind in ("write", "read") or (kind == "recv" and r.bytes_transferred):
            got = b"".join(bytes(buf[off:off + n]) for buf, off, n in req["dest"])
            if kind == "recv":
                got = got[:r.bytes_transferred]
            if self.corrupt_pending and got:
                self.corrupt_pending = False
                got = got[:-1] + bytes([got[-1] ^ 0xFF])
            source = int.from_bytes(got[:8], "little") if kind == "recv" else i
            if kind == "recv" and (source not in self.sends or
                                   self.sends.pop(source)[1] != len(got)):
                raise WalkFailure(f"receive #{i} got {len(got)} bytes naming send #{source}, "
                                  "which was not sent with that length")
            if got != pattern_bytes(source, 0, len(got)):
                raise WalkFailure(f"{kind} #{i}: the destination differs from what was sent")
        if kind == "bind":
            self.mw_token[req["mw"]] = self._o(req["mw"]).remote_token
            self.mw_window[req["mw"]] = req["window"]

    # connections
    def connect(self, i, conn, qp, lis, aqp, new, mode):
        ndk = self.ndk
        connector, q = self._o(conn), self._o(qp)
        listener = self._o(lis)
        data = b"walk"
        if mode == 4:
            host = self.hosts[self.adapters.index(listener.adapter)] if listener else "0.0.0.0"
            call = self._done(connector.connect(q, (host, 1), private_data=data))
            if call.wait(0) == ndk.Status.SUCCESS:
                raise WalkFailure("a connect to port 1, where nobody listens, succeeded")
            self._check()
            return
        host = self.hosts[self.adapters.index(listener.adapter)]
        dest = (host, self.listen_port[lis])
        if mode == 5:
            endpoint = next(o for k, o in self.objs.items()
                            if self.kind[k] == "endpoint" and o.adapter is connector.adapter)
            call = connector.connect_with_shared_endpoint(q, endpoint, dest, private_data=data)
        else:
            call = connector.connect(q, dest, private_data=data)
        if call.status not in (ndk.Status.SUCCESS, ndk.Status.PENDING):
            self._check()
            return
        incoming = listener.next_connection(timeout=self.TIMEOUT)
        if incoming is None:
            self._done(call)
            self._check()
            return
        self.objs[new] = incoming
        self.kind[new] = "connector"
        incoming.get_connection_data(private_data_length=0)
        if mode == 2:
            incoming.reject(data)
            self._done(call)
            self._check()
            return
        accept = (incoming.accept_ex if mode == 1 else incoming.accept)(self._o(aqp),
                                                                       private_data=data)
        self._done(call)
        if call.wait(0) != ndk.Status.SUCCESS:
            self._done(accept)
            self._check()
            return
        connector.get_connection_data(private_data_length=0)
        if mode == 3:
            connector.reject(data)
            self._done(accept)
            self._check()
            return
        complete = (connector.complete_connect_ex if mode == 1 else connector.complete_connect)()
        self._done(complete)
        self._done(accept)
        if complete.wait(0) == ndk.Status.SUCCESS and accept.wait(0) == ndk.Status.SUCCESS:
            self.qp_of[qp]["peer"] = aqp
            self.qp_of[aqp]["peer"] = qp
        self._check()

    def disc(self, i, conn):
        self._done(self._o(conn).disconnect())
        self._check()

    def conndata(self, i, conn):
        self._o(conn).get_connection_data(private_data_length=0)
        self._check()

    def addr(self, i, conn):
        c = self._o(conn)
        for get in (c.get_local_address, c.get_peer_address):
            try:
                get()
            except self.ndk.NdkError:
                pass
        self._check()

    def close(self, i=None, obj=None):  # noqa: F811 - close(i, obj) is the op, close() the end
        if i is None:
            for ad in self.adapters:
                ad.close()
            # A closed adapter calls nothing back any more (digest 3.1), so what was still in
            # flight when finish() judged is recorded now: a provider that completes twice
            # calls the second time just after the first woke the scenario, which may be after
            # finish()'s check.  Judged here unless the scenario is failing already.
            if sys.exc_info()[1] is None:
                self._check()
            return
        o = self.objs.pop(obj, None)
        if o is not None:
            o.close()
        self._check()

    def finish(self):
        """Flush every QP, drain every CQ: each request in flight completes; no violation."""
        for k, o in list(self.objs.items()):
            if self.kind[k] == "qp" and o.is_open:
                o.flush()
        deadline = time.monotonic() + self.TIMEOUT
        while time.monotonic() < deadline:
            for k, o in list(self.objs.items()):
                if self.kind[k] == "cq" and o.is_open:
                    for r in o.get_results_ex(64):
                        self._complete(r)
            if not any(not req.get("silent") for req in self.out.values()):
                break
            time.sleep(0.001)
        self._check()


# --- the command -----------------------------------------------------------------------------


# The ranges `ndk walk` and the helper ndk_walk (tests/walk/ndk_walk.cpp) take.
MAX_SECONDS = 7 * 24 * 3600.0
SEED_RANGE = (0, 2**64 - 1)
THREADS_RANGE = (1, 16)  # ndk_walk's kMaxThreads
OPS_RANGE = (1, 2**63 - 1)


def add_arguments(parser) -> None:
    """The ``ndk walk`` arguments (cli.py adds the subcommand)."""
    import argparse

    from ._arguments import existing_folder, seconds, whole_number

    parser.add_argument("--provider", default="soft", metavar="P",
                        help="provider name or library path (default soft)")
    parser.add_argument("--seconds", type=seconds(MAX_SECONDS), default=10.0, metavar="N",
                        help="how long to walk (default 10)")
    parser.add_argument("--seed", type=whole_number(SEED_RANGE), metavar="S",
                        help="random seed (default: a random one, printed)")
    parser.add_argument("--threads", type=whole_number(THREADS_RANGE), default=1, metavar="T",
                        help="independent walkers on their own adapter pairs, concurrently "
                             f"({THREADS_RANGE[0]}..{THREADS_RANGE[1]})")
    parser.add_argument("--ops", type=whole_number(OPS_RANGE), metavar="N",
                        help="stop after N operations")
    parser.add_argument("--out", type=existing_folder, default=".", metavar="DIR",
                        help="the folder, which must exist, where a failure's traces and "
                             "scenario go (default .)")
    parser.add_argument("--shrink-seconds", type=seconds(MAX_SECONDS), default=120.0,
                        metavar="N", help="time limit of the shrinker (default 120)")
    parser.add_argument("--no-shrink", action="store_true", help="keep the raw trace only")
    parser.add_argument("--replay", metavar="TRACE",
                        help="run a recorded trace once (and shrink it if it fails)")
    parser.add_argument("--json", action="store_true", help="print the helper's JSON result")
    parser.add_argument("--past-known", action="store_true",
                        help="after a failure the quirk table knows for this provider, walk on "
                             "with the next seed until --seconds are used")
    # hidden: tests of the oracle and the shrinker
    parser.add_argument("--inject-failure-at", type=whole_number(OPS_RANGE),
                        help=argparse.SUPPRESS)
    parser.add_argument("--misbehave", help=argparse.SUPPRESS)
    parser.add_argument("--create-mode", help=argparse.SUPPRESS)


def walk(provider="soft", seconds=10.0, seed=None, threads=1, ops=None, out=".",
         shrink_seconds=120.0, shrink=True, inject_failure_at=None, misbehave=None,
         create_mode=None, replay=None) -> dict[str, Any]:
    """Run the walker (or a replay); its result, with the scenario's path after a failure.
    ``out`` is a folder that exists (FileNotFoundError otherwise: none is made)."""
    if not Path(out).is_dir():
        raise FileNotFoundError(f"ndk.walk: {str(out)!r} is not a folder that exists")
    if replay:
        arguments = ["shrink" if shrink else "replay", str(replay), "--out", str(out),
                     "--shrink-seconds", str(shrink_seconds)]
    else:
        if seed is None:
            seed = random.SystemRandom().randrange(1, 1 << 31)
        arguments = ["run", "--provider", provider, "--seconds", str(seconds), "--seed",
                     str(seed), "--threads", str(threads), "--out", str(out),
                     "--shrink-seconds", str(shrink_seconds)]
        if ops:
            arguments += ["--ops", str(ops)]
        if not shrink:
            arguments.append("--no-shrink")
        for name, value in (("--inject-failure-at", inject_failure_at),
                            ("--misbehave", misbehave), ("--create-mode", create_mode)):
            if value:
                arguments += [name, str(value)]
    result = run_helper(arguments, timeout=seconds + shrink_seconds + 600)
    if result.get("shrunk"):
        result["scenario"] = write_scenario(result["shrunk"])
    return result


def walk_past_known(provider: str, seconds: float, seed: int, out: str | os.PathLike,
                    shrink_seconds: float = 120.0) -> list[dict[str, Any]]:
    """Walk ``provider`` for ``seconds`` in all, seed after seed: a walk that fails the way
    the quirk table says this provider fails (``ndk.quirks.walk_known``) is recorded with that
    reason under ``"known"`` and the next seed walks on; any other failure, or a clean walk
    that used the time, ends it.  The results, in order."""
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left < 1 and results:
            return results
        # Shrinking a known failure would spend the budget for nothing: shrink only the others.
        result = walk(provider, max(left, 1.0), seed, out=out, shrink=False)
        results.append(result)
        failure = result.get("failure")
        known = failure and quirks.walk_known(provider, failure["signature"])
        if not known:
            if failure and result.get("trace"):
                shrunk = walk(replay=result["trace"], out=out, shrink_seconds=shrink_seconds)
                for key in ("shrunk", "shrunk_ops", "shrink_runs", "shrink_note", "scenario"):
                    if key in shrunk:
                        result[key] = shrunk[key]
            return results
        result["known"] = known
        seed += 1


def main_from_args(args) -> int:
    """Handler of ``ndk walk``: a provider that does not load or open here is an error of the
    environment (one line, exit 2, nothing walked or written), as for ``ndk conformance``."""
    if not args.replay:
        from ._environment import EXIT_ENVIRONMENT, open_problem

        line = open_problem(args.provider)
        if line:
            print(f"ndk walk: {line}", file=sys.stderr)
            return EXIT_ENVIRONMENT
    try:
        if args.past_known:
            results = walk_past_known(args.provider, args.seconds, args.seed or 1, args.out,
                                      args.shrink_seconds)
        else:
            results = [walk(args.provider, args.seconds, args.seed, args.threads, args.ops,
                            args.out, args.shrink_seconds, not args.no_shrink,
                            args.inject_failure_at, args.misbehave, args.create_mode,
                            args.replay)]
    except (FileNotFoundError, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"ndk walk: {exc}", file=sys.stderr)
        return 2
    for result in results:
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(format_summary(result))
        if result.get("known"):
            print(f"  known: a quirk of {args.provider}: {result['known']}")
    return 1 if any(r.get("failure") and not r.get("known") for r in results) else 0
