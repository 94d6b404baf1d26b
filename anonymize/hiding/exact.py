"""Exact hiding: an integer program over the affected transactions, solved by HiGHS.

Reference: A. Gkoulalas-Divanis, V. S. Verykios, "An integer programming approach for
frequent itemset hiding", CIKM 2006 — the *inline* approach: only transactions that
support a sensitive itemset are edited, only items of the sensitive itemsets they
hold are removed, and an integer program decides which, keeping as many
non-sensitive frequent itemsets frequent as possible. The program (built in
:mod:`.ip_model`) is solved with ``scipy.optimize.milp`` — HiGHS (Huangfu & Hall,
"Parallelizing the dual revised simplex method", Math. Prog. Comp. 10, 2018, and
its branch-and-cut MIP solver).

What is optimized
-----------------
Over every deletion-only sanitization D' that empties no transaction and under which no
sensitive pattern mined from D is mined from D', the program minimizes the number of
**lost itemsets exactly as** :mod:`.metrics` **counts them**: frequent itemsets of D that are
infrequent in D' and not in H, where H holds the supersets of each sensitive itemset and of
the X ∪ Y of each sensitive rule that is infrequent in D'. Then, among the solutions losing
that many, it minimizes the number of deleted items. A sensitive itemset is hidden by
support (count < minc). A sensitive *rule* X ⇒ Y with a minimum confidence C = p/q is
hidden when **either** count(X∪Y) < minc **or** count(X∪Y)·q < p·count(X) (Verykios,
Elmagarmid, Bertino, Saygin, Dasseni, "Association rule hiding", IEEE TKDE 16(4), 2004,
§3) — the program chooses the route with a binary z_r per rule (0: support, 1: confidence).
Deleting an item of Y from a transaction of D(X ∪ Y) lowers count(X∪Y) only; deleting an item
of X lowers both; so with d_XY and d_X the transactions that lose X ∪ Y and X,

    q·d_XY − p·d_X ≥ q·count(X∪Y) − p·count(X) + 1

is linear (a big-M row switched by z_r). The route matters to the objective: a rule hidden by
support takes X ∪ Y and its supersets into H, a rule hidden by confidence keeps X ∪ Y frequent,
and then every superset of X ∪ Y that falls is a loss — the program tracks those supersets too.
Without a minimum confidence a rule is hidden by support through X ∪ Y. Only the
misses cost of *itemsets* is optimized; rule side effects (lost and ghost rules: a deletion
of an X item raises confidences elsewhere) are measured, not optimized.

The optimum is exact over that whole space: restricting edits to the transactions and items of
the inline approach loses nothing (deleting any other item changes no sensitive count, or only
raises a confidence), and minimal solutions (:mod:`.restore`: no deleted item can come back
without a sensitive pattern being mined again or a rule changing route) attain it, which bounds
the at-risk itemsets (:mod:`.ip_model`). ``optimal`` is reported only when HiGHS proved it.

Solving
-------
1. *Incumbent.* Heuristic 2.b (side-effect victims) and, when rules are judged by confidence,
   heuristics 2.a and 1.b (which lower confidence), and the border algorithm run on copies
   of the state; their solutions are made minimal (:mod:`.restore`) and the one losing fewest
   non-sensitive frequent itemsets is kept. If it loses none it is optimal already.
2. *Phase 1* minimizes Σ L_f — the misses cost — with the cutoff Σ L_f ≤ (incumbent's
   losses) − 1: a solution is strictly better; "infeasible" proves the incumbent
   optimal (when all its losses are at-risk itemsets, which minimality ensures).
3. *Phase 2* fixes Σ L_f at the best value found and minimizes the number of deleted
   items Σ |P|·x_{g,P}.

Every candidate solution is realized on a copy, made minimal and measured (lost itemsets counted
as :mod:`.metrics` counts them); the one hiding most patterns, then losing fewest itemsets, then
deleting fewest items is applied. So the result never loses more than the incumbents, and
``optimal`` says whether the minimum misses cost was *proven* — HiGHS stopping at
``time_limit`` leaves the best solution found and a lower bound (``lower_bound``). The
disjunction makes the relaxation weak: on mushroom (rules ``24 => 86; 34 => 85`` at 30 %
support, 80 % confidence) HiGHS proves no optimum within a minute and the confidence-lowering
incumbent stands.

The time limit is a wall-clock deadline for the whole run. HiGHS honours its own ``time_limit`` only
between steps — its presolve and a round of cuts can overrun it by a factor of two — so every solve
runs in a forked child process that is killed at the deadline (what it found is then lost, and the
best incumbent stands); the border incumbent checks the deadline between its deletions. Deletions
create no ghost itemsets.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from .border import BorderDeadline, run_border
from .errors import HidingError
from .heuristic import pattern_mined, run_heuristic
from .ip_model import MAX_CONSTRAINTS, MAX_VARIABLES, IPModel, build_model
from .patterns import SensitivePattern
from .restore import restore_unneeded
from .state import HidingState

__all__ = ["run_exact", "MAX_VARIABLES", "MAX_CONSTRAINTS"]


class _Family:
    """The frequent itemsets of D that hold a sensitive rule's X ∪ Y and no sensitive itemset (they are
    left out of F', :mod:`.state`): one is lost when it falls below ``minc`` while every such rule whose
    X ∪ Y it holds keeps X ∪ Y frequent (hidden by confidence, or not hidden) — the set H of
    :mod:`.metrics`. ``rows[k]``/``rules[k]``: the itemsets and which rule's X ∪ Y each holds."""

    def __init__(self, state: HidingState, patterns: Sequence[SensitivePattern]) -> None:
        self.rule_rows = [state.rows(p.items) for p in patterns if p.is_rule]
        always = [state.rows(p.items) for p in patterns if not p.is_rule]
        self.rows: dict[int, np.ndarray] = {}
        self.rules: dict[int, np.ndarray] = {}
        if not self.rule_rows:
            return
        for k, frows in state.fx.items():
            keep = np.ones(frows.shape[0], dtype=bool)
            for srow in always:
                if srow.size <= k:
                    keep &= np.isin(frows, srow).sum(axis=1) != srow.size
            inr = np.stack([np.isin(frows, z).sum(axis=1) == z.size for z in self.rule_rows], axis=1)
            keep &= inr.any(axis=1)
            if keep.any():
                self.rows[k], self.rules[k] = frows[keep], inr[keep]

    def lost(self, state: HidingState) -> int:
        """How many of them are lost in ``state``."""
        if not self.rows:
            return 0
        xy_low = np.array([state.count(z) < state.min_count for z in self.rule_rows], dtype=bool)
        n = 0
        for k, rows in self.rows.items():
            low = state.counts(rows) < state.min_count
            n += int((low & ~(self.rules[k] & xy_low[None, :]).any(axis=1)).sum())
        return n


