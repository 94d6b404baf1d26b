"""The analyst's side: start one job on every party and collect the results.

    from parties.analyst.client import run_job
    results = await run_job(peers, "exchange", {"size": 1 << 20}, creds=analyst_creds, timeout=60)
    # {"alice": {...}, "bob": {...}}

:func:`run_job` picks a fresh session id, calls ``StartJob`` on all parties
concurrently and returns ``{party: result}``. If any party fails, it raises ONE
:class:`PartyError` naming the party and the reason (e.g.
``session 3f2a… (exchange) failed: party 'bob' unreachable (connection lost)``),
and cancels the calls still running (those parties abort the session). When
the first failure only reports a consequence (``peer 'x' aborted...``) it waits
up to ``grace`` seconds for the root cause from another party.

The analyst connects with its own certificate (CN listed in each party's
``analysts``) and checks every party's server certificate against that
party's name.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from parties.config import PeerInfo
from parties.identity.tls import Credentials
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from parties.runtime.grpc_channel import channel_options, short_details

__all__ = [
    "PartyError",
    "JobOutcome",
    "run_job",
    "start_job",
    "health",
    "abort",
    "new_session_id",
    "run_sync",
    "MAX_RESULT_BYTES",
]

MAX_RESULT_BYTES = 256 << 20
RPC_SLACK = 5.0  # the party's own deadline fires before the call's
# root causes outrank consequences ("peer ... aborted")
_PRIORITY = {"refused": 0, "job": 1, "internal": 1, "denied": 2, "unreachable": 3, "timeout": 4, "peer": 5}


def _rank(o: JobOutcome) -> int:
    """Priority of a failed outcome's error kind (lower = closer to the root cause)."""
    return _PRIORITY.get(o.error[0], 1) if o.error else len(_PRIORITY)


class PartyError(Exception):
    """A joint job failed; ``party`` is where, ``reason`` why, ``errors`` every party's error."""

    def __init__(
        self,
        session: str,
        job: str,
        party: str,
        kind: str,
        reason: str,
        errors: Mapping[str, tuple[str, str]] | None = None,
    ):
        self.session, self.job, self.party, self.kind, self.reason = session, job, party, kind, reason
        self.errors = dict(errors or {})
        super().__init__(f"session {session} ({job}) failed: {reason}")


@dataclass
class JobOutcome:
    """One party's answer: ``result`` or ``(kind, message)`` in ``error``."""

    party: str
    result: Any = None
    error: tuple[str, str] | None = None
    bytes_sent: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def new_session_id() -> str:
    return secrets.token_hex(8)


def _open(peer: PeerInfo, creds: Credentials) -> grpc.aio.Channel:
    return grpc.aio.secure_channel(
        peer.address, creds.channel_credentials(), options=channel_options(peer.name, MAX_RESULT_BYTES)
    )


def _rpc_failure(peer: str, e: grpc.aio.AioRpcError) -> tuple[str, str]:
    code, d = e.code(), short_details(e)
    if code == grpc.StatusCode.UNAVAILABLE:
        return "unreachable", f"party {peer!r} unreachable ({d})"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "timeout", f"party {peer!r} did not answer before the deadline"
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return "denied", f"party {peer!r} refused the analyst: {d}"
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return "refused", f"party {peer!r}: {d}"
    return "internal", f"party {peer!r}: {code.name}: {d}"


async def start_job(
    peer: PeerInfo,
    session: str,
    job: str,
    params: Mapping[str, Any],
    parties: Sequence[str],
    *,
    creds: Credentials,
    timeout: float,
) -> JobOutcome:
    """Call ``StartJob`` on one party; never raises for party/transport failures (see ``error``)."""
    req = pb.StartJobRequest(
        session=session, job=job, params_json=json.dumps(dict(params)), parties=list(parties), timeout_seconds=timeout
    )
    async with _open(peer, creds) as ch:
        try:
            r = await pb_grpc.PartyStub(ch).StartJob(req, timeout=timeout + RPC_SLACK)
        except grpc.aio.AioRpcError as e:
            return JobOutcome(peer.name, error=_rpc_failure(peer.name, e))
    if r.WhichOneof("outcome") == "result_json":
        try:
            res = json.loads(r.result_json)
        except json.JSONDecodeError:
            return JobOutcome(peer.name, error=("internal", f"party {peer.name!r} sent a result that is not JSON"))
        return JobOutcome(peer.name, result=res, bytes_sent=r.bytes_sent, seconds=r.seconds)
    kind = r.error.kind or "internal"
    msg = r.error.message or "failed without a message"
    return JobOutcome(peer.name, error=(kind, _naming(peer.name, msg)), bytes_sent=r.bytes_sent, seconds=r.seconds)


