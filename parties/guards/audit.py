"""Auditing the party daemons: refuse a session whose result would determine one party's input.

The attack
----------
The analyst picks the party set of every session. A secure sum over
{alice, bob, carol} and then the same over {alice, bob} give carol's input as
their difference, though each session alone passes every ``min_parties``
rule; sums over {a,b,c,d} and {a,b,c} do the same to d, and sums over
{a,b,c}, {a,b,d}, {a,c,d}, {b,c,d} solve for every input. This is the
differencing (tracker) attack on aggregate queries (D. E. Denning, P. J.
Denning, M. D. Schwartz, "The Tracker: A Threat to Statistical Database
Security", ACM TODS 4(1), 1979).

The defence
-----------
Each party runs the online *sum auditor* (F. Y. Chin, G. Özsoyoğlu, "Auditing
and inference control in statistical databases", IEEE TSE 8(6), 1982; C. C.
Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.4;
:class:`anonymize.audit.SumAuditor`) with the **parties as records** and every
session as a **sum query over its party set**: the results of sessions over
``P_1..P_k`` fix ``A x`` (rows ``1_{P_j}``) and nothing else, so party ``p``'s
input is determined iff ``e_p`` is in the row space of ``A``. It protects every
party's input, not only this daemon's: alice and bob refuse the {alice, bob}
sum after {alice, bob, carol} to protect carol, who never sees it. A vector
result (a secure sum of vectors, joint mining's counts) is one query: every
coordinate is a sum over the same set.

Two checks, both before the job sends any data:

1. **At admission** (``check``, a session guard): the auditor of this
   (data key, job) over the sessions this party contributed to decides *and*
   commits in one step under a lock, and the state file is written
   (:mod:`parties.guards.audit_state`), so two concurrent sessions cannot each pass
   alone and disclose together, and a restart cannot reset it. A refusal is
   one line naming the party whose input would follow and the sessions it
   would combine with.
2. **Pooled** (:mod:`parties.guards.audit_pool`, the first round of every session on
   private data): the session's parties exchange the party sets of the
   sessions each has contributed to, and each refuses if their union, with
   this session, determines any input. One party sees only its own sessions:
   after {a,b} and {a,c}, the sum over {b,c} looks harmless to b ({a,b}) and to
   c ({a,c}), yet the three solve for every input — their pooled views show it.

Which sessions are audited (:meth:`parties.guards.audit_state.AuditSettings.audits`):
by default every job whose result is a sum over the parties' inputs —
``secure_sum``, ``mine.horizontal`` (its counts and ``N`` are secure sums;
with ``reveal_counts=False``, ``--private-counts``, it reveals only threshold
bits ``Σ count ≥ s·N``, but those are functions of the same party-set sums —
a binary search over ``min_support`` turns them back into exact sums — so
such runs are audited as sums of the same kind). ``mine.vertical`` is not
audited by default: its counts are scalar products across the parties'
columns, not sums over parties; a session over {a,b} reveals a function of a's
and b's columns that a session over {a,b,c} reveals again, so no difference of
party sets isolates one party, and what it does reveal of one party (supports
of itemsets within that party's own items) every session with that party
reveals — a matter for ``[policy]`` (``min_support`` floors), not for an
auditor of party sets.

Decisions read only the party sets of sessions, never an input or a result,
so the auditor is *simulatable* (K. Kenthapadi, N. Mishra, K. Nissim,
"Simulatable auditing", PODS 2005): a refusal tells the analyst nothing about
the data. It does tell him that sessions over certain sets were run on that
data — his own are named in the refusal, other analysts' only counted (one
state serves every analyst, so analysts cannot pool answers around it). The
pooled round tells the session's parties the party sets (and session names)
of each other's earlier sessions on that job.

Failed sessions. A session whose job started here stays counted, even if it
failed: its result may have reached the analyst through another party (he
can take carol's answer and cancel the call at alice and bob), so un-counting
it at alice and bob would let a second session difference it. A session whose
job never started here — refused by a later guard or the pooled round, or not
startable — is un-counted (``withdrawn``): without this party's input no party
can finish a sum over it.

What it does not prevent
------------------------
* Nothing more about sessions *none* of the new session's parties took part in
  than the pooled round's blind-spot rule assumes (:mod:`parties.guards.audit_blindspot`:
  any sums over at least ``min_parties`` of the parties outside the session): parties
  that no party of the session knows of, or a lower ``min_parties`` elsewhere.
* Partial disclosure: results narrow inputs without pinning them (counts are
  non-negative; a sum of 0 over counts pins every summand).
* Horizontal mining's secure union of locally large itemsets (a set union,
  not a sum): {a,b,c} then {a,b,d} shows itemsets locally large at c. Use
  ``candidates="all"`` (no union) where that matters.
* Data that change between sessions. One file under two ``[data]`` keys is
  audited as one (:func:`canonical_data_keys`).
* Dishonest parties: a peer may send a false view (a denial of service, not a
  disclosure); the model is semi-honest.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from anonymize.audit import SumAuditor
from parties.guards.audit_blindspot import blind_spot_disclosures
from parties.guards.audit_state import (
    AuditedSession,
    AuditSettings,
    AuditStateError,
    StateLock,
    default_state_path,
    load_state,
    save_state,
)
from parties.guards.data_keys import canonical_data_keys
from parties.guards.policy import ABSOLUTE_MIN_PARTIES, Guard, Policy, Refusal, SessionRequest, min_parties_for

if TYPE_CHECKING:
    from parties.config import PartyConfig

__all__ = [
    "ALL_DATA",
    "AuditGuard",
    "DATA_KEY_OF",
    "canonical_data_keys",
    "combination",
    "explain",
    "make_audit_guard",
    "register_data_key",
]

log = logging.getLogger("ppdm.audit")

ALL_DATA = "*"  # the data key of a job that does not say which [data] it reads: one state for all its sessions


def _secure_sum_key(params: Mapping[str, Any]) -> str | None:
    k = params.get("key", "vector")
    return k if isinstance(k, str) else None


def _mining_key(params: Mapping[str, Any]) -> str | None:
    k = params.get("data", "transactions")
    return k if isinstance(k, str) else None


#: How a job's params name the ``[data]`` key it reads (``None``: it will fail before reading anything).
#: A job not listed here is audited with one state for all its sessions (:data:`ALL_DATA`).
DATA_KEY_OF: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "secure_sum": _secure_sum_key,
    "mine.horizontal": lambda params: _mining_key(params),
    "mine.vertical": lambda params: _mining_key(params),
}


def register_data_key(job: str, key_of: Callable[[Mapping[str, Any]], str | None]) -> None:
    """Declare which ``[data]`` key a session of ``job`` reads, from its params (for jobs in other modules)."""
    DATA_KEY_OF[job] = key_of


# --------------------------------------------------------------------------- explaining a refusal
EXPLAIN_PRIME = 2_147_483_647  # 2^31 - 1: products of two residues fit in int64


def combination(sets: Sequence[Iterable[str]], target: str) -> list[int] | None:
    """Indices ``j`` of a combination ``Σ_j λ_j 1_{sets[j]} = e_target`` (all ``λ_j ≠ 0``), or None if none exists.

    Only says *which* earlier sessions a refused one would combine with (the
    decision itself is the exact auditor's). Gauss–Jordan elimination on the
    parties × sets incidence matrix modulo the prime 2^31 − 1 (numpy int64,
    exact residues); free coefficients are 0, so the sets named are
    independent. The answer modulo p equals the rational one unless p divides
    one of the few minors involved; then a refusal names other sessions than
    it could — its wording, never its decision.
    """
    p = EXPLAIN_PRIME
    cols = [frozenset(s) for s in sets]
    names = sorted(set().union(*cols) | {target})
    m = len(cols)
    a = np.array([[n in c for c in cols] + [n == target] for n in names], dtype=np.int64)
    piv: list[int] = []
    r = 0
    for c in range(m):
        nz = np.flatnonzero(a[r:, c])
        if nz.size == 0:
            continue
        k = r + int(nz[0])
        a[[r, k]] = a[[k, r]]
        a[r] = a[r] * pow(int(a[r, c]), p - 2, p) % p
        f = a[:, c].copy()
        f[r] = 0
        a = (a - np.outer(f, a[r]) % p) % p
        piv.append(c)
        r += 1
        if r == len(names):
            break
    if a[r:, m].any():
        return None
    return [c for i, c in enumerate(piv) if a[i, m]]


def _fmt_set(parties: Iterable[str]) -> str:
    return "{" + ", ".join(parties) + "}"


def explain(request: SessionRequest, data: str, earlier: Sequence[AuditedSession], disclosed: Sequence[str]) -> str:
    """The refusal line: which party's input the session would determine, with which earlier sessions.

    ``earlier``: the sessions the decision combined the request with. The
    analyst's own sessions are named; other analysts' are only counted.
    """
    target = disclosed[0]
    support = combination([request.parties, *(s.parties for s in earlier)], target)
    used = list(earlier) if support is None else [earlier[j - 1] for j in support if j > 0]
    without_me = support is not None and 0 not in support
    mine = [s for s in used if s.analyst == request.analyst]
    others = len(used) - len(mine)
    parts = []
    if mine:
        shown = [f"{s.session} over {_fmt_set(s.parties)}" for s in mine[:3]]
        more = f" and {len(mine) - 3} more of yours" if len(mine) > 3 else ""
        parts.append(("session " if len(mine) == 1 else "sessions ") + " and ".join(shown) + more)
    if others:
        parts.append(
            f"{others} session{'s' if others > 1 else ''} of {'another analyst' if others == 1 else 'other analysts'}"
        )
    also = ""
    if len(disclosed) == 2:
        also = f" (and {disclosed[1]}'s)"
    elif len(disclosed) > 2:
        also = f" (and those of {len(disclosed) - 1} other parties)"
    where = "" if data == ALL_DATA else f" on {data!r}"
    if without_me:  # the sessions admitted so far already determine it (a blind spot, or concurrent sessions)
        return f"auditing: the results of {' and '.join(parts)} already determine {target}'s input{also}"
    with_ = f", with the results of {' and '.join(parts)}," if parts else ""
    return (
        f"auditing: the result of this {request.job}{where} over {_fmt_set(request.parties)}{with_} "
        f"would determine {target}'s input{also}"
    )


# --------------------------------------------------------------------------- the state of one (data key, job)
@dataclass
class _Entry:
    """A distinct party set: the session recorded for it, and whether that session's job ran (or was reloaded)."""

    owner: AuditedSession
    permanent: bool
    backups: list[AuditedSession] = field(default_factory=list)  # later sessions with this set, not started yet


class _Ledger:
    """The audit of one (data key, job): one entry per distinct party set, in admission order."""

    def __init__(self, data: str, job: str, records: Iterable[str]):
        self.data, self.job = data, job
        self.records = list(dict.fromkeys(records))
        self.entries: dict[frozenset[str], _Entry] = {}
        self.auditor = SumAuditor(self.records)

    def add_records(self, parties: Iterable[str]) -> None:
        new = [p for p in dict.fromkeys(parties) if p not in self.auditor.index.pos]
        if new:
            self.records.extend(new)
            self.auditor.add_records(new)

    def sessions(self) -> list[AuditedSession]:
        return [e.owner for e in self.entries.values()]

    def rebuild(self) -> None:
        """A fresh auditor over exactly the recorded sets (after one was withdrawn)."""
        self.auditor = SumAuditor(self.records)
        for s in self.entries:
            self.auditor.commit(sorted(s))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class AuditGuard(Guard):
    """The session guard auditing sums over party sets (see the module docstring).

    ``party``: this daemon; ``state``: the state file (read now, locked until
    :meth:`close`); ``parties``: the parties it may run sessions with (more are
    added as sessions name them); ``data``: the ``[data]`` table.
    """

    name = "audit"

    def __init__(
        self,
        party: str,
        settings: AuditSettings,
        state: Path,
        *,
        parties: Iterable[str] = (),
        data: Mapping[str, Any] | None = None,
        policy: Policy | None = None,
    ):
        self.party = party
        self.policy = policy  # the fewest parties of a session (None: the absolute minimum, 2)
        self.settings = settings
        self.path = Path(state)
        self.parties = list(dict.fromkeys([party, *parties]))
        self.data_keys = canonical_data_keys(data or {})
        self._lock = threading.Lock()
        # sessions admitted here whose job has not started: (analyst, session) -> (ledger key, party set)
        self._pending: dict[tuple[str, str], tuple[tuple[str, str], frozenset[str]]] = {}
        self._file = StateLock(self.path)
        try:
            self.ledgers: dict[tuple[str, str], _Ledger] = {}
            for (d, j), sessions in load_state(self.path, party).items():
                self.ledgers[d, j] = self._replay(d, j, sessions)
        except BaseException:
            self.close()
            raise

    def _replay(self, data: str, job: str, sessions: list[AuditedSession]) -> _Ledger:
        led = _Ledger(data, job, self.parties)
        for i, s in enumerate(sessions):
            led.add_records(s.parties)
            q = frozenset(s.parties)
            bad = "names the party set of an earlier entry" if q in led.entries else None
            if bad is None and not led.auditor.submit(sorted(q)).allowed:
                bad = "would have been refused"
            if bad is not None:
                raise AuditStateError(
                    f"audit state {self.path}: session {s.session!r} ({job} on {data!r}, entry {i}) {bad}; "
                    "the file was edited or is corrupt — the daemon never resets an audit state"
                )
            led.entries[q] = _Entry(s, permanent=True)
        return led

    def close(self) -> None:
        """Release the state file's lock (the daemon stops)."""
        self._file.release()

    # ------------------------------------------------------------------ which sessions, which state
    def audited(self, request: SessionRequest) -> bool:
        return self.settings.audits(request.job, private_data=request.private_data, sum_style=request.sum_style)

    def data_key(self, request: SessionRequest) -> str | None:
        """The (canonical) ``[data]`` key the session reads here; None if it names none configured here."""
        key_of = DATA_KEY_OF.get(request.job)
        if key_of is None:
            return ALL_DATA
        try:
            k = key_of(request.params)
        except Exception:  # a malformed parameter: the job refuses it before reading any data
            return None
        return None if k is None else self.data_keys.get(k)

    def ledger_of(self, request: SessionRequest) -> _Ledger | None:
        """The ledger a session is audited in (None: not audited here)."""
        if not self.audited(request):
            return None
        data = self.data_key(request)
        if data is None:  # no such data here: the job fails before it reads or sends anything
            return None
        led = self.ledgers.get((data, request.job))
        if led is None:
            led = self.ledgers[data, request.job] = _Ledger(data, request.job, self.parties)
        return led

    # ------------------------------------------------------------------ the guard
    def check(self, request: SessionRequest) -> Refusal | None:
        """Decide and commit in one step (under the lock, state file written before returning)."""
        with self._lock:
            led = self.ledger_of(request)
            if led is None:
                return None
            led.add_records(request.parties)
            q = frozenset(request.parties)
            d = led.auditor.check(sorted(q))
            if not d.allowed:
                disclosed = [str(p) for p in d.discloses]
                log.warning(
                    "session %s/%s: %s on %r over %s refused by the audit: would determine the input of %s",
                    request.analyst,
                    request.session,
                    request.job,
                    led.data,
                    _fmt_set(request.parties),
                    ", ".join(disclosed),
                )
                return Refusal(f"audit.{request.job}", explain(request, led.data, led.sessions(), disclosed))
            rec = AuditedSession(request.session, request.analyst, tuple(request.parties), _now())
            entry = led.entries.get(q)
            if entry is None:
                led.entries[q] = _Entry(rec, permanent=False)
                led.auditor.commit(sorted(q))
                try:
                    self._save()
                except AuditStateError as e:
                    del led.entries[q]
                    led.rebuild()
                    log.error("session %s/%s refused: %s", request.analyst, request.session, e)
                    return Refusal("audit.state", "auditing: cannot record the session (see that party's log)")
            elif not entry.permanent:
                entry.backups.append(rec)
            self._pending[request.analyst, request.session] = ((led.data, led.job), q)
        return None

    def started(self, request: SessionRequest) -> None:
        """The session's job starts here now: from here on it stays counted whatever happens."""
        with self._lock:
            p = self._pending.pop((request.analyst, request.session), None)
            if p is None:
                return
            entry = self.ledgers[p[0]].entries.get(p[1])
            if entry is None or entry.permanent:
                return
            entry.permanent = True
            if not _same(entry.owner, request):  # a later session with this set started first: it is the record
                entry.owner = next(b for b in entry.backups if _same(b, request))
                try:
                    self._save()
                except AuditStateError as e:  # the file names another session with the same set: still sound
                    log.error("session %s/%s: %s", request.analyst, request.session, e)
            entry.backups.clear()

    def withdrawn(self, request: SessionRequest, reason: str) -> None:
        """The session will not run here: un-count it (without this party's input no sum over it exists)."""
        with self._lock:
            p = self._pending.pop((request.analyst, request.session), None)
            if p is None:
                return
            led = self.ledgers[p[0]]
            entry = led.entries.get(p[1])
            if entry is not None and not entry.permanent:
                if _same(entry.owner, request):
                    if entry.backups:
                        entry.owner = entry.backups.pop(0)
                    else:
                        del led.entries[p[1]]
                        led.rebuild()
                    try:
                        self._save()
                    except AuditStateError as e:  # the file still counts it: the safe side
                        log.error("session %s/%s withdrawn, but %s", request.analyst, request.session, e)
                else:
                    entry.backups = [b for b in entry.backups if not _same(b, request)]
            log.info(
                "session %s/%s withdrawn before its job ran here (%s): not counted by the audit",
                request.analyst,
                request.session,
                " ".join(reason.split())[:200],
            )

    def finished(self, request: SessionRequest, result: Mapping[str, Any] | None, error: str | None) -> None:
        """A session ended. Counted if its job started here (whatever the outcome); else withdrawn."""
        if (request.analyst, request.session) in self._pending:
            self.withdrawn(request, error or "ended before its job started")
        elif error is not None and self.audited(request):
            log.info(
                "session %s/%s failed after its job started; the audit keeps it counted "
                "(its result may have reached the analyst through another party)",
                request.analyst,
                request.session,
            )

    # ------------------------------------------------------------------ the pooled round (parties.guards.audit_pool)
    def view(self, request: SessionRequest) -> list[AuditedSession] | None:
        """The sessions this party contributed to on the request's (data key, job), but the request itself.

        None when this party does not audit the session.
        """
        with self._lock:
            led = self.ledger_of(request)
            if led is None:
                return None
            return [s for s in led.sessions() if not _same(s, request)]

    def pooled_refusal(self, request: SessionRequest, views: Mapping[str, Sequence[AuditedSession]]) -> str | None:
        """The refusal line if the pooled sessions and this one determine any input, else None.

        Safe to call off the event loop (the pooled round runs it in a worker thread): it reads
        this guard's state under its lock, then computes on copies.
        """
        with self._lock:
            led = self.ledger_of(request)
            if led is None:
                return None
            mine = [s for s in led.sessions() if not _same(s, request)]
            data = led.data
        pooled: dict[frozenset[str], AuditedSession] = {}
        for s in [*mine, *(s for v in views.values() for s in v)]:
            pooled.setdefault(frozenset(s.parties), s)
        # records: only what every party of the session sees, so that all of them decide alike
        names = sorted({*request.parties, *(p for q in pooled for p in q)})
        aud = SumAuditor(names)
        for q in pooled:
            aud.commit(sorted(q))
        aud.commit(list(request.parties))
        disclosed = [str(p) for p in aud.disclosed()]
        if not disclosed:
            return self._blind_spot_refusal(request, data, list(pooled.values()))
        log.warning(
            "session %s/%s: %s on %r over %s refused by the pooled audit: the input of %s would follow",
            request.analyst,
            request.session,
            request.job,
            data,
            _fmt_set(request.parties),
            ", ".join(disclosed),
        )
        return explain(request, data, list(pooled.values()), disclosed)

    def min_parties(self, request: SessionRequest) -> int:
        """The fewest parties a session of this job may have (this party's policy, assumed for every party)."""
        if self.policy is None:
            return ABSOLUTE_MIN_PARTIES
        m = min_parties_for(self.policy, request.job, private_data=request.private_data, sum_style=request.sum_style)
        return max(ABSOLUTE_MIN_PARTIES, m)

    def _blind_spot_refusal(self, request: SessionRequest, data: str, pooled: list[AuditedSession]) -> str | None:
        """Refuse when sessions none of this session's parties saw could complete a disclosure
        (:mod:`parties.guards.audit_blindspot`)."""
        m = self.min_parties(request)
        universe = {*self.parties, *request.parties, *(p for s in pooled for p in s.parties)}
        at_risk = blind_spot_disclosures((frozenset(s.parties) for s in pooled), request.parties, universe, m)
        if not at_risk:
            return None
        outside = sorted(universe - set(request.parties))
        log.warning(
            "session %s/%s: %s on %r over %s refused by the pooled audit: with sums over parties outside it, "
            "which none of its parties can see, the input of %s could follow",
            request.analyst,
            request.session,
            request.job,
            data,
            _fmt_set(request.parties),
            ", ".join(at_risk),
        )
        where = "" if data == ALL_DATA else f" on {data!r}"
        return (
            f"auditing: the result of this {request.job}{where} over {_fmt_set(request.parties)}, with "
            f"{len(pooled)} earlier session{'s' if len(pooled) != 1 else ''} and sums over sets of at least {m} of "
            f"{_fmt_set(outside)} that none of its parties can see, could determine {at_risk[0]}'s input "
            "(audit.blind_spot)"
        )

    def _save(self) -> None:
        save_state(self.path, self.party, {k: led.sessions() for k, led in self.ledgers.items()})


def _same(s: AuditedSession, request: SessionRequest) -> bool:
    return s.session == request.session and s.analyst == request.analyst


def make_audit_guard(config: PartyConfig, known_jobs: Iterable[str]) -> AuditGuard | None:
    """The auditor of a daemon's ``[audit]`` (None when disabled); :class:`AuditStateError` if it cannot start."""
    settings: AuditSettings = config.audit
    known = sorted(known_jobs)
    unknown = sorted(set(settings.jobs) - set(known))
    if unknown:
        raise AuditStateError(f"[audit] jobs names unknown job {unknown[0]!r} (known: {', '.join(known)})")
    if not settings.enabled:
        return None
    state = settings.state
    if state is None:
        if config.path is None:
            raise AuditStateError("[audit] state must be given for a configuration that is not read from a file")
        state = default_state_path(config.path.parent, config.name)
    return AuditGuard(
        config.name, settings, state, parties=sorted(config.peers), data=config.data, policy=config.policy
    )
