"""ppdm.anonymize — local privacy toolkit: publishing, randomization, DP, rule hiding, auditing, attacks."""
