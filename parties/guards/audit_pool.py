"""The pooled audit round: the first round of every daemon session on private data.

Why: one party's auditor (:mod:`parties.guards.audit`) sees only the sessions
that party took part in. After sums over {a,b} and {a,c}, a sum over {b,c}
looks harmless to b (who saw {a,b}) and to c (who saw {a,c}), yet the three
solve for every input; with four parties and ``min_parties = 3`` the same
holds for {a,b,c}, {a,b,d}, {a,c,d}, {b,c,d}. So before the job sends any
data, the session's parties pool what they know.

Protocol (every party of the session, once, before the job function runs):
send every other party one message tagged ``audit/view``, the JSON object
``{"audit": true|false, "sessions": [[analyst, session, [party, ...]], ...]}``
— the party sets of the sessions it contributed to on this (data key, job),
the session itself left out (``audit`` false and no sessions when it does not
audit this job) — and receive theirs. A party that audits the job refuses
(job error kind ``refused``, :class:`parties.jobs.PolicyRefusal`) when the
union of the views, with this session, determines any party's input
(:meth:`parties.guards.audit.AuditGuard.pooled_refusal`); every party computes
the same union, so all refuse together. Otherwise the job starts and the
session stays counted from then on (:meth:`~parties.guards.audit.AuditGuard.started`).

The round runs for every job on private data — also where no party audits —
so that every party of a session exchanges the same messages whatever its
``[audit]`` settings. It costs one tiny message per pair of parties.

Revealed: to the session's parties, the party sets and session names of each
other's earlier sessions on that job (never data or results). A dishonest
party could send a false view and make sessions be refused (denial of
service); the model is semi-honest, as for the protocols themselves.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping
from typing import Any

from mpc.channel import Channel, broadcast, gather_from
from mpc.errors import ProtocolError
from parties.guards.audit import AuditGuard
from parties.guards.audit_state import SESSION_ID, AuditedSession
from parties.guards.policy import SessionRequest
from parties.identity.keyfiles import TLSError
from parties.identity.tls import validate_name
from parties.jobs import JobContext, JobFn, PolicyRefusal

__all__ = [
    "AUDIT_DEADLINE",
    "MAX_VIEW_BYTES",
    "MAX_VIEW_SESSIONS",
    "VIEW_TAG",
    "audit_round",
    "decode_view",
    "encode_view",
    "with_audit_round",
]

VIEW_TAG = "audit/view"
# A view lists one session per distinct party set (the guard keeps one entry per set), so a
# federation of up to 12 parties fits whole; a larger view is refused as malformed before any work.
MAX_VIEW_SESSIONS = 1 << 12
MAX_VIEW_BYTES = 1 << 20  # checked before the JSON is parsed
AUDIT_DEADLINE = 10.0  # seconds the pooled decision may take (off the event loop); past it: refused


def encode_view(view: list[AuditedSession] | None) -> bytes:
    """One party's view as sent: ``None`` (not audited here) is ``{"audit": false, "sessions": []}``."""
    sessions = [[s.analyst, s.session, list(s.parties)] for s in view or ()]
    return json.dumps({"audit": view is not None, "sessions": sessions}, separators=(",", ":")).encode()


def decode_view(payload: bytes, sender: str, known: Collection[str] | None = None) -> list[AuditedSession] | None:
    """A view received from ``sender`` (None if it does not audit the job); ProtocolError if malformed.

    ``known``: the parties this daemon knows (itself, its peers, the session's parties); a view naming
    any other party is refused — an honest party's sessions are over parties its peers know too.
    """

    def bad(what: str) -> ProtocolError:
        return ProtocolError(f"party {sender!r} sent a malformed audit view ({what})")

    if len(payload) > MAX_VIEW_BYTES:
        raise bad(f"larger than {MAX_VIEW_BYTES} bytes")
    try:
        doc = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise bad("not JSON") from None
    if not isinstance(doc, dict) or set(doc) != {"audit", "sessions"} or not isinstance(doc["audit"], bool):
        raise bad("expected the keys audit and sessions")
    items = doc["sessions"]
    if not isinstance(items, list) or len(items) > MAX_VIEW_SESSIONS:
        raise bad(f"sessions must be a list of at most {MAX_VIEW_SESSIONS}")
    if not doc["audit"]:
        if items:
            raise bad("sessions from a party that does not audit")
        return None
    out = []
    for it in items:
        if not (isinstance(it, list) and len(it) == 3 and isinstance(it[1], str) and isinstance(it[2], list)):
            raise bad("a session must be [analyst, session, parties]")
        analyst, sid, parties = it
        if not isinstance(analyst, str) or not all(isinstance(p, str) for p in parties):
            raise bad("names must be strings")
        if not SESSION_ID.match(sid) or not parties or len(set(parties)) != len(parties):
            raise bad("a session id or party list is invalid")
        try:
            validate_name(analyst, "analyst name")
            for p in parties:
                validate_name(p, "party name")
        except TLSError:
            raise bad("a name is invalid") from None
        if sender not in parties:
            raise bad("a session the sender was not part of")
        if known is not None and not all(p in known for p in parties):
            raise bad("a session with a party this daemon does not know")
        out.append(AuditedSession(sid, analyst, tuple(parties), ""))
    return out


async def audit_round(guard: AuditGuard | None, request: SessionRequest, ch: Channel) -> None:
    """Exchange views with the session's other parties; raise :class:`PolicyRefusal` if the pooled sessions disclose."""
    mine = guard.view(request) if guard is not None else None
    await broadcast(ch, VIEW_TAG, encode_view(mine))
    got = await gather_from(ch, VIEW_TAG)
    known = None if guard is None else frozenset({*guard.parties, *request.parties})
    views: Mapping[str, list[AuditedSession] | None] = {p: decode_view(b, p, known) for p, b in got.items()}
    if guard is None:
        return
    pooled = {p: v for p, v in views.items() if v is not None}
    try:  # off the event loop: Health, other sessions and signals go on while it decides
        why = await asyncio.wait_for(asyncio.to_thread(guard.pooled_refusal, request, pooled), AUDIT_DEADLINE)
    except TimeoutError:
        why = f"auditing: the pooled audit did not decide within {AUDIT_DEADLINE:g} s (refused to be safe)"
    if why is not None:
        raise PolicyRefusal(why)
    guard.started(request)


def with_audit_round(fn: JobFn, guard: AuditGuard | None, request: SessionRequest, *, pooled: bool = True) -> JobFn:
    """``fn`` preceded by :func:`audit_round` on the session channel (``pooled``: jobs on private data).

    Without the round (a job on no private data that ``[audit.jobs]`` audits
    anyway) the session only counts as started when its job starts.
    """

    async def run(ctx: JobContext) -> dict[str, Any]:
        if pooled:
            await audit_round(guard, request, ctx.ch)
        elif guard is not None:
            guard.started(request)
        return await fn(ctx)

    run.__name__ = getattr(fn, "__name__", "job")
    return run
