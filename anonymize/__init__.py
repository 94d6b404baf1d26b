"""ppdm.anonymize — the local privacy toolkit (no network, no other party).

* :mod:`anonymize.publish` — privacy-preserving publishing: k-anonymity, l-diversity and
  t-closeness with full-domain generalization (Flash, Incognito, Samarati, Datafly) and
  Mondrian partitioning, metrics, re-identification risk, and the measurement of any released
  table;
* :mod:`anonymize.itemsets` — fast local frequent-itemset and association-rule miners (also used
  by the joint mining of :mod:`parties`);
* :mod:`anonymize.query` — aggregate queries given as data (JSON predicates, never code).

It never imports :mod:`mpc` or :mod:`parties`.
"""
