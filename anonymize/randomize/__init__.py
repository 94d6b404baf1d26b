"""Privacy at collection time: additive noise, distribution reconstruction, mining on distributions.

(R. Agrawal, R. Srikant, "Privacy-Preserving Data Mining", ACM SIGMOD 2000; D. Agrawal,
C. C. Aggarwal, "On the Design and Quantification of Privacy Preserving Data Mining
Algorithms", ACM PODS 2001; C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.2.)

* :mod:`.noise` — :class:`Noise` (uniform on [−a, a] or Gaussian σ) and :func:`perturb`;
* :mod:`.reconstruct` — :func:`reconstruct` by AS iterative Bayes (eq. 20.5) or EM, vectorized
  over a kernel matrix, and :func:`information_loss` (½∫|f − f̂| against a density or a sample);
* :mod:`.privacy` — interval privacy at a confidence level (relative to the attribute's range) and conditional-entropy privacy 2^{h(X|Z)};
* :mod:`.classify` — naive Bayes trained on per-class reconstructed distributions (ByClass).
"""

from .classify import HistogramNaiveBayes, ReconstructedNaiveBayes
from .noise import NOISE_KINDS, Noise, perturb, scale_for_privacy
from .privacy import conditional_privacy, estimate_range, interval_privacy, privacy_interval
from .reconstruct import METHODS, Reconstruction, bin_mass_loss, information_loss, reconstruct, sample_density

__all__ = [
    "NOISE_KINDS",
    "Noise",
    "perturb",
    "scale_for_privacy",
    "METHODS",
    "Reconstruction",
    "reconstruct",
    "information_loss",
    "bin_mass_loss",
    "sample_density",
    "conditional_privacy",
    "interval_privacy",
    "privacy_interval",
    "estimate_range",
    "ReconstructedNaiveBayes",
    "HistogramNaiveBayes",
]
