"""Security levels and parameter selection for publishing (Xu & Guo 2021; see docs/policy.md)."""
