"""Uniform random integers for exact samplers: the operating system's CSPRNG, or a seeded stream.

Every noise sampler in :mod:`anonymize.dp` (and the collection-time perturbation of
:mod:`anonymize.randomize`) consumes randomness through one object, :class:`RandomSource`:

* ``RandomSource()`` reads ``os.urandom`` — the same kernel CSPRNG that Python's :mod:`secrets`
  uses. This is the production setting.
* ``RandomSource(seed)`` expands ``seed`` with AES-256 in counter mode (key = SHA-256 of the seed,
  from pyca/cryptography) — a reproducible stream for tests and benchmarks. It is a cryptographic
  PRG, but anyone who knows the seed knows the noise: never use a seed for a real release.

:meth:`RandomSource.below` returns integers exactly uniform on ``[0, n)`` for an array of bounds
``n`` (rejection sampling on 64-bit words, the method of OpenBSD's ``arc4random_uniform``), so
the samplers built on it need no floating point at all.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

__all__ = ["RandomSource", "as_source"]


class RandomSource:
    """A source of uniformly random 64-bit words and exactly uniform bounded integers.

    ``seed`` — ``None`` for ``os.urandom`` (use this for releases), or an ``int`` / ``bytes`` /
    ``str`` for a reproducible AES-256-CTR stream (tests, benchmarks).
    """

    __slots__ = ("_read", "seeded")

    def __init__(self, seed: int | bytes | str | None = None):
        self.seeded = seed is not None
        if seed is None:
            self._read = os.urandom
            return
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        if isinstance(seed, int):
            if seed < 0:
                raise ValueError("a seed must be a non-negative integer")
            seed = seed.to_bytes(max(1, (seed.bit_length() + 7) // 8), "big")
        elif isinstance(seed, str):
            seed = seed.encode("utf-8")
        key = hashlib.sha256(b"ppdm.dp.RandomSource/1\x00" + bytes(seed)).digest()
        enc = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()
        self._read = lambda n: enc.update(bytes(n))

    def bytes(self, n: int) -> bytes:
        """``n`` random bytes."""
        return self._read(int(n))

    def words(self, size: int) -> np.ndarray:
        """``size`` independent uniform ``uint64`` words."""
        return np.frombuffer(self._read(8 * int(size)), dtype="<u8").astype(np.uint64)  # a writable copy

    def below(self, n) -> np.ndarray:
        """Integers exactly uniform on ``[0, n_i)`` for every bound ``n_i`` in ``n`` (≥ 1, < 2**63).

        Rejection: a word ``r`` is kept when ``r ≥ 2**64 mod n`` (the kept range holds a whole
        number of copies of ``[0, n)``), then reduced mod ``n``. The expected number of words per
        output is below 2.
        """
        n = np.atleast_1d(np.asarray(n, dtype=np.uint64))
        if n.size and (n.min() < 1 or n.max() >= np.uint64(2**63)):
            raise ValueError("bounds must be in [1, 2**63)")
        threshold = (np.zeros_like(n) - n) % n  # (2**64 - n) mod n = 2**64 mod n, in uint64 arithmetic
        out = self.words(n.size)
        bad = np.flatnonzero(out < threshold)
        while bad.size:
            out[bad] = self.words(bad.size)
            bad = bad[out[bad] < threshold[bad]]
        return out % n

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of ``range(n)``: the order of ``n`` random 64-bit keys, drawn
        again in the rare case (probability below n²/2⁶⁵) that two keys are equal. From the OS CSPRNG
        by default, so a release's row order carries no state of a seeded generator."""
        n = int(n)
        while True:
            keys = self.words(n)
            order = np.argsort(keys, kind="stable")
            if n < 2 or not (np.diff(keys[order]) == 0).any():
                return order

    def uniform01(self, size: int) -> np.ndarray:
        """``size`` floats uniform on ``(0, 1)``: 53 random bits plus one half, never 0 or 1.

        Only for collection-time perturbation (:mod:`anonymize.randomize`), which is continuous by
        definition; the DP samplers never use floats."""
        w = self.words(size) >> np.uint64(11)
        return (w.astype(np.float64) + 0.5) * 2.0**-53


def as_source(rng) -> RandomSource:
    """``rng`` if it is a :class:`RandomSource`; a seeded one for an int/bytes/str; the OS CSPRNG for None."""
    if isinstance(rng, RandomSource):
        return rng
    if rng is None or isinstance(rng, (int, bytes, str)):
        return RandomSource(rng)
    raise TypeError(f"expected a RandomSource, a seed or None, got {type(rng).__name__}")
