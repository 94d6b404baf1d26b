"""Guards of joint publishing (``[publish]`` of ``party.toml``): pinned hierarchies, and how many
distinct releases of one data key this party joins.

Why
---
In ``publish.horizontal`` and ``publish.vertical`` (:mod:`parties.jobs.publishing`) the hierarchies, the models and the party
set are the analyst's parameters, and every party learns one pass/fail bit per evaluated lattice node
(and the analyst the release). Two attacks follow that no parameter floor stops:

* **Crafted hierarchies.** A hierarchy whose level 1 maps one value ``v`` to its own node and every
  other value to ``*`` turns a node's bit into a targeted predicate ("fewer than k people have
  ``v``"), and a release at that node shows ``v``'s rows nearly ungeneralized. The defence is to
  accept only hierarchies the party has reviewed: ``hierarchies`` pins them, one ARX file per column,
  and a session whose hierarchy of a quasi-identifier differs (or that names a quasi-identifier with
  no pinned hierarchy) is refused before any protocol message.
* **Repeated releases.** Releases of the same rows at different nodes, with different models, or
  over different party sets (``{a, b, c}`` and then ``{a, b}``, whose difference is ``c``'s rows) can
  be combined: the multiple-release problem of microdata publishing (K. Wang, B. C. M. Fung,
  "Anonymizing sequential releases", KDD 2006; X. Xiao, Y. Tao, "m-invariance: towards privacy
  preserving re-publication of dynamic datasets", SIGMOD 2007). ``max_releases`` (default 1) bounds
  the number of *distinct* releases of one data key this party contributes rows to. The same release
  again — the same parameters, the same party set and this party's data file unchanged (size and
  modification time) — is answered: it reveals nothing new, since the search is deterministic and
  the rows are released in a fresh random order. A data source that is not a file (a database
  query) has no cheap fingerprint, so every session on it counts as a new release.

Settings::

    [publish]
    hierarchies = "hierarchies"              # a directory of <column>.csv or ARX's *_hierarchy_<column>.csv, or
                                             # a table { age = "h/age.csv", ... }; default: any hierarchy
    max_releases = 1                         # distinct releases per data key (default 1)
    state = "releases-alice.json"            # default: releases-<name>.json next to party.toml

Counting. At admission a session is refused when this party has already counted ``max_releases``
other releases of the data. A release is counted when this party's job has its result, just before
its share of the release leaves (:func:`with_release_commit`; the state file is written first):
two concurrent sessions with different parameters are both admitted, and the one that finishes
here second is refused here — without this party's share the analyst cannot reconstruct it (the
shares are additive over every party, :mod:`parties.joint.publishing`). A session that fails or is
refused anywhere before that is not counted, so a refusal elsewhere never blocks the analyst's
corrected retry here. The state file (JSON, 0600, written atomically) keeps the counted releases
across restarts and crashes; like the audit's, it is never reset silently — an unreadable or
foreign file stops the daemon with one line.

What it does not prevent: a compute-only party (no rows here) is not limited by its own guard —
each data party protects its rows; bits about the pooled data that the parties learn from sessions
that then fail (the semi-honest model assumes parties run the protocol to its end); releases by
other tools of the same rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parties.guards.audit_state import StateLock
from parties.guards.data_keys import canonical_data_keys
from parties.guards.policy import Guard, Refusal, SessionRequest
from parties.identity.keyfiles import TLSError, write_private

if TYPE_CHECKING:
    from anonymize.publish.hierarchy import Hierarchy
    from parties.jobs import JobContext, JobFn

__all__ = [
    "PUBLISH_JOBS",
    "PublishSettings",
    "PublishStateError",
    "ReleaseGuard",
    "default_state_path",
    "parse_publish",
    "release_digest",
    "with_release_commit",
]

log = logging.getLogger("ppdm.publish")

STATE_FORMAT = "ppdm-party-releases/1"
MAX_STATE_BYTES = 16 << 20
PUBLISH_JOBS = frozenset({"publish.horizontal", "publish.vertical"})
DEFAULT_MAX_RELEASES = 1


class PublishStateError(ValueError):
    """An invalid ``[publish]`` table, pinned hierarchy or release state file (one line)."""


@dataclass(frozen=True)
class PublishSettings:
    """``[publish]``: pinned hierarchies (None: any), the release limit per data key, the state file."""

    hierarchies: Mapping[str, Path] | None = None
    max_releases: int = DEFAULT_MAX_RELEASES
    state: Path | None = None


def default_state_path(base: Path, name: str) -> Path:
    return base / f"releases-{name}.json"


def _abs(base: Path, v: str) -> Path:
    p = Path(os.path.expanduser(v))
    return p if p.is_absolute() else base / p


def parse_publish(t: Any, *, base: Path, name: str) -> PublishSettings:
    """Validate a ``[publish]`` table (relative paths are relative to ``base``)."""
    if t is None:
        return PublishSettings(state=default_state_path(base, name))
    if not isinstance(t, Mapping):
        raise PublishStateError("publish must be a table [publish]")
    extra = sorted(set(t) - {"hierarchies", "max_releases", "state"})
    if extra:
        raise PublishStateError(f"unknown key publish.{extra[0]} (allowed: hierarchies, max_releases, state)")
    m = t.get("max_releases", DEFAULT_MAX_RELEASES)
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise PublishStateError(f"publish.max_releases must be a positive integer, got {m!r}")
    state = default_state_path(base, name)
    if "state" in t:
        v = t["state"]
        if not isinstance(v, str) or not v:
            raise PublishStateError(f"publish.state must be a non-empty path, got {v!r}")
        state = _abs(base, v)
    pins: dict[str, Path] | None = None
    if "hierarchies" in t:
        h = t["hierarchies"]
        if isinstance(h, str) and h:
            d = _abs(base, h)
            if not d.is_dir():
                raise PublishStateError(f"publish.hierarchies: {d} is not a directory of <column>.csv files")
            files = sorted(d.glob("*.csv"))
            arx = [p for p in files if "hierarchy_" in p.stem]  # ARX's names win over other CSV files
            pins = {_column_of(p): p for p in (arx or files)}
            if not pins:
                raise PublishStateError(f"publish.hierarchies: {d} holds no <column>.csv file")
        elif isinstance(h, Mapping) and h and all(isinstance(v, str) and v for v in h.values()):
            pins = {str(c): _abs(base, v) for c, v in h.items()}
        else:
            raise PublishStateError(
                'publish.hierarchies must be a directory or a table { column = "file.csv" }, got ' + repr(h)
            )
    return PublishSettings(hierarchies=pins, max_releases=m, state=state)


def _column_of(p: Path) -> str:
    """The column a hierarchy file is for: its stem, without an ARX ``..._hierarchy_`` prefix (as ``--hierarchies``).

    In a directory that holds ARX-named files (``adult_hierarchy_age.csv``) only those count, so a data
    file beside them is not taken for a hierarchy."""
    return p.stem.split("hierarchy_", 1)[1] if "hierarchy_" in p.stem else p.stem


def release_digest(request: SessionRequest) -> str:
    """SHA-256 of what determines a release: the job, its parameters and the party set (canonical JSON)."""
    doc = {"job": request.job, "params": request.params, "parties": sorted(request.parties)}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(source: Any) -> list[int] | None:
    """A data file's (size, modification time in ns); None for a source that is not one file."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    return [int(st.st_size), int(st.st_mtime_ns)]


