"""ppdm.mpc — cryptographic protocols written against a :class:`mpc.channel.Channel`.

Transport-agnostic: the same code runs on the in-memory network (unit tests)
and between party daemons over mTLS gRPC (``parties``). Semi-honest model
unless a module says otherwise; every protocol's docstring names its
construction, its reference and exactly what it reveals.
"""
