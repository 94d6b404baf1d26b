"""Parameter selection for k-anonymity, l-diversity and t-closeness (Xu & Guo 2021, §3).

Y. Xu, H. Guo, "Privacy protection model and parameter optimization method for data
dissemination" (面向数据发布的隐私保护模型及参数优选方法), Computer Engineering 47(5):124–130,
2021. Its equations are images missing from the text we have; what each step below uses in their
place is said beside it, and ``docs/policy.md`` lists every gap. Throughout, the *privacy
requirement* is the data owner's (:class:`.measure.PrivacyRequirement`, disclosure probability
P ≤ P_max measured on the release) and the *quality requirement* the data user's
(:class:`.measure.QualityRequirement`, CDM or NCP ≤ Q). Releases come from an evaluator
(:class:`.evaluate.ReleaseEvaluator`): for given parameters, the release the chosen algorithm
produces, measured.

**k** (§3.1). Eq. (1) relates P_max to K_min through t, "the largest number of repetitions of a
sensitive value in an equivalence class": a class E discloses P(E) = t/|E|, so K_min ≥ t/P_max. The
equation itself is missing from our text, and t is a property of the release, not of the table: with
t = 1 it gives ⌈1/P_max⌉ — the bound the search starts from — but the paper's own example (P_max = 0.25)
needs k ≥ 7, not 4, because its classes repeat values. So K_min is *measured*: the smallest
k ≥ ⌈1/P_max⌉ whose k-anonymous release has P = max_E t_E/|E| ≤ P_max (checked k by k, at most
:data:`KMIN_WALK` of them; the repetitions at K_min are reported). This is also the k ``ppdm publish``
walks to, so ``ppdm tune`` and ``ppdm publish`` agree. When no k tried meets P_max — k-anonymity
alone does not bound P, e.g. a class of one sensitive value survives every k — K_min stays
⌈1/P_max⌉ and the selection says so (``kmin_note``): Algorithms 1 and 2 must then bound P. K_max is the largest k whose release still
meets the quality bound (eq. 3, which relates k to CDM: here the relation is measured, not
assumed — the k-anonymous release's loss is evaluated for each k). The range is [K_min, K_max] and
the paper's default choice its middle, k = K_min + ⌊(K_max − K_min)/2⌋; without a quality bound
there is no K_max and k = K_min (the best quality the privacy bound allows).

**l** (Algorithm 1). Start from the k chosen for k-anonymity. l runs from l_min — the number of
distinct sensitive values in the class that has fewest (step 1) — to l_max, the entropy bound
of eq. (4): no release of the whole table is entropy-l-diverse above e^{H(S)} (by concavity a
class's entropy is at most the table's, for some class), capped at k (an l-diverse class has ≥ l
rows, so l > k would be a larger k in disguise; the paper's example has l ∈ {5, 6, 7} at k = 7).
For each l the table is made l-diverse and the release is kept if it meets both requirements;
else l + 1 (step 5); when l passes l_max, k + 1 (step 6), up to K_max (step 7: failure).

**t** (Algorithm 2). Take the k-anonymous release T at the chosen k; D_i = EMD(class i, table);
step = D_min = min D_i, rounded to two decimals (the paper keeps t to two decimals); for t = D_min,
2·D_min, … the table is made t-close, and the first t whose release meets the quality bound (the
paper's CDM_0, "the best quality a release meeting the privacy requirement can reach", whose
formula eq. 5 is missing: the user's bound Q takes its place) and the privacy requirement is
chosen; the loop ends once t ≥ D_max (failure).

Gaps filled (also in ``docs/policy.md``):

* Algorithm 1 step 3 makes a class l-diverse by *inserting tuples* with the class's QI values and
  missing sensitive values. ppdm never publishes fabricated records (they falsify every count a
  recipient computes), so "make the table l-diverse" is the algorithm's own release under
  (k-anonymity, distinct l-diversity) — generalization, suppression or clustering.
* Step 4 compares the CDM with "the CDM of the table meeting the minimum l"; its loop only makes
  sense if the test is both requirements, so it is: P ≤ P_max and quality ≤ Q.
* Loops stop early where the paper's premise (loss grows with k and l and falls with t; §3.1–3.3)
  makes every later step fail: at a quality failure in the l loop (larger l only loses more), and
  at a privacy failure in the t loop once quality is met (larger t only protects less). The
  paper's loops would evaluate those steps and fail on each.
* D_min = 0 (a class distributed exactly like the table) would make no step: the smallest
  positive D_i is used; at least 0.01.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import AnonymizeError
from ..distances import class_entropy
from ..table import EncodedTable
from .measure import Candidate, PrivacyRequirement, QualityRequirement, k_min_for

__all__ = [
    "KSelection",
    "LSelection",
    "TSelection",
    "select_k",
    "select_l",
    "select_t",
    "l_upper_bound",
    "t_steps",
    "KMIN_WALK",
]

#: how many k from ⌈1/P_max⌉ up :func:`select_k` tries for K_min before it gives up
KMIN_WALK = 64


def _quality_ok(quality: QualityRequirement | None, c: Candidate) -> bool:
    return c.ok and (quality is None or quality.ok(c))


@dataclass
class KSelection:
    """The k range and choice: ``kmin`` (eq. 1), ``kmax`` (eq. 3, None when no quality bound;
    ``kmax_capped`` when the bound still held at the largest k evaluated), ``k`` the choice,
    ``candidates`` every k evaluated (k → release), ``reason`` when the range is empty."""

    kmin: int
    kmax: int | None
    k: int | None
    candidates: dict = field(default_factory=dict)
    kmax_capped: bool = False
    reason: str | None = None
    #: ⌈1/P_max⌉ (or the requirement's k if larger): eq. (1) with one repetition, where K_min's walk starts
    kmin_bound: int | None = None
    #: set when no k tried meets P ≤ P_max by k-anonymity alone: K_min is then ``kmin_bound`` (l-diversity or
    #: t-closeness must bound P; Algorithms 1 and 2 start from the k chosen here)
    kmin_note: str | None = None

    @property
    def repetitions(self) -> int | None:
        """t of eq. (1) at K_min: the most rows sharing one sensitive value in one class of its release."""
        c = self.candidates.get(self.kmin)
        return None if c is None or not c.ok else c.repetitions

    @property
    def release(self) -> Candidate | None:
        """The k-anonymous release at the chosen k."""
        return None if self.k is None else self.candidates.get(self.k)


def select_k(
    evaluator,
    privacy: PrivacyRequirement,
    quality: QualityRequirement | None,
    ks=None,
    *,
    k_limit: int | None = None,
) -> KSelection:
    """The k range [K_min, K_max] and the paper's choice in it (module docstring).

    ``ks`` — evaluate exactly these k (one sweep when the evaluator can: ``ppdm tune``'s table);
    otherwise K_max is found by doubling k from K_min while the quality bound holds, then bisecting
    (the paper's premise that loss grows with k), up to ``k_limit`` (default: the table's rows)."""
    bound = max(k_min_for(privacy.pmax), privacy.k or 1)
    n = evaluator.table.n
    limit = n if k_limit is None else min(int(k_limit), n)
    if bound > n:
        return KSelection(
            bound,
            None,
            None,
            reason=f"K_min >= {bound} (from pmax = {privacy.pmax:g}) exceeds the {n} rows",
            kmin_bound=bound,
        )

    def meets_pmax(c: Candidate) -> bool:
        return c.ok and c.disclosure <= privacy.pmax + 1e-12

    if ks is not None:
        cands = evaluator.evaluate_k(sorted(set(ks) | {bound}))
        first = next((k for k in sorted(cands) if k >= bound and meets_pmax(cands[k])), None)
        kmin, note = (first, None) if first is not None else (bound, _kmin_reason(cands, privacy, bound))
        if quality is None:
            return KSelection(kmin, None, kmin, cands, kmin_bound=bound, kmin_note=note)
        ok_k = [k for k, c in cands.items() if k >= kmin and _quality_ok(quality, c)]
        top = max(cands)
        if not ok_k:
            return KSelection(
                kmin,
                None,
                None,
                cands,
                reason=_k_reason(cands.get(kmin), quality, kmin),
                kmin_bound=bound,
                kmin_note=note,
            )
        kmax = max(ok_k)
        return KSelection(
            kmin,
            kmax,
            kmin + (kmax - kmin) // 2,
            cands,
            kmax_capped=kmax == top and top < limit,
            kmin_bound=bound,
            kmin_note=note,
        )
    cands = {}

    def run(k: int) -> Candidate:
        if k not in cands:
            cands[k] = evaluator.evaluate("k-anonymity", {"k": k})
        return cands[k]

    first = None
    for k in range(bound, min(limit, bound + KMIN_WALK - 1) + 1):
        c = run(k)
        if meets_pmax(c):
            first = k
            break
        if not c.ok or c.classes <= 1:
            break  # no release, or one class already: a larger k does no better
    kmin, note = (first, None) if first is not None else (bound, _kmin_reason(cands, privacy, bound))

    def q_ok(k: int) -> bool:
        return _quality_ok(quality, run(k))

    if not q_ok(kmin):
        return KSelection(
            kmin, None, None, cands, reason=_k_reason(cands[kmin], quality, kmin), kmin_bound=bound, kmin_note=note
        )
    if quality is None:
        return KSelection(kmin, None, kmin, cands, kmin_bound=bound, kmin_note=note)
    good, bad = kmin, None
    while bad is None:
        nxt = min(2 * good, limit)
        if nxt == good:
            break
        if q_ok(nxt):
            good = nxt
        else:
            bad = nxt
    if bad is not None:
        while bad - good > 1:
            mid = (good + bad) // 2
            if q_ok(mid):
                good = mid
            else:
                bad = mid
    k = kmin + (good - kmin) // 2
    run(k)
    return KSelection(kmin, good, k, cands, kmax_capped=bad is None and good < n, kmin_bound=bound, kmin_note=note)


def _kmin_reason(cands: dict, privacy: PrivacyRequirement, bound: int) -> str:
    """Why no k from ``bound`` up meets P ≤ P_max: the k tried and the lowest P reached."""
    ok = {k: c for k, c in cands.items() if k >= bound and c.ok}
    if not ok:
        err = next((c.error for c in cands.values() if c.error), None)
        return f"no k-anonymous release from k = {bound}" + (f": {err}" if err else "")
    best = min(ok, key=lambda k: (ok[k].disclosure, k))
    return (
        f"no k-anonymous release for k in [{bound}, {max(ok)}] meets P <= {privacy.pmax:g} "
        f"(the lowest P is {ok[best].disclosure:.4g}, at k = {best}): k-anonymity alone does not bound P, "
        f"so K_min stays ceil(1/pmax) = {bound}"
    )


def _k_reason(c: Candidate | None, quality: QualityRequirement | None, kmin: int) -> str:
    if c is None or not c.ok:
        return f"no k-anonymous release at K_min = {kmin}" + (f": {c.error}" if c is not None and c.error else "")
    assert quality is not None
    return f"{quality.text()} fails already at K_min = {kmin} ({quality.metric.upper()} {quality.value(c):.4g})"


def l_upper_bound(table: EncodedTable, k: int) -> int:
    """Algorithm 1's l_max: ⌊e^{H(S)}⌋ over the whole table (the most diverse any release of all rows
    can be in its least diverse class, by concavity of entropy), the smallest over the sensitive
    attributes, capped at k."""
    best = None
    for j, vals in enumerate(table.sens_values):
        counts = np.bincount(table.sens_codes[:, j], minlength=len(vals))[None, :]
        e = int(math.floor(math.exp(float(class_entropy(counts)[0])) + 1e-9))
        best = e if best is None else min(best, e)
    if best is None:
        raise AnonymizeError("l-diversity needs a sensitive attribute")
    return max(1, min(best, int(k)))


@dataclass
class LSelection:
    """Algorithm 1's outcome: ``(k, l)`` or None with ``reason``; ``steps`` — every (k, l) release
    evaluated, in order, with ``l_min`` / ``l_max`` per k."""

    k: int | None
    l: int | None
    steps: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    reason: str | None = None

    @property
    def release(self) -> Candidate | None:
        """The chosen release (None on failure)."""
        for c in self.steps:
            if c.ok and c.params.get("k") == self.k and c.params.get("l") == self.l:
                return c
        return None


def select_l(
    evaluator,
    privacy: PrivacyRequirement,
    quality: QualityRequirement | None,
    k_start: int,
    k_max: int | None,
    *,
    k_release=None,
) -> LSelection:
    """Xu & Guo 2021, Algorithm 1 (module docstring): the first (k, l), k from ``k_start`` to ``k_max``
    and l from l_min(k) to l_max(k), whose l-diverse release meets both requirements.
    ``k_release(k)`` gives the k-anonymous release whose least diverse class sets l_min (default: the
    evaluator's)."""
    table = evaluator.table
    k_max = k_start if k_max is None else max(k_max, k_start)
    out = LSelection(None, None)
    get_k = k_release or (lambda k: evaluator.evaluate("k-anonymity", {"k": k}))
    last_fail = None
    for k in range(k_start, k_max + 1):  # steps 6–7
        tk = get_k(k)
        if not tk.ok:
            last_fail = tk
            continue
        l_min = max(1, tk.l_achieved)  # step 1: fewest distinct values in a class
        l_max = max(l_min, l_upper_bound(table, k))
        out.ranges[k] = (l_min, l_max)
        for l in range(l_min, l_max + 1):  # steps 2–5
            c = evaluator.evaluate("l-diversity", {"k": k, "l": l})
            out.steps.append(c)
            if not c.ok:
                last_fail = c
                continue
            if privacy.ok(c) and _quality_ok(quality, c):
                out.k, out.l = k, l
                return out
            if not _quality_ok(quality, c):
                break  # larger l only loses more (the paper's premise): next k
    out.reason = _failure(out.steps or ([last_fail] if last_fail else []), privacy, quality, "l")
    return out


def t_steps(d_min: float, d_max: float) -> list[float]:
    """Algorithm 2's t values: t = step, 2·step, … (two decimals) up to the first t ≥ D_max, with
    step = D_min rounded to two decimals and at least 0.01; capped at 1."""
    step = max(round(d_min, 2), 0.01)
    out = []
    i = 1
    while True:
        t = round(min(i * step, 1.0), 2)
        out.append(t)
        if t >= d_max - 1e-12 or t >= 1.0:
            return out
        i += 1


@dataclass
class TSelection:
    """Algorithm 2's outcome: ``t`` (None with ``reason`` on failure), ``k``, ``d_min`` / ``d_max`` /
    ``step`` of the EMD steps and every release evaluated (``steps``)."""

    k: int | None
    t: float | None
    d_min: float = float("nan")
    d_max: float = float("nan")
    step: float = float("nan")
    steps: list = field(default_factory=list)
    reason: str | None = None

    @property
    def release(self) -> Candidate | None:
        """The chosen release (None on failure)."""
        for c in self.steps:
            if c.ok and c.params.get("t") == self.t:
                return c
        return None


def select_t(
    evaluator, privacy: PrivacyRequirement, quality: QualityRequirement | None, k: int, base: Candidate | None
) -> TSelection:
    """Xu & Guo 2021, Algorithm 2 (module docstring) on ``base``, the k-anonymous release at ``k``:
    EMD steps from D_min to D_max, the first t whose t-close release meets both requirements."""
    out = TSelection(k, None)
    if base is None or not base.ok or base.class_distances is None or len(base.class_distances) == 0:
        out.reason = f"no k-anonymous release at k = {k} to take the EMD steps from"
        return out
    d = np.asarray(base.class_distances, dtype=np.float64)
    pos = d[d > 1e-12]
    out.d_max = float(d.max())
    out.d_min = float(pos.min()) if len(pos) else 0.0
    out.step = max(round(out.d_min, 2), 0.01)
    for t in t_steps(out.d_min, out.d_max):  # steps 3–5
        c = evaluator.evaluate("t-closeness", {"k": k, "t": t})
        out.steps.append(c)
        if not c.ok or not _quality_ok(quality, c):
            continue
        if privacy.ok(c):
            out.t = t
            return out
        break  # quality met but privacy not: larger t only protects less
    out.reason = _failure(out.steps, privacy, quality, "t")
    return out


def _failure(steps, privacy: PrivacyRequirement, quality: QualityRequirement | None, what: str) -> str:
    """Why no step met both requirements: the best of each side, by how much it misses the other."""
    ok = [c for c in steps if c is not None and c.ok]
    if not ok:
        err = next((c.error for c in steps if c is not None and c.error), None)
        return f"no {what} step produced a release" + (f" ({err})" if err else "")
    priv = [c for c in ok if privacy.ok(c)]
    qual = [c for c in ok if _quality_ok(quality, c)]
    if not priv:
        best = min(ok, key=lambda c: c.disclosure)
        return (
            f"no step meets {privacy.text()}: the lowest disclosure reached is {best.disclosure:.4g} ({best.label()})"
        )
    assert quality is not None
    best = min(priv, key=lambda c: quality.value(c))
    msg = (
        f"{privacy.text()} conflicts with {quality.text()}: the best release meeting the privacy requirement "
        f"has {quality.metric.upper()} {quality.value(best):.4g} ({best.label()})"
    )
    if qual:
        b2 = min(qual, key=lambda c: c.disclosure)
        msg += f"; the safest within the quality bound has P = {b2.disclosure:.4g} ({b2.label()})"
    return msg