def _score(state: HidingState, patterns: Sequence[SensitivePattern], fam: _Family) -> tuple[int, int, int]:
    """(sensitive patterns still mined, non-sensitive itemsets lost as :mod:`.metrics` counts them, items
    deleted): smaller is better."""
    failures = sum(pattern_mined(state, p) for p in patterns)
    _, _, added = state.net_edits()
    return failures, state.lost_count() + fam.lost(state), int((~added).sum())


def _lost_at_risk(state: HidingState, model: IPModel) -> int:
    """Lost itemsets among those the program tracks: Σ L_f of this solution (the conditional ones lost
    unless a rule whose X ∪ Y they hold has X ∪ Y below ``minc``)."""
    minc = state.min_count
    n = int(sum((state.fp_count[k][idx] < minc).sum() for k, idx in model.risk_at))
    if model.cond_at and model.cond_rules is not None:
        xy_low = np.array([state.count(state.rows(p.items)) < minc for p in model.z_patterns], dtype=bool)
        off = 0
        for k, idx in model.cond_at:
            low = state.counts(state.fx[k][idx]) < minc
            R = model.cond_rules[off : off + idx.size]
            off += idx.size
            n += int((low & ~(R & xy_low[None, :]).any(axis=1)).sum())
    return n


def _realize(state: HidingState, model: IPModel, sol: np.ndarray) -> None:
    """Give each group's transactions (shortest first, then the seeded tie-break) the deletion sets of ``sol``."""
    nx = model.nx
    x = np.rint(sol[:nx]).astype(np.int64)
    A, inv, n_g = model.A, model.group, model.n_g
    order = np.lexsort((state.tiebreak[A], state.lengths[A], inv))
    gstart = np.concatenate([[0], np.cumsum(n_g)[:-1]])
    within = np.zeros(nx, dtype=np.int64)  # offset of each variable inside its group
    if nx:
        cum = np.cumsum(x)
        gfirst = np.concatenate([[0], np.cumsum(model.per_g)[:-1]])
        base = np.where(gfirst > 0, cum[np.maximum(gfirst - 1, 0)], 0)
        within = cum - x - base[model.var_g]
    nz = np.flatnonzero(x)
    slot_var = np.repeat(nz, x[nz])
    slot_rank = np.arange(slot_var.size) - np.repeat(np.cumsum(x[nz]) - x[nz], x[nz])
    t_slot = A[order[gstart[model.var_g[slot_var]] + within[slot_var] + slot_rank]]
    pbits = ((model.var_p[slot_var][:, None] >> np.arange(model.IS.size)) & 1).astype(bool)
    si, ii = np.nonzero(pbits)
    state.apply(t_slot[si], model.IS[ii])


