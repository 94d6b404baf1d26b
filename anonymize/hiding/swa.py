"""The Sliding Window Algorithm (SWA) of Oliveira & Zaïane, with disclosure threshold ψ.

Reference: S. R. M. Oliveira, O. R. Zaïane, "Protecting sensitive knowledge by data
sanitization", IEEE ICDM 2003 (SWA, their one-scan algorithm), building on their
"Algorithms for balancing privacy and knowledge discovery in association rule mining",
IDEAS 2003 (two-scan algorithms), and "Privacy preserving frequent itemset mining",
IEEE ICDM Workshop on Privacy, Security and Data Mining, 2002 (restrictive patterns,
disclosure threshold ψ).

One scan over the database in windows of K consecutive transactions. In each
window, for every sensitive pattern r (its itemset; a rule by its generating
itemset X ∪ Y):

1. the *sensitive transactions* of r in the window are those that still hold all of
   its items;
2. the victim item of r is the item of r that occurs most often among the window's
   sensitive transactions of all patterns (an item shared by several patterns is
   removed once and breaks them all), ties to the smaller id;
3. of the |T_r| sensitive transactions, ``⌊ψ_r·|T_r|⌋`` are left untouched and the
   others — shortest first, then a seeded random tie-break — lose the victim.

ψ = 0 removes every occurrence of the pattern; ψ = 1 changes nothing. With
``psi="auto"`` (our default) each pattern gets the largest ψ_r that still hides it:
ψ_r = (minc − 1)/count(r), since Σ_windows ⌊ψ_r·|T_r,w|⌋ ≤ ψ_r·count(r) = minc − 1
transactions keep r. A user-given ψ is the paper's knob: hiding failure is then
possible and reported. Transactions of one item are never emptied (see
:mod:`.state`), so a single-item pattern can keep those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from .errors import HidingError
from .patterns import SensitivePattern
from .state import HidingState

__all__ = ["run_swa", "DEFAULT_WINDOW"]

DEFAULT_WINDOW = 10_000


def run_swa(
    state: HidingState,
    patterns: Sequence[SensitivePattern],
    psi: float | str | None = "auto",
    window: int = DEFAULT_WINDOW,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Sanitize ``state`` with SWA (module docstring); returns ``{"psi", "window", "windows"}``."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise HidingError(f"the SWA window must be a positive number of transactions (got {window!r})")
    auto = psi is None or psi == "auto"
    if not auto:
        try:
            fixed = Fraction(str(psi))
        except (ValueError, ZeroDivisionError):
            raise HidingError(f"psi must be 'auto' or a number in [0, 1] (got {psi!r})") from None
        if not (0 <= fixed <= 1):
            raise HidingError(f"psi must be in [0, 1] (got {psi})")
    rows = [state.rows(p.items) for p in patterns]
    counts = [state.count(r) for r in rows]
    live = [i for i, c in enumerate(counts) if c >= state.min_count]
    psis = {i: (Fraction(state.min_count - 1, counts[i]) if auto else fixed) for i in live}
    tids = {i: state.tids(rows[i]) for i in live}
    sens_rows = np.unique(np.concatenate([rows[i] for i in live])) if live else np.zeros(0, np.int64)
    n_windows = (state.n + window - 1) // window
    for w, w0 in enumerate(range(0, state.n, window)):
        w1 = w0 + window
        inwin = {i: t[(t >= w0) & (t < w1)] for i, t in tids.items()}
        inwin = {i: t for i, t in inwin.items() if t.size}
        if not inwin:
            continue
        U = np.unique(np.concatenate(list(inwin.values())))
        M = state.rowbits(U)  # (R, |U|): the window's sensitive transactions, kept current below
        freq = M[sens_rows].sum(axis=1)
        fmap = dict(zip(sens_rows.tolist(), freq.tolist()))
        for i, t in inwin.items():
            at = np.searchsorted(U, t)
            still = M[rows[i]][:, at].all(axis=0)
            t, at = t[still], at[still]
            if t.size == 0:
                continue
            f = psis[i]
            keep = (f.numerator * t.size) // f.denominator  # ⌊ψ·|T_r|⌋ stay untouched
            m = t.size - keep
            if m <= 0:
                continue
            victim = max(rows[i].tolist(), key=lambda r: (fmap[r], -r))
            ok = state.lengths[t] >= 2
            t, at = t[ok], at[ok]
            sel = state.order_shortest(t)[:m]
            state.apply(t[sel], np.full(sel.size, victim))
            M[victim, at[sel]] = False
        if progress and (w % 10 == 9 or w == n_windows - 1):
            progress(f"swa: window {w + 1}/{n_windows}")
    return {"psi": "auto" if auto else float(fixed), "window": int(window), "windows": n_windows}
