"""Re-identification risk of released classes (prosecutor, journalist, marketer)."""

from __future__ import annotations

import numpy as np

__all__ = ["reidentification_risk"]


def reidentification_risk(sizes, population_sizes=None) -> dict:
    """Re-identification risks of the released classes (El Emam & Dankar, JAMIA 2008; ARX's risk model).

    sizes: f_j, rows per released class. population_sizes: F_j, matching individuals in the
    population (≥ f_j); without it the release is taken as the population (F_j = f_j).

    * prosecutor (the target is known to be in the release): max = 1/min f_j, average = J/n
      (mean over records of 1/f_j);
    * journalist (the target is someone in the population): max = 1/min F_j, average as ARX
      defines it (``RiskModelSampleSummary``): max(J / Σ_j F_j, (1/n) Σ_j f_j/F_j) — the larger
      of the population-weighted and the sample-weighted average (both J/n without a population);
    * marketer (share of records re-identified when matching everyone): (1/n) Σ_j f_j/F_j
      (= J/n, the number of classes over n, without a population table).
    """
    f = np.asarray(sizes, dtype=np.float64)
    keep = f > 0
    f = f[keep]
    if len(f) == 0:
        return {
            "prosecutor_max": 0.0,
            "prosecutor_avg": 0.0,
            "journalist_max": 0.0,
            "journalist_avg": 0.0,
            "marketer": 0.0,
            "records_in_unique_classes": 0,
        }
    n = f.sum()
    F = f if population_sizes is None else np.maximum(np.asarray(population_sizes, dtype=np.float64)[keep], f)
    return {
        "prosecutor_max": float(1.0 / f.min()),
        "prosecutor_avg": float(len(f) / n),
        "journalist_max": float(1.0 / F.min()),
        "journalist_avg": float(max(len(f) / F.sum(), (f / F).sum() / n)),
        "marketer": float((f / F).sum() / n),
        "records_in_unique_classes": int(f[f == 1].sum()),
    }
