"""ppdm.parties — the party side: daemon runtime, joint algorithms, jobs, the ``ppdm`` command.

* runtime (top-level modules): :mod:`.daemon` (the process), :mod:`.service`
  (RPC handlers), :mod:`.sessions` and :mod:`.mailbox`, :mod:`.policy` (what an
  analyst may ask; session guards), :mod:`.watchdog`, :mod:`.grpc_channel`,
  :mod:`.tls`, :mod:`.keyfiles` and :mod:`.pki` (certificates, CSRs,
  revocation), :mod:`.config`, :mod:`.client` (the analyst), :mod:`.local_cluster`;
* :mod:`.ratio` — thresholds as exact rationals, shared by the runtime and the joint algorithms;
* :mod:`.joint` — joint mining over an ``mpc`` Channel, free of the runtime;
* :mod:`.jobs` — the job registry and the built-in jobs the daemon runs;
* :mod:`.cli` — the ``ppdm`` command, one module per verb group.
"""
