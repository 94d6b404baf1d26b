"""Session guards: what a daemon checks before (and settles after) a session it is asked to join.

* :mod:`.policy` — the party's policy (who may ask what, ``min_parties``, caps), the
  :class:`~parties.guards.policy.Guard` interface and :class:`~parties.guards.policy.SessionRequest`;
* :mod:`.audit` — the auditor of the party sets whose sums were revealed, with its pooled round
  (:mod:`.audit_pool`) and persisted state (:mod:`.audit_state`);
* :mod:`.dp_budget` — per-analyst privacy budgets and the guard that charges them.

Guards wrap jobs: they may import :mod:`parties.jobs` (a job's declarations, its context),
never the reverse. They import nothing of :mod:`parties.runtime`, :mod:`parties.analyst` or
:mod:`parties.cli` (import-linter contract).
"""