@dataclass(frozen=True)
class _Release:
    data: str
    digest: str
    fingerprint: list[int] | None
    session: str
    analyst: str
    parties: tuple[str, ...]
    time: str

    def to_json(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "digest": self.digest,
            "fingerprint": self.fingerprint,
            "session": self.session,
            "analyst": self.analyst,
            "parties": list(self.parties),
            "time": self.time,
        }

    def same(self, digest: str, fingerprint: list[int] | None) -> bool:
        return fingerprint is not None and self.digest == digest and self.fingerprint == fingerprint

    def identity(self) -> tuple[str, tuple[int, ...], str]:
        """Releases with equal identities are one release (a source with no fingerprint: every session)."""
        return (self.digest, tuple(self.fingerprint or ()), self.session if self.fingerprint is None else "")


def _load(path: Path, party: str) -> list[_Release]:
    def bad(what: str) -> PublishStateError:
        return PublishStateError(
            f"release state {path}: {what}; the daemon never resets it (move it away only to forget every release)"
        )

    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            raise bad(f"larger than {MAX_STATE_BYTES >> 20} MiB")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"unreadable ({type(e).__name__})") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise bad(f"not a {STATE_FORMAT} file")
    if doc.get("party") != party:
        raise bad(f"it belongs to party {doc.get('party')!r}, not {party!r}")
    out = []
    for i, r in enumerate(doc.get("releases") or []):
        try:
            fp = r["fingerprint"]
            if fp is not None and (not isinstance(fp, list) or len(fp) != 2 or not all(isinstance(x, int) for x in fp)):
                raise TypeError
            out.append(
                _Release(
                    data=str(r["data"]),
                    digest=str(r["digest"]),
                    fingerprint=fp,
                    session=str(r["session"]),
                    analyst=str(r["analyst"]),
                    parties=tuple(str(p) for p in r["parties"]),
                    time=str(r["time"]),
                )
            )
        except (KeyError, TypeError):
            raise bad(f"entry {i} is malformed") from None
    return out