#: seconds a solve may run past the deadline before its child process is killed (HiGHS's own limit comes first)
HARD_GRACE = 0.5


def _solve(c, *, integrality, bounds, constraints, options: dict, deadline: float) -> SimpleNamespace | None:
    """``scipy.optimize.milp`` in a forked child killed at ``deadline`` (+ :data:`HARD_GRACE`): HiGHS's
    presolve and cut rounds do not look at its ``time_limit`` (module docstring). Returns milp's result
    fields, ``status = 1`` with ``x = None`` when killed, or None when no time is left."""
    from scipy.optimize import milp

    left = deadline - time.perf_counter()
    if left <= 0.2:
        return None
    opts = dict(options)
    opts["time_limit"] = max(0.1, min(float(opts.get("time_limit", left)), left))
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            r = milp(c, integrality=integrality, bounds=bounds, constraints=constraints, options=opts)
            out = {
                "status": int(r.status),
                "x": r.x,
                "fun": r.fun,
                "message": str(r.message),
                "mip_dual_bound": getattr(r, "mip_dual_bound", None),
            }
        except BaseException as e:
            out = {"error": f"{type(e).__name__}: {e}"}
        send.send(out)
        send.close()
        os._exit(0)

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(max(0.0, deadline - time.perf_counter()) + HARD_GRACE):
            out = recv.recv()
        else:
            out = {"status": 1, "x": None, "fun": None, "message": "killed at the deadline", "mip_dual_bound": None}
    except EOFError:  # the child died without an answer (out of memory, a signal)
        out = {"error": f"the solver process died (exit {proc.exitcode})"}
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if "error" in out:
        raise HidingError(f"exact: HiGHS failed: {out['error']}; use --algorithm border")
    return SimpleNamespace(**out)


