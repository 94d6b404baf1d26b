"""The policy engine: from (user, purpose) to a release that meets the owner's privacy requirement
and the user's quality requirement — or one message saying which conflicts with which, by how much.

Xu & Guo, "Privacy protection model and parameter optimization method for data dissemination",
Computer Engineering 47(5):124–130, 2021, §2 (Fig. 1): the user's identity and purpose give a
security level; the level gives a method and initial parameters; the release is evaluated against
the data owner's privacy requirement; "if it fails, adjust the parameters; if adjusting the
parameters does not help, adjust the method", then publish. Here:

1. **level** — :meth:`.policyfile.Policy.level_for`;
2. **methods** — the paper's methods are the model families: the level's, then — if the level may
   ``escalate`` — each stronger one (k-anonymity < l-diversity < t-closeness), all with the level's
   algorithm first; then the same families with every other algorithm in :mod:`..registry` of the
   level's ``kinds`` that honours them (so algorithms registered later are found without changing
   this code). A weaker family than the level's is never used: the level is the owner's minimum;
3. **parameters** — for each method, the level's initial parameters are evaluated first; if the
   release misses a requirement the paper's selection runs for that family (:mod:`.selection`:
   the k range, Algorithm 1 for l, Algorithm 2 for t);
4. **conflict** — when no method meets both, :class:`PolicyConflict` says whether the privacy
   requirement alone, the quality requirement alone, or the two together cannot be met, with the
   best value reached on each side and its distance to the bound.

Every release evaluated is listed in the decision (``steps``), so a report shows how the choice was
made. Requirements a table can never meet (P_max below the share of its most frequent sensitive
value) are refused before anything runs (:func:`check_possible`).

Suppressed rows are released and measured as the policy's ``release.suppressed_rows`` says (or the
caller's ``suppressed_rows``, ``ppdm publish --suppressed-rows``): ``star``, ``drop`` or ``arx``. With
``arx`` (ARX's outliers) the ``*`` group is written but not judged: every requirement — the owner's P,
k, l, t and the level's minimums — is measured on the classes outside it, and the report says which
models the group breaks (``suppressed_group``, computed as ``ppdm anonymize --suppressed-rows arx`` does).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ...dp.randomness import RandomSource
from ...errors import AnonymizeError
from .. import metrics as M
from .. import registry
from ..anonymizer import AnonymizationResult, anonymize_table
from ..hierarchy import Hierarchy
from ..table import EncodedTable, Schema
from .evaluate import ReleaseEvaluator, family_models, honours, methods_in_registry
from .measure import (
    FAMILIES,
    Candidate,
    PrivacyRequirement,
    QualityRequirement,
    check_suppressed_rows,
    disclosure_floor,
    frame_disclosure,
    measure_candidate,
    measured_on,
    star_rows,
)
from .policyfile import Level, Policy
from .selection import select_k, select_l, select_t

__all__ = [
    "PolicyConflict",
    "Step",
    "Decision",
    "PolicyRelease",
    "candidate_methods",
    "check_possible",
    "decide",
    "level_violations",
    "publish_with_policy",
    "with_suppressed_rows",
]


class PolicyConflict(AnonymizeError):
    """No method of the level meets both requirements (the message says which and by how much);
    ``decision`` holds every release evaluated."""

    def __init__(self, message: str, decision: Decision):
        super().__init__(message)
        self.decision = decision


class _OutOfBudget(Exception):
    pass


class _Budgeted:
    """An evaluator that refuses to run the algorithm more than ``budget.left`` more times."""

    def __init__(self, ev: ReleaseEvaluator, budget: dict):
        self._ev, self._budget = ev, budget

    def __getattr__(self, name):
        return getattr(self._ev, name)

    def _spend(self, before: int) -> None:
        self._budget["used"] += self._ev.runs - before

    def evaluate(self, family, params):
        if self._budget["used"] >= self._budget["max"]:
            raise _OutOfBudget
        before = self._ev.runs
        try:
            return self._ev.evaluate(family, params)
        finally:
            self._spend(before)

    def evaluate_k(self, ks):
        if self._budget["used"] + 1 > self._budget["max"]:
            raise _OutOfBudget
        before = self._ev.runs
        try:
            return self._ev.evaluate_k(ks)
        finally:
            self._spend(before)


@dataclass
class Step:
    """One release evaluated while deciding: the phase (``initial``, ``k range``, ``algorithm 1``,
    ``algorithm 2``), the release and whether it met each requirement."""

    phase: str
    candidate: Candidate
    privacy_ok: bool
    quality_ok: bool

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "phase": self.phase,
            **self.candidate.as_dict(),
            "privacy_ok": self.privacy_ok,
            "quality_ok": self.quality_ok,
        }


@dataclass
class Decision:
    """What :func:`decide` concluded: the level, the requirements, the chosen release (None on
    conflict, with ``conflict`` the message), the methods tried in order and every step."""

    user: str
    purpose: str
    level: Level
    privacy: PrivacyRequirement
    quality: QualityRequirement | None
    chosen: Candidate | None = None
    methods: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    conflict: str | None = None
    seconds: float = 0.0
    #: how every release evaluated made and measured its suppressed rows (``star``, ``drop``, ``arx``)
    suppressed_rows: str = "star"

    @property
    def adjusted_parameters(self) -> bool:
        """The chosen parameters differ from the level's initial ones."""
        return self.chosen is not None and (
            self.chosen.family != self.level.model or dict(self.chosen.params) != dict(self.level.params)
        )

    @property
    def changed_method(self) -> bool:
        """The chosen method is not the level's (another algorithm or a stronger family)."""
        return self.chosen is not None and (
            self.chosen.family != self.level.model or self.chosen.algorithm != self.level.algorithm
        )

    def as_dict(self) -> dict:
        """JSON-ready form (what ``ppdm publish --report`` writes under ``decision``)."""
        return {
            "user": self.user,
            "purpose": self.purpose,
            "level": {
                "name": self.level.name,
                "model": self.level.model,
                "algorithm": self.level.algorithm,
                "parameters": dict(self.level.params),
                "description": self.level.description,
            },
            "requirements": {
                "privacy": self.privacy.as_dict(),
                "quality": None if self.quality is None else self.quality.as_dict(),
            },
            "suppressed_rows": self.suppressed_rows,
            "measured_on": measured_on(self.suppressed_rows),
            "chosen": None if self.chosen is None else self.chosen.as_dict(),
            "adjusted_parameters": self.adjusted_parameters,
            "changed_method": self.changed_method,
            "methods_tried": [{"model": f, "algorithm": a} for f, a in self.methods],
            "steps": [s.as_dict() for s in self.steps],
            "conflict": self.conflict,
            "seconds": self.seconds,
        }


