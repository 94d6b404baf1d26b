"""Naive Bayes trained on reconstructed per-class distributions of perturbed attributes.

R. Agrawal and R. Srikant ("Privacy-Preserving Data Mining", SIGMOD 2000, §4, the "ByClass"
strategy) reconstruct, for every class label c, the distribution of each perturbed attribute
among the training records of class c, and train the classifier on those distributions; C. C.
Aggarwal (*Data Mining: The Textbook*, Springer 2015, §20.2.2) notes that a naive Bayes
classifier needs nothing else: P(c | x) ∝ P(c) Π_j f̂_{j,c}(x_j).

* :class:`ReconstructedNaiveBayes` — fit on *perturbed* training values (the class label is not
  perturbed, as in AS 2000), reconstructing f̂_{j,c} with :func:`.reconstruct.reconstruct` on a
  grid shared by all classes; predicts *unperturbed* records (AS 2000 test on original data).
* :class:`HistogramNaiveBayes` — the same classifier on the original values with the same
  intervals: the baseline the reconstruction is compared with.

Both use add-one (Laplace) smoothing per interval, so an interval never has probability zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .noise import Noise
from .reconstruct import default_domain, reconstruct

__all__ = ["ReconstructedNaiveBayes", "HistogramNaiveBayes"]


def _bin_index(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Interval of each value; values outside the grid go to the first/last interval."""
    idx = np.searchsorted(edges, x, side="right") - 1
    return np.clip(idx, 0, len(edges) - 2)


def _numeric(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df.columns:
        raise AnonymizeError(f"unknown column '{col}'")
    s = df[col]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise AnonymizeError(f"column '{col}' is not numeric")
    x = s.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise AnonymizeError(f"column '{col}' has missing or infinite values")
    return x


class _NaiveBayes:
    classes_: np.ndarray
    log_prior_: np.ndarray
    edges_: dict[str, np.ndarray]
    log_prob_: dict[str, np.ndarray]  # attribute -> (n_classes, bins)

    def _set_classes(self, y: np.ndarray) -> np.ndarray:
        self.classes_, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
        if len(self.classes_) < 2:
            raise AnonymizeError("the class column needs at least two classes")
        self.log_prior_ = np.log(counts / counts.sum())
        return inv

    @staticmethod
    def _smoothed(prob: np.ndarray, n_c: int) -> np.ndarray:
        return np.log((prob * n_c + 1.0) / (n_c + len(prob)))

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Most probable class of every row (unperturbed attribute values)."""
        score = np.tile(self.log_prior_, (len(df), 1))
        for col, edges in self.edges_.items():
            idx = _bin_index(_numeric(df, col), edges)
            score += self.log_prob_[col][:, idx].T
        return self.classes_[np.argmax(score, axis=1)]

    def score(self, df: pd.DataFrame, class_column: str) -> float:
        """Accuracy on ``df``."""
        return float(np.mean(self.predict(df) == df[class_column].to_numpy()))


class ReconstructedNaiveBayes(_NaiveBayes):
    """ByClass naive Bayes on perturbed attributes (module docstring).

    ``noise`` — the public noise of each perturbed attribute; ``bins`` intervals per attribute;
    ``method`` "as" or "em"; ``domains`` — optional public range per attribute.
    """

    def __init__(
        self,
        noise: Mapping[str, Noise],
        bins: int = 20,
        method: str = "em",
        domains: Mapping[str, tuple[float, float]] | None = None,
        max_iter: int = 2000,
    ):
        self.noise = dict(noise)
        self.bins, self.method, self.max_iter = bins, method, max_iter
        self.domains = dict(domains or {})
        self.reconstructions_: dict = {}

    def fit(self, perturbed: pd.DataFrame, class_column: str, attributes: Sequence[str] | None = None):
        attributes = list(attributes or self.noise)
        if class_column not in perturbed.columns:
            raise AnonymizeError(f"unknown class column '{class_column}'")
        inv = self._set_classes(perturbed[class_column].to_numpy())
        self.edges_, self.log_prob_ = {}, {}
        for col in attributes:
            if col not in self.noise:
                raise AnonymizeError(f"no noise model given for attribute '{col}'")
            z = _numeric(perturbed, col)
            dom = self.domains.get(col) or default_domain(z, self.noise[col], self.bins)
            rows = []
            for c in range(len(self.classes_)):
                zc = z[inv == c]
                rec = reconstruct(zc, self.noise[col], self.bins, self.method, dom, self.max_iter)
                self.reconstructions_[(col, self.classes_[c])] = rec
                rows.append(self._smoothed(rec.probabilities, zc.size))
            self.edges_[col] = rec.edges
            self.log_prob_[col] = np.vstack(rows)
        return self


class HistogramNaiveBayes(_NaiveBayes):
    """Naive Bayes on original values over given intervals (``edges`` per attribute)."""

    def __init__(self, edges: Mapping[str, np.ndarray]):
        self.edges_ = {k: np.asarray(v, dtype=np.float64) for k, v in edges.items()}

    def fit(self, df: pd.DataFrame, class_column: str):
        if class_column not in df.columns:
            raise AnonymizeError(f"unknown class column '{class_column}'")
        inv = self._set_classes(df[class_column].to_numpy())
        self.log_prob_ = {}
        for col, edges in self.edges_.items():
            idx = _bin_index(_numeric(df, col), edges)
            rows = []
            for c in range(len(self.classes_)):
                counts = np.bincount(idx[inv == c], minlength=len(edges) - 1).astype(np.float64)
                rows.append(self._smoothed(counts / max(counts.sum(), 1.0), int(counts.sum())))
            self.log_prob_[col] = np.vstack(rows)
        return self