class ReleaseGuard(Guard):
    """The session guard of ``[publish]`` (see the module docstring)."""

    name = "publish"

    def __init__(self, party: str, settings: PublishSettings, state: Path, data: Mapping[str, Any] | None = None):
        self.party = party
        self.settings = settings
        self.path = Path(state)
        self.data = dict(data or {})
        self.data_keys = canonical_data_keys(self.data)
        self.pins: dict[str, Hierarchy] = {}
        if settings.hierarchies is not None:
            self.pins = self._read_pins(settings.hierarchies)
        self._lock = threading.Lock()
        self._file = StateLock(self.path, "release state", PublishStateError)
        try:
            self.releases = _load(self.path, party)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _read_pins(files: Mapping[str, Path]) -> dict[str, Hierarchy]:
        from anonymize.errors import AnonymizeError
        from anonymize.publish.hierarchy import Hierarchy

        out = {}
        for col, f in files.items():
            try:
                out[col] = Hierarchy.read_arx(f, name=col)
            except AnonymizeError as e:
                raise PublishStateError(f"publish.hierarchies: {e}") from None
        return out

    def close(self) -> None:
        """Release the state file's lock (the daemon stops)."""
        self._file.release()

    # ------------------------------------------------------------------ the checks
    def _hierarchy_refusal(self, params: Mapping[str, Any]) -> Refusal | None:
        """Every quasi-identifier's hierarchy must equal the pinned one (same leaf → ancestor rows)."""
        from anonymize.errors import AnonymizeError
        from anonymize.publish.hierarchy import Hierarchy

        qis = params.get("qi")
        given = params.get("hierarchies")
        if not isinstance(qis, list) or not isinstance(given, Mapping):
            return None  # malformed: the job refuses it with its own error before reading any data
        for c in qis:
            pinned = self.pins.get(c) if isinstance(c, str) else None
            if pinned is None:
                return Refusal(
                    "publish.hierarchies",
                    f"this party publishes only with the hierarchies it pinned in [publish] hierarchies: none for {c!r}",
                )
            rows = given.get(c)
            try:
                ok = isinstance(rows, list) and Hierarchy.from_rows(c, [[str(x) for x in r] for r in rows]) == pinned
            except (AnonymizeError, TypeError):
                ok = False
            if not ok:
                return Refusal(
                    "publish.hierarchies",
                    f"the hierarchy of {c!r} differs from the one this party pinned in [publish] hierarchies",
                )
        return None

    def _identify(self, request: SessionRequest) -> _Release | None:
        """The release a session of this party would make (None: not limited here)."""
        if request.job not in PUBLISH_JOBS:
            return None
        params = request.params
        if _computes_only(self.party, request):
            return None  # no rows here: the data parties protect theirs
        raw_key = params.get("data", "table")
        key = self.data_keys.get(raw_key) if isinstance(raw_key, str) else None
        if key is None:
            return None  # no such data here: the job fails before it reads or sends anything
        fp = _fingerprint(self.data.get(raw_key))
        return _Release(
            key, release_digest(request), fp, request.session, request.analyst, tuple(request.parties), _now()
        )

    def _limit_refusal(self, rec: _Release, raw_key: Any, *, finishing: bool) -> str | None:
        """Why ``rec`` may not be released here (the caller holds the lock), or None."""
        counted = {r.identity() for r in self.releases if r.data == rec.data}
        if rec.identity() in counted:
            return None  # the same release again: nothing new
        m = self.settings.max_releases
        if len(counted) < m:
            return None
        n = len(counted)
        first = " meanwhile" if finishing else " already"
        return (
            f"this party has{first} joined {n} release{'s' if n != 1 else ''} of data {raw_key!r} and allows {m} "
            "([publish] max_releases): another release could be combined with the earlier ones; the same "
            "release again is answered"
        )

    def check(self, request: SessionRequest) -> Refusal | None:
        if request.job not in PUBLISH_JOBS:
            return None
        if self.settings.hierarchies is not None and not _computes_only(self.party, request):
            r = self._hierarchy_refusal(request.params)
            if r is not None:
                return r
        rec = self._identify(request)
        if rec is None:
            return None
        with self._lock:
            why = self._limit_refusal(rec, request.params.get("data", "table"), finishing=False)
        return None if why is None else Refusal("publish.max_releases", why)

    def commit(self, request: SessionRequest) -> str | None:
        """This party's job has its result: count the release (state written) before it leaves, or say why
        it may not leave — a different release of the same data finished here first. Concurrent sessions
        with different parameters are both admitted; the first to finish here is the one released."""
        rec = self._identify(request)
        if rec is None:
            return None
        with self._lock:
            why = self._limit_refusal(rec, request.params.get("data", "table"), finishing=True)
            if why is not None or any(r.identity() == rec.identity() for r in self.releases):
                return why
            self.releases.append(rec)
            try:
                self._save()
            except PublishStateError as e:
                self.releases.pop()
                log.error("%s", e)
                return "this party cannot record the release (see its log), so it does not release it"
        return None

    def _save(self) -> None:
        doc = {"format": STATE_FORMAT, "party": self.party, "releases": [r.to_json() for r in self.releases]}
        try:
            write_private(self.path, json.dumps(doc, indent=1).encode() + b"\n", overwrite=True)
        except (TLSError, OSError) as e:
            raise PublishStateError(
                f"cannot write the release state {self.path}: {getattr(e, 'strerror', None) or e}"
            ) from None

    def counted(self, data: str) -> int:
        """Distinct releases of ``data`` (a canonical data key) counted here."""
        with self._lock:
            return len({r.identity() for r in self.releases if r.data == data})


def _computes_only(party: str, request: SessionRequest) -> bool:
    helpers = request.params.get("compute_only") or []
    return isinstance(helpers, list) and party in helpers


def with_release_commit(fn: JobFn, guard: ReleaseGuard, request: SessionRequest) -> JobFn:
    """``fn`` whose result leaves this party only once :meth:`ReleaseGuard.commit` counted it
    (else the job is refused here: :class:`parties.jobs.PolicyRefusal`, kind ``refused``)."""

    from parties.jobs import PolicyRefusal  # parties.config reads [publish] without loading the jobs

    async def run(ctx: JobContext) -> dict[str, Any]:
        out = await fn(ctx)
        why = guard.commit(request)
        if why is not None:
            raise PolicyRefusal(why)
        return out

    return run


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_release_guard(
    party: str, settings: PublishSettings, base: Path | None, data: Mapping[str, Any]
) -> ReleaseGuard:
    """The ``[publish]`` guard of a daemon (:class:`PublishStateError` if it cannot start)."""
    state = settings.state
    if state is None:
        if base is None:
            raise PublishStateError("[publish] state must be given for a configuration that is not read from a file")
        state = default_state_path(base, party)
    return ReleaseGuard(party, settings, state, data)
