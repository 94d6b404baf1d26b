"""Joint frequent-itemset and association-rule mining over partitioned data.

Both protocols run on a :class:`mpc.channel.Channel` (so they are unit-tested
on the in-memory network and run unchanged between daemons), semi-honest
model, and give exactly the centralized result: the frequent itemsets of the
pooled data with their counts (an itemset X is frequent iff
``count(X) ≥ ceil(minsup · N)``, minsup taken as the exact decimal), and the
rules above the confidence.

* :mod:`parties.joint.horizontal` — Kantarcioglu & Clifton (IEEE TKDE 2004):
  each party holds some of the transactions;
* :mod:`parties.joint.vertical` — Vaidya & Clifton (KDD 2002): each party holds
  some of the items of every transaction;
* :mod:`parties.joint.partition` — splitting a transaction file into party
  shares and loading a party's share.

Nothing here imports the daemon runtime (gRPC, TLS, sessions, jobs): the
daemon's jobs (:mod:`parties.jobs.mining`) call these functions with a
:class:`~parties.runtime.grpc_channel.GrpcChannel`; tests call them on
:class:`mpc.channel.MemoryNetwork`.
"""

from parties.joint.common import JointResult, check_all
from parties.joint.horizontal import mine_horizontal
from parties.joint.vertical import mine_vertical

__all__ = ["JointResult", "mine_horizontal", "mine_vertical", "check_all"]
