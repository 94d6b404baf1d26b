"""Symmetric building blocks for oblivious transfer: an AES-CTR PRG and fixed-key AES hashes.

Model and assumptions
---------------------
* AES-128 (pyca/cryptography, i.e. OpenSSL with AES-NI) is a pseudorandom
  permutation; a *fixed, public* AES-128 key gives a permutation ``π`` that the
  hashes below treat as an ideal (random) permutation — the model in which
  Guo, Katz, Wang, Yu, "Efficient and Secure Multiparty Computation from
  Fixed-Key Block Ciphers" (IEEE S&P 2020, ePrint 2019/074) prove their hashes
  (tweakable) correlation robust.
* SHA-256 is used only for key/label derivation (a random oracle for short,
  domain-separated inputs), never per element on a hot path.

Everything works on whole numpy arrays of 128-bit blocks (``(m, 16) uint8``)
with one AES call per array, never one call per block (one call costs about as
much as 100 blocks). Nothing here is a new cipher: AES-CTR and AES-ECB come
from pyca; this module only fixes how they are keyed and chained.

Constructions
-------------
* :func:`prg`, :func:`prg_rows` — PRG ``G(seed, nonce) = AES-128-CTR_seed``
  keystream from the 128-bit counter block ``nonce + offset``; optionally XORed
  with data (CTR "encryption"), written with ``update_into`` into a
  preallocated buffer (~11 GB/s here).
* :func:`aes_fixed` — the fixed-key permutation ``π``.
* :func:`tccr_hash` — GKWY20 §7.4 tweakable circular correlation robust hash
  ``H(x, i) = π(π(x) ⊕ i) ⊕ π(x)`` with a 128-bit tweak ``i``.
* :func:`tccr_expand` — ``H`` stretched to ``L`` bytes with consecutive
  tweaks (a counter-mode use of the same hash).
* :func:`derive`, :func:`tweak64` — SHA-256 based, length-prefixed derivation
  of keys, nonces and 64-bit tweaks from labels such as protocol tags.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = [
    "BLOCK",
    "FIXED_KEY",
    "derive",
    "tweak64",
    "prg",
    "prg_rows",
    "aes_fixed",
    "tccr_hash",
    "tccr_expand",
]

BLOCK = 16
_MASK64 = (1 << 64) - 1

#: The public fixed AES key of ``π`` ("nothing up my sleeve": a hash of a label).
FIXED_KEY = hashlib.sha256(b"ppdm/mpc/crypto_hash/fixed-key-aes/v1").digest()[:16]

_FIXED_ALG = algorithms.AES(FIXED_KEY)
_zeros = np.zeros(0, np.uint8)


def _zero_buffer(nbytes: int) -> memoryview:
    """A read-only zero buffer of at least ``nbytes`` (grown and cached)."""
    global _zeros
    if _zeros.size < nbytes:
        _zeros = np.zeros(max(nbytes, 2 * _zeros.size), np.uint8)
        _zeros.setflags(write=False)
    # The arg-type ignores in this module: numpy arrays are buffers, but numpy's stubs declare
    # __buffer__ only for Python ≥ 3.12.
    return memoryview(_zeros)[:nbytes]  # type: ignore[arg-type]


# --------------------------------------------------------------------------- derivation
def derive(label: str, *parts: bytes | str | int, size: int = 32) -> bytes:
    """SHA-256 of a domain label and length-prefixed parts, truncated to ``size`` ≤ 32 bytes.

    ``derive(l, a, b) != derive(l, a + b)``: each part is prefixed with its
    length, ints are encoded as 8-byte little-endian, strings as UTF-8.
    """
    if not 1 <= size <= 32:
        raise ValueError("size must be 1..32 bytes")
    h = hashlib.sha256()
    for p in (label, *parts):
        if isinstance(p, str):
            p = p.encode()
        elif isinstance(p, int):
            p = struct.pack("<Q", p & _MASK64)
        h.update(struct.pack("<Q", len(p)))
        h.update(p)
    return h.digest()[:size]


def tweak64(tag: str, *parts: bytes | str | int) -> int:
    """A 64-bit tweak derived from a tag string (SHA-256, domain ``ppdm/tweak``)."""
    return int.from_bytes(derive("ppdm/tweak", tag, *parts, size=8), "little")


# --------------------------------------------------------------------------- PRG
def _ctr(seed: bytes, nonce: bytes, offset_blocks: int):
    if offset_blocks:
        ctr = (int.from_bytes(nonce, "big") + offset_blocks) % (1 << 128)
        nonce = ctr.to_bytes(16, "big")
    return Cipher(algorithms.AES(seed), modes.CTR(nonce)).encryptor()


def prg(
    seed: bytes,
    nonce: bytes,
    nbytes: int,
    *,
    offset_blocks: int = 0,
    data: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """PRG: ``AES-128-CTR_seed`` keystream from counter block ``nonce + offset_blocks``.

    Returns ``nbytes`` bytes as a ``uint8`` array (``out`` if given). With
    ``data`` (``nbytes`` bytes) the result is ``keystream ⊕ data`` at no extra
    cost. The same ``(seed, nonce)`` must never be used for two different
    purposes; callers derive ``nonce`` from a unique label (:func:`derive`).
    """
    if len(seed) != 16 or len(nonce) != 16:
        raise ValueError("seed and nonce must be 16 bytes")
    if out is None:
        out = np.empty(nbytes, np.uint8)
    src = _zero_buffer(nbytes) if data is None else memoryview(np.ascontiguousarray(data, np.uint8)).cast("B")  # type: ignore[arg-type]
    if len(src) != nbytes or out.nbytes != nbytes:
        raise ValueError("data/out must have nbytes bytes")
    _ctr(bytes(seed), nonce, offset_blocks).update_into(src, out.reshape(-1))
    return out


def prg_rows(
    seeds: np.ndarray,
    nonce: bytes,
    nbytes: int,
    *,
    offset_blocks: int = 0,
    data: np.ndarray | None = None,
    data_rows: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Expand each 16-byte seed (row of ``seeds``, ``(k, 16) uint8``) into ``nbytes`` bytes.

    Row ``i`` of the ``(k, nbytes)`` result is ``G(seeds[i], nonce) ⊕ d_i``
    (see :func:`prg`), where ``d_i`` is ``data`` if it is 1-D (shared by every
    row), ``data[i]`` if it is ``(k, nbytes)``, and zero if ``data`` is None or
    ``data_rows`` (``(k,) bool``) is given and false for row ``i``.
    """
    seeds = np.ascontiguousarray(seeds, np.uint8)
    k = seeds.shape[0]
    if seeds.shape != (k, 16):
        raise ValueError("seeds must be (k, 16) uint8")
    if out is None:
        out = np.empty((k, nbytes), np.uint8)
    if data is not None:
        data = np.ascontiguousarray(data, np.uint8)
        if data.shape not in ((nbytes,), (k, nbytes)):
            raise ValueError("data must be (nbytes,) or (k, nbytes)")
    zeros = _zero_buffer(nbytes)
    ctr = nonce
    if offset_blocks:
        ctr = ((int.from_bytes(nonce, "big") + offset_blocks) % (1 << 128)).to_bytes(16, "big")
    mode = modes.CTR(ctr)
    sb = seeds.tobytes()
    for i in range(k):  # k = 128 keys per slab: one AES call per key, not per block
        if data is None or (data_rows is not None and not data_rows[i]):
            src = zeros
        else:
            src = data if data.ndim == 1 else data[i]  # type: ignore[assignment]  # a buffer, like zeros
        Cipher(algorithms.AES(sb[16 * i : 16 * i + 16]), mode).encryptor().update_into(src, out[i])
    return out


