"""Partitioning algorithms: a class id per row, released as each class's bounding cells.

* :mod:`.mondrian` — Mondrian multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan 2006),
  registered in :mod:`..registry` as a ``partition`` algorithm.
"""

from . import mondrian  # noqa: F401  (registers the algorithm)
from .mondrian import MODES, MondrianResult

__all__ = ["MODES", "MondrianResult"]
