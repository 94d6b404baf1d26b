"""Typed parameters of the joint jobs an analyst starts: one frozen dataclass per job kind.

Each is validated once, when it is made (a :class:`JobParamError` naming the field, one line), and
serialized once, by :meth:`~MiningParams.to_params`, into the JSON ``params`` that ``StartJob``
sends every party (``parties/jobs/mining.py`` reads them). The ``ppdm mine`` command builds these
from its flags; Python callers build them directly::

    from parties.analyst import HorizontalMining, DPOptions
    HorizontalMining(min_support="1/3", min_confidence="0.8", n_items=120)
    HorizontalMining(min_support="0.3", max_len=3, dp=DPOptions(epsilon="1"))

Thresholds are exact rationals given as text (``"0.3"`` or ``"1/3"``, :mod:`parties.ratio`), so
every party and the centralized check compute the same ``ceil(min_support * N)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from parties.ratio import exact_ratio

__all__ = [
    "CANDIDATE_MODES",
    "COUNTING_MODES",
    "DPOptions",
    "HorizontalMining",
    "JobParamError",
    "MiningParams",
    "VerticalMining",
    "check_threshold",
]

CANDIDATE_MODES = ("union", "all", "auto")
COUNTING_MODES = ("auto", "product", "encrypted")
ALIGN_MODES = ("private-id", "psi")  # keyed vertical jobs (parties.joint.keyed); none: keyed data uses private-id


class JobParamError(ValueError):
    """A job parameter the parties could not honour: ``field`` and a one-line ``detail``."""

    def __init__(self, field: str, detail: str):
        super().__init__(f"{field} {detail}")
        self.field = field
        self.detail = detail


def check_threshold(value: str, name: str, *, allow_zero: bool = False) -> str:
    """``value`` (``"0.3"`` or ``"1/3"``) checked to lie in (0, 1] (or [0, 1]); returned stripped.

    The text itself is what the parties get, so every mode reads the same exact rational.
    """
    span = "[0, 1]" if allow_zero else "(0, 1]"
    if not isinstance(value, str):
        raise JobParamError(name, f"must be a number in {span} given as text (0.25 or 1/4), got {value!r}")
    try:
        f = exact_ratio(value, name)
    except ValueError:
        raise JobParamError(name, f"must be a number in {span} (0.25 or 1/4), got {value!r}") from None
    if not ((0 <= f if allow_zero else 0 < f) and f <= 1):
        raise JobParamError(name, f"must be in {span}, got {value}")
    return value.strip()


def _positive_int(v: Any, name: str, *, minimum: int = 1) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise JobParamError(name, f"must be an integer >= {minimum}, got {v!r}")


@dataclass(frozen=True)
class DPOptions:
    """ε-differential privacy of a joint horizontal mining job (:mod:`parties.joint.dp_mining`).

    ``epsilon``: the job's whole budget, charged by each party to the analyst's ledger;
    ``max_contributions``: each transaction counts towards at most that many candidates per level
    (None: no truncation); ``colluders``: the release stays ε-DP against that many colluding parties.
    """

    epsilon: str
    max_contributions: int | None = None
    colluders: int = 0

    def __post_init__(self) -> None:
        from anonymize.dp import as_epsilon

        try:
            as_epsilon(self.epsilon, "epsilon")
        except ValueError as e:
            raise JobParamError("epsilon", str(e).removeprefix("epsilon ")) from None
        object.__setattr__(self, "epsilon", str(self.epsilon).strip())
        if self.max_contributions is not None:
            _positive_int(self.max_contributions, "max_contributions")
        _positive_int(self.colluders, "colluders", minimum=0)

    def to_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"epsilon": self.epsilon, "max_contributions": self.max_contributions}
        if self.colluders:
            out["colluders"] = self.colluders
        return out


@dataclass(frozen=True)
class MiningParams:
    """What every joint mining job takes: thresholds and the longest itemset."""

    job: ClassVar[str]
    split: ClassVar[str]

    min_support: str
    min_confidence: str | None = None
    max_len: int | None = None
    data: str = "transactions"  # the [data] key every party reads (a path or a [data.KEY] table)

    def __post_init__(self) -> None:
        if not isinstance(self.data, str) or not self.data or not self.data.replace("_", "").replace("-", "").isalnum():
            raise JobParamError("data", f"must be a [data] key (letters, digits, _ and -), got {self.data!r}")
        object.__setattr__(self, "min_support", check_threshold(self.min_support, "min_support"))
        if self.min_confidence is not None:
            mc = check_threshold(self.min_confidence, "min_confidence", allow_zero=True)
            object.__setattr__(self, "min_confidence", mc)
        if self.max_len is not None:
            _positive_int(self.max_len, "max_len")

    def to_params(self) -> dict[str, Any]:
        """The JSON ``params`` of ``StartJob``."""
        return {
            "min_support": self.min_support,
            "min_confidence": self.min_confidence,
            "max_len": self.max_len,
            "data": self.data,
        }


@dataclass(frozen=True)
class HorizontalMining(MiningParams):
    """``mine.horizontal``: same items, different transactions (Kantarcioglu–Clifton; ε-DP with ``dp``).

    ``n_items``: an agreed integer universe ``0..n_items-1``, or ``catalog``: a public list of item
    names; with neither, the parties agree on the names locally frequent somewhere by secure union
    (:mod:`parties.joint.named`). ``candidates``: ``"union"`` (secure union of locally large itemsets),
    ``"all"`` (every public candidate; the only mode with ``dp``) or ``"auto"``; None picks
    ``"all"`` with ``dp`` and ``"union"`` without. ``reveal_counts`` False: decisions by secure
    comparisons only, counts come back as null.
    """

    job: ClassVar[str] = "mine.horizontal"
    split: ClassVar[str] = "horizontal"

    n_items: int | None = None
    catalog: tuple[str | int, ...] | None = None
    reveal_counts: bool = True
    candidates: str | None = None
    dp: DPOptions | None = field(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_items is not None:
            _positive_int(self.n_items, "n_items")
        if self.catalog is not None:
            cat = tuple(self.catalog)
            if not cat or not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in cat):
                raise JobParamError("catalog", "must be a non-empty list of item names (text or integers)")
            if len(set(cat)) != len(cat):
                raise JobParamError("catalog", "names an item twice")
            if self.n_items is not None:
                raise JobParamError("catalog", "and n_items both number the items: give one")
            object.__setattr__(self, "catalog", cat)
        if self.candidates is None:
            object.__setattr__(self, "candidates", "all" if self.dp else "union")
        if self.candidates not in CANDIDATE_MODES:
            raise JobParamError("candidates", f"must be one of {', '.join(CANDIDATE_MODES)}, got {self.candidates!r}")
        if self.dp is not None:
            if self.candidates != "all":
                raise JobParamError(
                    "candidates",
                    f"{self.candidates} cannot be used with epsilon: the secure union of locally large itemsets "
                    "is not differentially private",
                )
            if self.max_len is None:
                raise JobParamError(
                    "max_len", "is needed with epsilon: the budget is split over at most that many levels"
                )
            if not self.reveal_counts and self.min_confidence is not None:
                raise JobParamError("min_confidence", "needs the noisy counts with epsilon (reveal_counts)")

    def with_items(self, n_items: int) -> HorizontalMining:
        """The same parameters over the item universe ``0..n_items-1``."""
        return replace(self, n_items=n_items)

    def to_params(self) -> dict[str, Any]:
        out = super().to_params()
        out.update(reveal_counts=self.reveal_counts, candidates=self.candidates)
        if self.n_items is not None:
            out["n_items"] = self.n_items
        if self.catalog is not None:
            out["catalog"] = list(self.catalog)
        if self.dp is not None:
            out.update(self.dp.to_params())
        return out


@dataclass(frozen=True)
class VerticalMining(MiningParams):
    """``mine.vertical``: same transactions, different items (Vaidya–Clifton with secure products).

    ``align``: for keyed tables, how records are matched — ``"private-id"`` (the default for keyed
    data: the union's rows, no party learns which of its records the others hold) or ``"psi"``
    (the common keys, revealed to the parties); files without keys are aligned by position.
    ``counting``: how candidates whose items two or more parties own are counted — ``"product"``
    (OT-batched Gilboa products), ``"encrypted"`` (LWE-encrypted columns) or ``"auto"`` (per level,
    by estimated cost).
    """

    job: ClassVar[str] = "mine.vertical"
    split: ClassVar[str] = "vertical"

    counting: str = "auto"
    align: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.counting not in COUNTING_MODES:
            raise JobParamError("counting", f"must be one of {', '.join(COUNTING_MODES)}, got {self.counting!r}")
        if self.align is not None and self.align not in ALIGN_MODES:
            raise JobParamError("align", f"must be one of {', '.join(ALIGN_MODES)}, got {self.align!r}")

    def to_params(self) -> dict[str, Any]:
        out = super().to_params()
        out["counting"] = self.counting
        if self.align is not None:
            out["align"] = self.align
        return out
