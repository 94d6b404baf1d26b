"""Services beside the party daemon.

* :mod:`.query_audit` — ``ppdm audit serve``: aggregate queries on one private table behind an
  online query auditor, over mTLS.
"""
