"""Class-size metrics of a release: discernibility, CDM, average class size, class summary.

Full entries of the works cited: docs/references.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["discernibility", "cdm", "CDM_DEFINITION", "average_class_size", "summarize_classes"]

CDM_DEFINITION = (
    "sum of squared class sizes / number of classes: ppdm's reconstruction of the CDM of Xu & Guo, "
    "Computer Engineering 47(5), 2021 (the published formula is not in the text available to us)"
)
"""What every report prints next to ``cdm``, so no reader mistakes it for the paper's own formula."""


def discernibility(sizes, n_suppressed: int = 0, n: int | None = None) -> float:
    """Discernibility metric DM = Σ_E |E|² + |S|·n (Bayardo & Agrawal, "Data privacy through optimal
    k-anonymization", ICDE 2005: each class costs |E|², each suppressed record n).
    ``n`` defaults to Σ|E| + |S|."""
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    if n is None:
        n = int(sizes.sum()) + int(n_suppressed)
    return float((sizes**2).sum() + float(n_suppressed) * n)


def cdm(sizes) -> float:
    """The improved discernibility metric CDM of Xu & Guo, "Privacy protection model and parameter
    optimization method for data dissemination", Computer Engineering 47(5), 2021, over the N
    equivalence classes of sizes Q_i.

    The formula is missing from the copy of the paper we worked from (its displayed formulas were
    lost; the published version, doi:10.19678/j.issn.1000-3428.0056305, has not yet been checked
    against this reconstruction). The prose says CDM is built from Q_i and N, grows with k, equals
    a fixed function of k for uniform classes (the paper derives K_max from a CDM bound and a CDM
    target from P_max = 1/k) and is smaller when the classes are more even. We use
    CDM = Σ_i Q_i² / N — DM per class (Bayardo & Agrawal's Σ|E|² divided by N), which is k² for
    classes all of size k and, for a fixed number of classes, smallest when they
    are equal. Suppressed rows are not classes here (count them with :func:`discernibility`).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    return float((sizes**2).sum() / len(sizes)) if len(sizes) else 0.0


def average_class_size(sizes, k: int) -> float:
    """C_avg = (released records / number of classes) / k (LeFevre, DeWitt, Ramakrishnan, ICDE 2006);
    1 is ideal."""
    sizes = np.asarray(sizes)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0 or k <= 0:
        return 0.0
    return float(sizes.sum() / len(sizes) / k)


def summarize_classes(sizes) -> dict:
    """Count, min / max / mean / median size of the non-empty classes."""
    s = np.asarray(sizes)
    s = s[s > 0]
    if len(s) == 0:
        return {"classes": 0}
    return {
        "classes": int(len(s)),
        "min": int(s.min()),
        "max": int(s.max()),
        "mean": float(s.mean()),
        "median": float(np.median(s)),
    }