def candidate_methods(level: Level, has_sensitive: bool = True) -> list[tuple[str, str]]:
    """``(model family, algorithm)`` pairs the engine may use for ``level``, in the order it tries
    them (module docstring, point 2): from the registry by kind and honoured models."""
    start = FAMILIES.index(level.model)
    families = FAMILIES[start:] if level.escalate else FAMILIES[start : start + 1]
    families = tuple(f for f in families if f == "k-anonymity" or has_sensitive)
    algorithms = [level.algorithm]
    for fam in families:
        algorithms += [a for a in methods_in_registry(fam, level.kinds) if a not in algorithms]
    return [(fam, a) for a in algorithms for fam in families if honours(registry.get(a), fam)]


def with_suppressed_rows(policy: Policy, suppressed_rows: str | None) -> Policy:
    """``policy`` with ``release.suppressed_rows`` replaced (a copy; ``policy`` itself unchanged), or
    ``policy`` itself when ``suppressed_rows`` is None."""
    if suppressed_rows is None or suppressed_rows == policy.release.suppressed_rows:
        return policy
    check_suppressed_rows(suppressed_rows)
    return dataclasses.replace(policy, release=dataclasses.replace(policy.release, suppressed_rows=suppressed_rows))


def check_possible(
    table: EncodedTable, privacy: PrivacyRequirement, max_suppression: float, suppressed_rows: str
) -> None:
    """One-line error when no release of ``table`` can meet ``privacy``: P_max below the share of the
    most frequent sensitive value (:func:`.measure.disclosure_floor`; with ``'drop'`` or ``'arx'`` the
    suppressed rows are outside what P is measured on), a smallest class larger than the table, or an
    l above the number of distinct sensitive values."""
    d = int(math.floor(max_suppression * table.n + 1e-9))
    floor, attr, value = disclosure_floor(table, d, drop=suppressed_rows in ("drop", "arx"))
    if privacy.pmax < floor - 1e-12:
        raise AnonymizeError(
            f"owner's pmax = {privacy.pmax:g} is impossible for this table: '{attr}' = '{value}' makes up "
            f"{floor:.2%} of the released rows, so some class has it at least that often (pmax must be >= {floor:.4g})"
        )
    if privacy.k is not None and privacy.k > table.n:
        raise AnonymizeError(f"owner's k = {privacy.k} is larger than the table ({table.n} rows)")
    if privacy.l is not None:
        for j, name in enumerate(table.schema.sensitive):
            v = len(np.unique(table.sens_codes[:, j]))
            if privacy.l > v:
                raise AnonymizeError(f"owner's l = {privacy.l} is impossible: '{name}' has only {v} distinct value(s)")


