"""The daemon runtime: one party's process and what it runs sessions with.

* :mod:`.daemon` — the process (server, signals, housekeeping, aborts sent to peers);
* :mod:`.service` — the gRPC handlers (``Deliver``, ``DeliverOne``, ``StartJob``, ``Abort``, ``Health``);
* :mod:`.sessions` and :mod:`.mailbox` — session state, per-peer buffers and their caps;
* :mod:`.watchdog` — peer liveness during a session; :mod:`.streams` — reading message streams
  (deadlines, idle cuts, draining a refused message); :mod:`.host` — what the servicer needs of its daemon;
* :mod:`.grpc_channel` — the ``mpc`` Channel over gRPC between daemons, the per-peer channel pool;
* :mod:`.shaping` — emulated WAN links (latency, bandwidth) and network-wait counters.

It may import :mod:`parties.guards`, :mod:`parties.identity`, :mod:`parties.jobs` and
:mod:`parties.config`; nothing outside ``parties.analyst`` (which starts daemons) and
``parties.cli`` imports it, and :mod:`parties.joint` never does (import-linter contracts).
"""