def _naming(party: str, msg: str) -> str:
    """``msg`` prefixed with ``party 'NAME': `` unless it already names that party first."""
    if msg.startswith((f"party {party!r}", f"refused by {party!r}")):
        return msg
    return f"party {party!r}: {msg}"


async def health(peer: PeerInfo, creds: Credentials, timeout: float = 3.0, session: str = "") -> pb.HealthReply:
    """``Health`` of one party, and the state there of this analyst's ``session`` (raises ``AioRpcError``)."""
    async with _open(peer, creds) as ch:
        return await pb_grpc.PartyStub(ch).Health(pb.HealthRequest(session=session), timeout=timeout)


async def abort(peer: PeerInfo, creds: Credentials, session: str, reason: str = "", timeout: float = 3.0) -> None:
    """Abort this analyst's ``session`` at one party (raises ``AioRpcError``: e.g. ``PERMISSION_DENIED``
    for another analyst's session, ``NOT_FOUND`` if it is not live there)."""
    async with _open(peer, creds) as ch:
        await pb_grpc.PartyStub(ch).Abort(pb.AbortRequest(session=session, reason=reason), timeout=timeout)


async def run_job(
    parties: Sequence[PeerInfo],
    job: str,
    params: Mapping[str, Any] | None = None,
    *,
    creds: Credentials,
    timeout: float = 60.0,
    session: str | None = None,
    grace: float = 1.0,
    outcomes: dict[str, JobOutcome] | None = None,
) -> dict[str, Any]:
    """Run ``job`` on every party (in this protocol order); return ``{party: result}``.

    Raises :class:`PartyError` naming the failing party and reason. Pass a
    dict as ``outcomes`` to also get each party's bytes sent and run time.
    """
    if not parties:
        raise ValueError("run_job needs at least one party")
    names = [p.name for p in parties]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate party names: {names}")
    sid = session or new_session_id()
    params = dict(params or {})
    tasks = {
        asyncio.create_task(start_job(p, sid, job, params, names, creds=creds, timeout=timeout)): p.name
        for p in parties
    }
    got: dict[str, JobOutcome] = {}
    first_failure: float | None = None
    pending = set(tasks)
    try:
        while pending:
            wait = None if first_failure is None else max(0.0, first_failure + grace - time.monotonic())
            done, pending = await asyncio.wait(pending, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                o = t.result()
                got[o.party] = o
                if o.error is not None and first_failure is None:
                    first_failure = time.monotonic()
            errs = [o for o in got.values() if o.error]
            if any(_rank(o) < _PRIORITY["peer"] for o in errs):
                break  # a root cause: no need to wait for the others
            if first_failure is not None and time.monotonic() >= first_failure + grace:
                break
    finally:
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    if outcomes is not None:
        outcomes.update(got)
    errs = sorted((o for o in got.values() if o.error), key=_rank)
    if errs:
        root = errs[0]
        kind, message = root.error or ("internal", "")
        raise PartyError(sid, job, root.party, kind, message, {o.party: o.error for o in errs if o.error})
    return {n: got[n].result for n in names}


# --------------------------------------------------------------------------- sync use
T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ppdm-client-loop", daemon=True).start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run a client coroutine from synchronous code and return its result.

    All such calls share one event loop in a background thread: grpc.aio keeps
    per-loop state, and a fresh ``asyncio.run`` per call leaves it pointing at
    closed loops (spurious "Event loop is closed" errors). Interrupting the
    wait (Ctrl-C) cancels the coroutine, so the parties abort the session.
    """
    loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("run_sync called from its own event loop; await the coroutine instead")
    fut = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return fut.result(timeout)
    except BaseException:
        fut.cancel()
        raise
