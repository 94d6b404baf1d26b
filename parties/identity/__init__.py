"""Identity of parties and analysts: certificates bound to names.

* :mod:`.tls` — credentials (certificate, key, CA, revocation list), fingerprints, name rules;
* :mod:`.pki` — the offline CA: initialise, sign CSRs, revoke;
* :mod:`.keyfiles` — private and public files written with the right modes.

Imports nothing of :mod:`parties.runtime`, :mod:`parties.analyst` or :mod:`parties.cli`
(import-linter contract).
"""