# --------------------------------------------------------------------------- fixed-key hashes
def _as_blocks(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, np.uint8)
    if x.ndim != 2 or x.shape[1] != 16:
        raise ValueError("expected (m, 16) uint8 blocks")
    return x


def aes_fixed(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The fixed-key permutation ``π(x) = AES-128_FIXED_KEY(x)`` over ``(m, 16)`` blocks, one ECB call.

    ``out`` (``(m, 16) uint8``, C-contiguous, may be ``x`` itself) receives the result.
    """
    x = _as_blocks(x)
    m = x.shape[0]
    if out is None:
        out = np.empty((m, 16), np.uint8)
    elif out.shape != (m, 16) or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous (m, 16) uint8 array")
    if m:
        enc = Cipher(_FIXED_ALG, modes.ECB()).encryptor()
        # pyca wants one spare block of room in update_into's buffer: all blocks but the
        # last go straight into ``out`` (which has that room), the last one through update().
        if m > 1:
            enc.update_into(memoryview(x[:-1]).cast("B"), memoryview(out).cast("B"))  # type: ignore[arg-type]
        out[-1] = np.frombuffer(enc.update(x[-1].tobytes()), np.uint8)
    return out


def _tweak_words(m: int, tweak_hi: int, tweak_lo: int | np.ndarray) -> tuple[np.ndarray | np.uint64, np.uint64]:
    hi = np.uint64(tweak_hi & _MASK64)
    if isinstance(tweak_lo, np.ndarray):
        lo = tweak_lo.astype(np.uint64, copy=False)
        if lo.shape != (m,):
            raise ValueError("tweak_lo array must have one entry per block")
    else:
        lo = np.arange(m, dtype=np.uint64)
        if tweak_lo:
            lo += np.uint64(tweak_lo & _MASK64)
    return lo, hi


def tccr_hash(
    x: np.ndarray,
    tweak_hi: int,
    tweak_lo: int | np.ndarray = 0,
    *,
    px: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """TCCR hash ``H(x, i) = π(π(x) ⊕ i) ⊕ π(x)`` (Guo–Katz–Wang–Yu 2020) over ``(m, 16)`` blocks.

    The 128-bit tweak of block ``j`` is ``i_j = lo_j + 2^64 · tweak_hi`` with
    ``lo_j = tweak_lo + j`` (``tweak_lo`` an int) or ``tweak_lo[j]`` (an array).
    Security needs each ``(x, i)`` correlation (``x = q`` or ``q ⊕ Δ``) to use a
    distinct tweak; callers take ``tweak_hi`` from a per-call label.
    ``px`` may pass a precomputed ``π(x)``; ``out`` (C-contiguous ``(m, 16)``)
    receives the result, else a fresh array is returned.
    """
    if px is None:
        px = aes_fixed(x)
    m = px.shape[0]
    lo, hi = _tweak_words(m, tweak_hi, tweak_lo)
    y = px.copy()
    yw = y.view(np.uint64)  # (m, 2): little-endian words, word 0 = low 64 bits of i
    yw[:, 0] ^= lo
    yw[:, 1] ^= hi
    h = aes_fixed(y, out=y if out is None else out)
    np.bitwise_xor(h, px, out=h)
    return h


def tccr_expand(x: np.ndarray, nbytes: int, tweak_hi: int, tweak_lo: int | np.ndarray = 0) -> np.ndarray:
    """``H`` stretched to ``nbytes`` per block: ``H(x, i) ‖ H(x, i + 2^64) ‖ H(x, i + 2·2^64) …`` truncated.

    Output block ``b`` of row ``j`` uses tweak high word ``tweak_hi + b``; with
    ``nbytes ≤ 16`` this is just ``H(x, i)[:nbytes]``. Returns ``(m, nbytes)``.
    """
    x = _as_blocks(x)
    m = x.shape[0]
    nb = -(-nbytes // 16)
    if nb <= 1:
        return tccr_hash(x, tweak_hi, tweak_lo)[:, :nbytes]
    px = aes_fixed(x)
    out = np.empty((m, nb, 16), np.uint8)
    for b in range(nb):  # loop over 16-byte output blocks (L/16), vectorized over rows
        out[:, b] = tccr_hash(x, tweak_hi + b, tweak_lo, px=px)
    return out.reshape(m, nb * 16)[:, :nbytes]
