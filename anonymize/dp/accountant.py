"""A privacy-budget accountant persisted to a JSON file, safe against concurrent processes.

The file records the total budget and every ε spent (as exact rationals written as text, so
ten queries of ε = 0.1 add up to exactly 1). A query is answered only if the composed cost of
every query so far *plus this one* stays within the total; otherwise it is refused and nothing
is recorded.

Composition (how the per-query ε_i add up):

* ``basic`` — ε_total = Σ ε_i (C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to
  sensitivity in private data analysis", TCC 2006; C. Dwork, A. Roth, "The Algorithmic Foundations
  of Differential Privacy", FnT-TCS 2014, Thm 3.16). Exact
  rational arithmetic.
* ``advanced`` — for pure ε_i-DP mechanisms and a slack δ > 0, the adaptive composition is
  (ε', δ)-DP with ε' = √(2 ln(1/δ) Σ ε_i²) + Σ ε_i (e^{ε_i} − 1) (C. Dwork, G. N. Rothblum,
  S. Vadhan, "Boosting and Differential Privacy", FOCS 2010; Dwork–Roth Thm 3.20 — stated there
  for equal ε_i; the same Azuma argument gives this form for unequal ε_i). The
  accountant charges min(basic, advanced): both bounds hold, so the smaller does. Floating point,
  rounded up by one part in 10¹².

Concurrency: every read-check-answer-write cycle holds an exclusive ``fcntl.flock`` on a sidecar
``<budget>.lock`` file (the budget file itself is replaced atomically by rename on each write, so
it cannot carry the lock). Two processes therefore cannot both pass the check on the same
remaining budget. The record is written *before* the answer is handed back; if writing fails,
the answer is never released (fail closed).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from ..errors import AnonymizeError
from .epsilon import as_epsilon

__all__ = ["BudgetAccountant", "BudgetExceeded", "compose", "COMPOSITIONS", "FORMAT"]

FORMAT = "ppdm-dp-budget/1"
COMPOSITIONS = ("basic", "advanced")
T = TypeVar("T")


class BudgetExceeded(AnonymizeError):
    """The query would take the composed ε over the total budget; nothing was spent."""


def compose(epsilons: list[Fraction], composition: str = "basic", delta: Fraction | None = None) -> Fraction | float:
    """Total ε of answering queries of costs ``epsilons`` (module docstring); exact for ``basic``."""
    basic = sum(epsilons, Fraction(0))
    if composition == "basic":
        return basic
    if composition != "advanced":
        raise AnonymizeError(f"unknown composition '{composition}' (use {', '.join(COMPOSITIONS)})")
    if delta is None or not 0 < delta < 1:
        raise AnonymizeError("advanced composition needs 0 < delta < 1")
    e = [float(x) for x in epsilons]
    adv = math.sqrt(2 * math.log(1 / float(delta)) * math.fsum(x * x for x in e)) + math.fsum(
        x * math.expm1(x) for x in e
    )
    adv *= 1 + 1e-12
    return basic if basic <= adv else adv


def _fmt(x: Fraction) -> str:
    """A rational as text Fraction() reads back exactly: a decimal when it has one, else p/q."""
    if x.denominator == 1:
        return str(x.numerator)
    d = x.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    places = max(twos, fives)
    s = f"{abs(x.numerator) * 10**places // x.denominator:0{places + 1}d}"
    s = f"{'-' if x < 0 else ''}{s[:-places]}.{s[-places:]}".rstrip("0").rstrip(".")
    return s


class BudgetAccountant:
    """The budget file at ``path``. Create it with :meth:`create`; answer through :meth:`spend`."""

    def __init__(self, path: str | os.PathLike):
        # the real path: a ledger reached through a symlink is the same ledger, with the same lock
        self.path = Path(os.path.realpath(path))
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # ------------------------------------------------------------------ locking and file I/O
    @contextmanager
    def _locked(self):
        d = self.path.parent if str(self.path.parent) else Path(".")
        if not d.is_dir():
            raise AnonymizeError(f"budget directory does not exist: {d}")
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)  # never through a link
        except OSError as e:
            raise AnonymizeError(f"cannot open the budget lock {self.lock_path}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _read(self) -> dict:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise AnonymizeError(
                f"budget file {self.path} does not exist (give --total-epsilon to create it)"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise AnonymizeError(f"cannot read budget file {self.path}: {e}") from None
        try:
            if doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            doc["_total"] = Fraction(doc["total_epsilon"])
            doc["_spent"] = [Fraction(q["epsilon"]) for q in doc["queries"]]
            doc["_delta"] = Fraction(doc["delta"]) if doc.get("delta") is not None else None
            if doc["composition"] not in COMPOSITIONS:
                raise ValueError(f"unknown composition {doc['composition']!r}")
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            raise AnonymizeError(f"budget file {self.path} is malformed ({e}); refusing to answer") from None
        return doc

    def _write(self, doc: dict) -> None:
        from ..publish.io import atomic_write_text

        out = {k: v for k, v in doc.items() if not k.startswith("_")}
        atomic_write_text(self.path, json.dumps(out, indent=2) + "\n", private=True)  # a ledger stays private

    # ------------------------------------------------------------------ public API
    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        total_epsilon,
        composition: str = "basic",
        delta=None,
        exist_ok: bool = False,
    ) -> BudgetAccountant:
        """Create the budget file with ``total_epsilon`` (and ``delta`` for advanced composition).

        With ``exist_ok``, an existing file is kept if it has the same total and composition; a
        different total is an error (a budget is never silently reset or enlarged)."""
        acc = cls(path)
        total = as_epsilon(total_epsilon, "total epsilon")
        if composition not in COMPOSITIONS:
            raise AnonymizeError(f"unknown composition '{composition}' (use {', '.join(COMPOSITIONS)})")
        d = None
        if composition == "advanced":
            if delta is None:
                raise AnonymizeError("advanced composition needs a delta (e.g. 1e-6)")
            d = as_epsilon(delta, "delta", bounds=None)
            if not d < 1:
                raise AnonymizeError(f"delta must be below 1, got {delta}")
        elif delta is not None:
            raise AnonymizeError("delta is only used with advanced composition")
        with acc._locked():
            if acc.path.exists():
                doc = acc._read()
                if not exist_ok:
                    raise AnonymizeError(f"budget file {acc.path} already exists")
                if doc["_total"] != total or doc["composition"] != composition or doc["_delta"] != d:
                    raise AnonymizeError(
                        f"budget file {acc.path} already exists with total epsilon {doc['total_epsilon']} "
                        f"({doc['composition']} composition); a budget cannot be changed"
                    )
                return acc
            acc._write(
                {
                    "format": FORMAT,
                    "total_epsilon": _fmt(total),
                    "composition": composition,
                    "delta": None if d is None else _fmt(d),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "queries": [],
                }
            )
        return acc

    def status(self) -> dict:
        """``{"total_epsilon", "epsilon_spent", "epsilon_left", "queries", "composition", "delta"}``."""
        with self._locked():
            doc = self._read()
        return self._status(doc, doc["_spent"])

    @staticmethod
    def _status(doc: dict, spent: list[Fraction]) -> dict:
        used = compose(spent, doc["composition"], doc["_delta"])
        left = doc["_total"] - used if isinstance(used, Fraction) else float(doc["_total"]) - used
        return {
            "total_epsilon": float(doc["_total"]),
            "epsilon_spent": float(used),
            "epsilon_left": max(0.0, float(left)),
            "queries": len(spent),
            "composition": doc["composition"],
            "delta": None if doc["_delta"] is None else float(doc["_delta"]),
        }

    def spend(self, epsilon, run: Callable[[], T], label: Any = None) -> tuple[T, dict]:
        """Answer one query of cost ``epsilon`` if the budget allows, else raise :class:`BudgetExceeded`.

        Under the lock: read the file, refuse if the composed cost with ``epsilon`` exceeds the
        total, call ``run()`` (which draws the noise), record the spend atomically, then return
        ``(run's result, status after the spend)``. If ``run`` raises, nothing is recorded.
        ``label`` (JSON-able, e.g. the query) is stored with the record.
        """
        eps = as_epsilon(epsilon)
        with self._locked():
            doc = self._read()
            spent = doc["_spent"] + [eps]
            used = compose(spent, doc["composition"], doc["_delta"])
            if used > doc["_total"]:
                before = compose(doc["_spent"], doc["composition"], doc["_delta"])
                left = doc["_total"] - before if isinstance(before, Fraction) else float(doc["_total"]) - before
                raise BudgetExceeded(
                    f"privacy budget exhausted: this query needs epsilon {_fmt(eps)} but only "
                    f"{float(max(left, 0)):.6g} of {_fmt(doc['_total'])} is left in {self.path}; nothing was spent"
                )
            result = run()
            doc["queries"] = doc["queries"] + [
                {"epsilon": _fmt(eps), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "query": label}
            ]
            self._write(doc)
        return result, self._status(doc, spent)

    def settle(self, label: Any, epsilon) -> dict:
        """Lower the ε of the latest spend recorded with ``label`` to ``epsilon`` (never raise it).

        For a spend charged up front and released only in part (a multi-step release that
        stopped early, or a session that never started): under *basic* composition with pure-DP
        steps the realized sum of the ε actually released bounds the privacy loss, even when the
        steps were chosen adaptively (R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy
        odometers and filters: pay-as-you-go composition", NeurIPS 2016), so the unreleased part
        may be returned. Refused under advanced composition. ``epsilon`` 0 returns the whole
        charge (the record stays, with ε 0). Returns the status after settling; an unknown label
        is an :class:`AnonymizeError`.
        """
        eps = Fraction(0) if epsilon in (0, "0") else as_epsilon(epsilon)
        with self._locked():
            doc = self._read()
            if doc["composition"] != "basic":
                raise AnonymizeError("a spend can only be settled lower under basic composition")
            for i in range(len(doc["queries"]) - 1, -1, -1):
                q = doc["queries"][i]
                if q.get("query") == label:
                    charged = doc["_spent"][i]
                    if eps < charged:
                        doc["queries"] = list(doc["queries"])
                        doc["queries"][i] = dict(q, epsilon=_fmt(eps), charged=q.get("charged", _fmt(charged)))
                        doc["_spent"][i] = eps
                        self._write(doc)
                    return self._status(doc, doc["_spent"])
            raise AnonymizeError(f"no spend recorded as {label!r} in {self.path}")