def run_exact(
    state: HidingState,
    patterns: Sequence[SensitivePattern],
    *,
    time_limit: float = 60.0,
    max_variables: int = MAX_VARIABLES,
    max_constraints: int = MAX_CONSTRAINTS,
    incumbent: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Sanitize ``state`` with the fewest lost non-sensitive frequent itemsets (module docstring).

    Returns the program's size (``variables``, ``constraints``, ``groups``,
    ``affected_transactions``, ``at_risk_itemsets``), ``optimal`` (minimum misses cost
    proven), ``lower_bound`` (on lost itemsets), ``source`` (``"ip"`` or the incumbent
    kept) and ``solver_seconds``. Raises :class:`InstanceTooLarge` past the size guard.
    """
    try:
        from scipy.optimize import Bounds, LinearConstraint
        from scipy.sparse import coo_array
    except ImportError:  # pragma: no cover - scipy is a test dependency
        raise HidingError("the exact algorithm needs scipy (HiGHS): pip install scipy") from None
    t0 = time.perf_counter()
    deadline = t0 + float(time_limit)
    base = state.fork()
    model = build_model(base, patterns, max_variables=max_variables, max_constraints=max_constraints, progress=progress)
    mined = [p for p in patterns if pattern_mined(base, p)]
    fam = _Family(base, patterns)  # scored as the metrics count them (module docstring)
    hideable = model.hideable if model is not None else []
    unhideable = [str(p) for p in mined if p not in hideable]  # every transaction would have to be emptied
    if model is None:
        return {"optimal": True, "lower_bound": 0, "source": "none", "solver_seconds": 0.0, "unhideable": unhideable}
    info: dict = dict(model.stats)
    info["unhideable"] = unhideable
    patterns = hideable
    n_vars = model.n_vars
    lsl = model.l_slice
    bounds = Bounds(model.lower if model.lower is not None else np.zeros(n_vars), model.upper)
    cons = [LinearConstraint(model.matrix, model.lb, model.ub)]
    sum_l = coo_array(
        (np.ones(model.nf), (np.zeros(model.nf, dtype=np.int64), lsl.start + np.arange(model.nf))),
        shape=(1, n_vars),
    )
    c1 = np.zeros(n_vars)
    c1[lsl] = 1.0
    # a rule with a minimum confidence may be hidden by either route: the heuristics that lower
    # confidence (2a stops at whichever threshold it crosses first; 1b deletes consequent items) are
    # incumbents too, and 2a finishes a rounded solution
    by_conf = state.conf is not None and any(p.is_rule for p in patterns)
    finisher = "2a" if by_conf else "2b"
    debug = bool(os.environ.get("PPDM_HIGHS_LOG"))
    best: HidingState | None = None
    best_key: tuple[int, int, int] = (1 << 62, 0, 0)  # worse than any real solution

    def left() -> float:
        return deadline - time.perf_counter()

    def consider(sc: HidingState, name: str, finish: bool = False) -> None:
        nonlocal best, best_key
        if finish:  # a rounded solution may leave a sensitive pattern a few transactions short
            run_heuristic(sc, patterns, finisher, "min-side-effect")
        restore_unneeded(sc, patterns)
        key = _score(sc, patterns, fam)
        if progress:
            progress(f"exact: {name}: {key[1]} itemset(s) lost, {key[2]} item(s) deleted")
        if key < best_key:
            best, best_key, info["source"] = sc, key, name

    # 1. incumbents (kept even if they fail to hide: the last resort when nothing hides all)
    if incumbent:
        sc = base.fork()
        run_heuristic(sc, patterns, "2b", "min-side-effect")
        consider(sc, "heuristic")
        if by_conf:
            for strategy in ("2a", "1b") if all(p.is_rule for p in patterns) else ("2a",):
                sc = base.fork()
                run_heuristic(sc, patterns, strategy, "min-side-effect")
                consider(sc, f"heuristic {strategy}")
    # 2. the LP relaxation: a lower bound on the losses, and its rounded solution as a candidate
    lower = 0
    if model.nf and left() > 1.0:
        res = _solve(
            c1,
            integrality=np.zeros(n_vars),
            bounds=bounds,
            constraints=cons,
            options={"disp": debug, "time_limit": max(1.0, 0.25 * left())},
            deadline=deadline,
        )
        if res is not None and res.status == 0 and res.x is not None:
            lower = max(0, math.ceil(res.fun - 1e-6))
            xr = res.x.copy()
            xr[: model.nx] = np.floor(xr[: model.nx] + 1e-9)
            sc = base.fork()
            _realize(sc, model, xr)
            consider(sc, "lp-rounding", finish=True)
    if incumbent and best is not None and best_key[1] > lower and left() > 0.5 * float(time_limit):
        sc = base.fork()
        try:
            run_border(sc, patterns, deadline=deadline)
        except BorderDeadline:
            pass  # unfinished: not a candidate
        else:
            consider(sc, "border")
    optimal = best is not None and best_key[0] == 0 and best_key[1] <= lower
    target = _lost_at_risk(best, model) if (best is not None and best_key[0] == 0) else None
    candidates: list[np.ndarray] = []
    # 3. phase 1: strictly fewer lost at-risk itemsets than the best so far
    if not optimal and model.nf and (target is None or target > lower) and left() > 1.0:
        extra = [] if target is None else [LinearConstraint(sum_l, -np.inf, target - 1)]
        # HiGHS may overrun its limit inside a round of cuts: give it part of what is left
        opts = {"disp": debug, "mip_rel_gap": 0.0, "time_limit": max(1.0, 0.6 * left())}
        res = _solve(
            c1, integrality=model.integrality, bounds=bounds, constraints=cons + extra, options=opts, deadline=deadline
        )
        if res is None:
            res = SimpleNamespace(status=1, x=None, fun=None, message="no time left", mip_dual_bound=None)
        dual = res.mip_dual_bound
        if res.status == 0 and res.x is not None:
            optimal = True
            target = lower = int(round(res.x[lsl].sum()))
            candidates.append(res.x)
        elif res.status == 2 and target is not None:  # nothing strictly better than the best so far
            lower = target
            optimal = best_key[1] == target
        else:
            if res.x is not None:
                target = int(round(res.x[lsl].sum()))
                candidates.append(res.x)
            if dual is not None and math.isfinite(dual):
                lower = max(lower, math.ceil(dual - 1e-6))
        if progress:
            progress(f"exact: phase 1 {res.message.split('.')[0].lower()}; lower bound {lower}")
    elif model.nf == 0:
        optimal, target = True, 0
    if target is None and best is None:
        raise HidingError(
            f"exact: HiGHS found no solution within {time_limit:g} s; use --algorithm border or raise --time-limit"
        )
    # 4. phase 2: fewest deleted items at that many losses
    if target is not None and model.nx and left() > 0.5:
        pop = np.bitwise_count(model.var_p.astype(np.uint64)).astype(np.float64)
        c2 = np.concatenate([pop, np.zeros(n_vars - model.nx)])
        cap = LinearConstraint(sum_l, -np.inf, target)
        res2 = _solve(
            c2,
            integrality=model.integrality,
            bounds=bounds,
            constraints=[*cons, cap],
            options={"disp": debug, "time_limit": left()},
            deadline=deadline,
        )
        if res2 is not None and res2.x is not None:
            candidates.append(res2.x)
    # 5. realize every candidate, keep the best measured one
    for sol in candidates:
        sc = base.fork()
        _realize(sc, model, sol)
        consider(sc, "ip")
    if best is None:  # pragma: no cover
        raise HidingError("exact: no valid solution found; use --algorithm border")
    state.replay(best)
    if best_key[0]:  # some sensitive itemsets cannot be hidden together without emptying transactions
        optimal = False
    elif optimal:
        lower = best_key[1]
    info.update(
        optimal=bool(optimal),
        lower_bound=int(lower),
        lost=int(best_key[1]),
        solver_seconds=round(time.perf_counter() - t0, 3),
    )
    return info