def decide(
    table: EncodedTable,
    policy: Policy,
    user: str,
    purpose: str,
    *,
    options: Mapping | None = None,
    suppressed_rows: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Decision:
    """Choose the method and parameters for ``user`` asking for ``purpose`` (module docstring).
    ``suppressed_rows`` — ``'star'``, ``'drop'`` or ``'arx'`` instead of the policy's
    ``release.suppressed_rows`` (None: the policy's).
    Raises :class:`PolicyConflict` when none meets both requirements, :class:`AnonymizeError` for an
    unknown user / purpose or a requirement the table can never meet."""
    t0 = time.perf_counter()
    policy = with_suppressed_rows(policy, suppressed_rows)
    level = policy.level_for(user, purpose)
    privacy = policy.owner
    quality = policy.quality_for(user)
    rel = policy.release
    if level.model != "k-anonymity" and not table.schema.sensitive:
        raise AnonymizeError(
            f"level '{level.name}' uses {level.model}, which needs a sensitive attribute (--sensitive)"
        )
    if not table.schema.sensitive:
        raise AnonymizeError("the owner's disclosure bound pmax is about a sensitive attribute: give one (--sensitive)")
    check_possible(table, privacy, rel.max_suppression, rel.suppressed_rows)
    dec = Decision(user, purpose, level, privacy, quality, suppressed_rows=rel.suppressed_rows)
    seen: set = set()

    def record(phase: str, c: Candidate | None) -> None:
        if c is None:
            return
        key = (c.algorithm, c.family, tuple(sorted(c.params.items())))
        if key in seen:
            return
        seen.add(key)
        dec.steps.append(Step(phase, c, privacy.ok(c), quality is None or quality.ok(c)))

    def both(c: Candidate | None) -> bool:
        return c is not None and c.ok and privacy.ok(c) and (quality is None or quality.ok(c))

    budget = {"used": 0, "max": rel.max_evaluations}
    evaluators: dict[str, _Budgeted] = {}
    out_of_budget = False
    for family, alg in candidate_methods(level, bool(table.schema.sensitive)):
        dec.methods.append((family, alg))
        if progress:
            progress(f"level '{level.name}': trying {family} with {alg}")
        ev = evaluators.get(alg)
        if ev is None:
            raw = ReleaseEvaluator(
                table,
                alg,
                max_suppression=rel.max_suppression,
                suppressed_rows=rel.suppressed_rows,
                search_metric=quality.metric if quality is not None else "ncp",
                t_distance=rel.t_distance,
                t_ground=rel.t_ground,
                options={k: v for k, v in (options or {}).items() if k in registry.get(alg).options},
            )
            ev = evaluators[alg] = _Budgeted(raw, budget)
        try:
            found = _try_method(
                ev,
                family,
                level.params if family == level.model else None,
                privacy,
                quality,
                record,
                lambda c: both(c) and meets_level(c, level.params),
            )
        except _OutOfBudget:
            out_of_budget = True
            break
        if found is not None:
            dec.chosen = found
            break
    dec.seconds = time.perf_counter() - t0
    if dec.chosen is None:
        dec.conflict = _conflict_message(dec, policy, out_of_budget)
        raise PolicyConflict(dec.conflict, dec)
    return dec


def meets_level(c: Candidate, floors: Mapping) -> bool:
    """Whether release ``c`` is at least as strict as the security level's parameters: they are minimums
    (k, l, c no smaller; t no larger), whatever the owner's pmax allows. A level's "restricted" k = 5,
    l = 3 must never be published as k = 2, l = 1 because pmax = 1 would accept it."""
    for name, floor in floors.items():
        have = c.params.get(name)
        if have is None or floor is None:
            continue
        if name == "t":
            if float(have) > float(floor) + 1e-12:
                return False
        elif float(have) < float(floor) - 1e-12:
            return False
    return True


def level_violations(c: Candidate, floors: Mapping) -> list[str]:
    """The security level's minimums that release ``c`` misses *as measured* (its k, distinct l and t —
    with ``suppressed_rows='arx'`` those of the classes outside the ``*`` group), for the parameters
    the release has (:func:`meets_level` checks the parameters asked for; this checks what they gave)."""
    out = []
    measured = {"k": c.k_achieved, "l": c.l_achieved, "t": c.t_achieved}
    for name, floor in floors.items():
        if floor is None or name not in c.params or name not in measured:
            continue
        have = measured[name]
        if name == "t":
            if not float(have) <= float(floor) + 1e-9:
                out.append(f"t = {float(have):.4g} > the level's {float(floor):g}")
        elif float(have) < float(floor) - 1e-12:
            out.append(f"{name} = {have} < the level's {floor}")
    return out


def _try_method(ev, family, initial, privacy, quality, record, both) -> Candidate | None:
    if initial is not None:
        c = ev.evaluate(family, initial)
        record("initial", c)
        if both(c):
            return c
    ksel = select_k(ev, privacy, quality)
    for _, c in sorted(ksel.candidates.items()):
        record("k range", c)
    if ksel.k is None:
        return None
    if family == "k-anonymity":
        k, top = ksel.k, ksel.kmax if ksel.kmax is not None else ev.table.n
        while k <= top:  # the privacy requirement is measured: the smallest k from the choice up that meets it
            c = ksel.candidates.get(k) or ev.evaluate("k-anonymity", {"k": k})
            record("k range", c)
            if both(c):
                return c
            k += 1
        return None
    if family == "l-diversity":
        ls = select_l(ev, privacy, quality, ksel.k, ksel.kmax)
        for c in ls.steps:
            record("algorithm 1", c)
        if ls.release is None or both(ls.release):
            return ls.release
        return next((c for c in ls.steps if both(c)), None)  # Algorithm 1's first step the level allows
    ts = select_t(ev, privacy, quality, ksel.k, ksel.release)
    for c in ts.steps:
        record("algorithm 2", c)
    if ts.release is None or both(ts.release):
        return ts.release
    return next((c for c in ts.steps if both(c)), None)


def _conflict_message(dec: Decision, policy: Policy, out_of_budget: bool) -> str:
    privacy, quality = dec.privacy, dec.quality
    methods = ", ".join(f"{f}/{a}" for f, a in dec.methods) or "none"
    where = f"level '{dec.level.name}' ({methods})"
    owner = f"the owner's privacy requirement ({privacy.text()})"
    user = f"the quality requirement of user '{dec.user}' ({quality.text()})" if quality is not None else ""
    ok = [s.candidate for s in dec.steps if s.candidate.ok]
    tail = (
        f"; stopped after {policy.release.max_evaluations} algorithm runs (release.max_evaluations)"
        if out_of_budget
        else ""
    )
    if not ok:
        err = next((s.candidate.error for s in dec.steps if s.candidate.error), "no method ran")
        return f"no release for {where}: {err}{tail}"
    priv = [c for c in ok if privacy.ok(c)]
    qual = [c for c in ok if quality is None or quality.ok(c)]
    if not priv and not qual:
        assert quality is not None
        bp = min(ok, key=lambda c: (len(privacy.violations(c)), c.disclosure))
        bq = min(ok, key=lambda c: quality.value(c))
        return (
            f"neither {owner} nor {user} can be met by {where}: the closest release to the first has "
            f"{'; '.join(privacy.violations(bp))} ({bp.label()}), the best for the second reaches "
            f"{quality.metric.upper()} {quality.value(bq):.4g} ({_over(quality.value(bq), quality.bound)} over the bound; "
            f"{bq.label()}){tail}"
        )
    if not priv:
        best = min(ok, key=lambda c: (len(privacy.violations(c)), c.disclosure))
        return f"{owner} cannot be met by {where}: the closest release has {_misses(privacy, best)}{tail}"
    assert quality is not None
    if not qual:
        best = min(ok, key=lambda c: quality.value(c))
        return (
            f"{user} cannot be met by {where}: the best release reaches {quality.metric.upper()} "
            f"{quality.value(best):.4g} ({_over(quality.value(best), quality.bound)} over the bound; {best.label()}){tail}"
        )
    bp = min(priv, key=lambda c: quality.value(c))
    bq = min(qual, key=lambda c: (len(privacy.violations(c)), c.disclosure))
    return (
        f"{owner} conflicts with {user} at {where}: the best release meeting the privacy requirement has "
        f"{quality.metric.upper()} {quality.value(bp):.4g} ({_over(quality.value(bp), quality.bound)} over the bound; "
        f"{bp.label()}), and the safest release within the quality bound has {'; '.join(privacy.violations(bq))} "
        f"({bq.label()}){tail}"
    )


def _misses(privacy: PrivacyRequirement, c: Candidate) -> str:
    """What release ``c`` misses of the privacy requirement, each part with its own distance: P's to pmax only
    when P is over (a t-closeness violation is a distance to t, not to pmax)."""
    parts = []
    for v in privacy.violations(c):
        if v.startswith("P = "):
            v += f" ({_over(c.disclosure, privacy.pmax)} over pmax)"
        elif v.startswith("t = ") and privacy.t is not None:
            v += f" ({_over(c.t_achieved, privacy.t)} over t)"
        parts.append(v)
    return f"{'; '.join(parts)} ({c.label()})"


def _over(value: float, bound: float) -> str:
    d = value - bound
    if bound > 0:
        return f"+{d:.4g}, {d / bound:.0%}"
    return f"+{d:.4g}"


@dataclass
class PolicyRelease:
    """What :func:`publish_with_policy` returns: the release (an :class:`AnonymizationResult`), the
    decision behind it and the combined report."""

    result: AnonymizationResult
    decision: Decision
    report: dict


def publish_with_policy(
    table_or_df,
    schema: Schema | None,
    hierarchies: Mapping[str, Hierarchy] | None,
    policy: Policy,
    user: str,
    purpose: str,
    *,
    options: Mapping | None = None,
    n_queries: int | None = None,
    shuffle: bool = True,
    suppressed_rows: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> PolicyRelease:
    """Decide (:func:`decide`), anonymize with the chosen method (:func:`..anonymize_table`) and
    check the release as written against both requirements and the level's minimums (disclosure
    re-measured on the released table, quality from its report). Errors as :func:`decide`.

    ``suppressed_rows`` — ``'star'``, ``'drop'`` or ``'arx'`` instead of the policy's
    ``release.suppressed_rows`` (None: the policy's). With ``'arx'`` the disclosure is re-measured on
    the written table without its all-``*`` rows, and the report's ``measured.suppressed_group`` (the
    release's own ``metrics.suppressed_group``) says which models the ``*`` group breaks.

    ``shuffle`` (default) puts the released rows in a fresh random order: a user given two releases
    of the same table (two purposes, two levels) could otherwise pair their rows by position and
    intersect the classes of both — the complementary-release attack (Sweeney, "k-anonymity: a model
    for protecting privacy", IJUFKS 10(5), 2002, §4)."""
    if isinstance(table_or_df, EncodedTable):
        table = table_or_df
    else:
        if schema is None:
            raise AnonymizeError("a Schema (quasi-identifiers, sensitive attributes) is needed to publish a DataFrame")
        table = EncodedTable.encode(table_or_df, schema, dict(hierarchies or {}))
    policy_rows = policy.release.suppressed_rows
    policy = with_suppressed_rows(policy, suppressed_rows)
    dec = decide(table, policy, user, purpose, options=options, progress=progress)
    c = dec.chosen
    assert c is not None
    rel = policy.release
    alg = registry.get(c.algorithm)
    opts = {k: v for k, v in (options or {}).items() if k in alg.options}
    res = anonymize_table(
        table,
        algorithm=c.algorithm,
        models=family_models(c.family, c.params, t_distance=rel.t_distance, t_ground=rel.t_ground),
        max_suppression=rel.max_suppression,
        metric=dec.quality.metric if dec.quality is not None else "ncp",
        numeric_output=rel.numeric_output,
        suppressed_rows=rel.suppressed_rows,
        n_queries=n_queries,
        options=opts or None,
        progress=progress,
    )
    if shuffle:
        order = RandomSource().permutation(len(res.df))  # the OS CSPRNG
        res.df = res.df.iloc[order].reset_index(drop=True)
    qis, sens = table.schema.qis, table.schema.sensitive
    arx = rel.suppressed_rows == "arx"
    judged = res.df[~star_rows(res.df, qis)] if arx else res.df  # 'arx': the '*' group is not judged
    achieved = res.metrics["achieved"]
    l_values = [a["l_distinct"] for a in (achieved.get("sensitive_attributes") or {}).values()]
    measured = {
        "disclosure": frame_disclosure(judged, qis, sens),
        "ncp": res.metrics["ncp"]["ncp"],
        "cdm": res.metrics["cdm"],
        "cdm_definition": res.metrics["cdm_definition"],
        "k": achieved["k"],
        "l": min(l_values) if l_values else None,
        "suppressed_rows": rel.suppressed_rows,
        "measured_on": measured_on(rel.suppressed_rows),
    }
    if arx:
        measured["suppressed_group"] = res.metrics.get("suppressed_group")
    # the release as produced, measured again: the decision's requirements must hold on it
    cid = np.asarray(res.class_id, dtype=np.int64)
    n_cls = int(cid.max()) + 1 if len(cid) else 0
    if res.levels is not None:
        lo, hi = M.boxes_from_levels(table, [res.levels[q] for q in qis])
    else:
        lo, hi = M.class_boxes(table, cid, n_cls)
    m = measure_candidate(
        table,
        cid,
        n_cls,
        res.suppressed_mask,
        lo,
        hi,
        suppressed_rows=rel.suppressed_rows,
        t_distance=rel.t_distance,
        t_ground=rel.t_ground,
    )
    again = Candidate(c.algorithm, c.family, dict(c.params), **m)
    again.disclosure = max(again.disclosure, measured["disclosure"])
    missed = dec.privacy.violations(again) + level_violations(again, dec.level.params)
    if dec.quality is not None and not dec.quality.ok(again):
        missed.append(f"{dec.quality.metric.upper()} = {dec.quality.value(again):.4g} > {dec.quality.bound:g}")
    if missed:
        raise AnonymizeError(
            f"the release of {c.label()} measures {'; '.join(missed)} although its evaluation met the requirements "
            "(is the algorithm deterministic?): nothing written"
        )
    report = {
        "policy": policy.source,
        "suppressed_rows": rel.suppressed_rows,
        "policy_suppressed_rows": policy_rows,
        "decision": dec.as_dict(),
        "measured": measured,
        "release": res.report,
    }
    return PolicyRelease(res, dec, report)
