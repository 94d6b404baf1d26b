"""ppdm.parties — the party side: daemons, joint algorithms, jobs, the analyst, the ``ppdm`` command.

Subpackages, by concern:

* :mod:`.runtime` — a party's daemon process: gRPC service, sessions, mailbox, watchdog,
  the gRPC channel between daemons, link shaping;
* :mod:`.guards` — what a daemon checks around each session: the party's policy, the audit
  of revealed party sets (pooled round, persisted state), privacy budgets;
* :mod:`.identity` — TLS credentials, the offline CA (PKI), key files;
* :mod:`.analyst` — the analyst's Python API: typed job parameters, joint jobs on daemons
  named in an analyst config or on a local cluster;
* :mod:`.services` — ``ppdm audit serve`` (the query-auditing service);
* :mod:`.jobs` — the job registry and the built-in jobs the daemon runs;
* :mod:`.sources` — a party's tables where they live (CSV, Parquet, DuckDB, PostgreSQL) read
  into transactions with item names and key digests;
* :mod:`.joint` — joint mining over an ``mpc`` Channel, free of the runtime;
* :mod:`.cli` — the ``ppdm`` command, one module per verb group (nothing imports it);
* :mod:`.proto` — generated gRPC code (from ``protos/``, :mod:`.gen_proto`).

Top-level modules: :mod:`.config` (``party.toml``: the one configuration every concern reads),
:mod:`.ratio` (thresholds as exact rationals, shared by the guards and the joint algorithms).

Layering (import-linter contracts in ``pyproject.toml``): ``joint`` imports nothing of
``runtime``; ``guards`` and ``identity`` import nothing of ``runtime``, ``analyst`` or ``cli``;
``jobs`` imports no guard; nothing imports ``cli``; no module is part of an import circle
(``tests/test_layering.py``).
"""
