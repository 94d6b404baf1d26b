"""ppdm.parties — the party runtime: mTLS gRPC daemon, sessions, joint jobs, CLI."""
