"""Synthetic publishing by condensation (Aggarwal & Yu, EDBT 2004; Aggarwal 2015, §20.3.1.4):
:func:`.condensation.condensation` (static and stream variants, kind ``synthetic``) and
:func:`.condensation.covariance_check`."""

from . import condensation as condensation_module
from .condensation import VARIANTS, GroupStats, SyntheticResult, condensation, covariance_check

__all__ = ["condensation_module", "condensation", "covariance_check", "SyntheticResult", "GroupStats", "VARIANTS"]
