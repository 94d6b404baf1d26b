"""Shares of Σ_t x_α[t]·y_β[t] for sparse x, by additively homomorphic LWE encryption of y.

Model and assumptions
---------------------
Two semi-honest parties of a session: the *encryptor* E holds ``m_E`` bit
columns y_β ∈ {0,1}^N, the *selector* S holds ``m_S`` bit columns x_α (its
transaction-id sets T_α = {t : x_α[t] = 1}); a public list of K pairs
(α_k, β_k) names the inner products wanted. Output: additive shares over
Z_2^64 of ``X_k = Δ·count_k + e_k`` with ``count_k = |T_α ∩ T_β|`` and a noise
term |e_k| far below Δ/4 (bounded below), for a public Δ = 2^d; reveal,
compare or round them with :mod:`mpc.secure_sum` and :func:`round_shares`.

Construction
------------
The homomorphic scalar product of Goethals, Laur, Lipmaa and Mielikäinen
("On private scalar product computation for privacy-preserving data
mining", ICISC 2004, §4) — one party encrypts its vector, the other adds the
ciphertexts at its own positions, re-randomizes and masks — with Paillier
encryption (P. Paillier, "Public-key cryptosystems based on composite degree
residuosity classes", EUROCRYPT 1999) replaced by LWE encryption (O. Regev, "On
lattices, learning with errors, random linear codes, and cryptography", STOC
2005) in its packed, seeded form (C. Peikert, V. Vaikuntanathan, B. Waters, "A
framework for efficient and composable oblivious transfer", CRYPTO 2008: one
random vector a_t per row for all m_E columns; the a_t from a public seed) and
the public-key re-randomization of R. Lindner, C. Peikert ("Better key sizes
(and attacks) for LWE-based encryption", CT-RSA 2011, §3). With q = 2^64, n = :data:`LWE_N`:

1. E draws a ternary secret matrix Sk ∈ {−1,0,1}^{n×m_E}; public A ∈ Z_q^{N×n}
   and A_pk ∈ Z_q^{n×n} come from a fresh seed E sends. E sends the public key
   P = A_pk·Sk + E_pk and, streamed in row blocks, C = A·Sk + E + Δ·Y.
2. S computes, for each of its columns, u_α = Σ_{t∈T_α} a_t and
   c_{α,β} = Σ_{t∈T_α} C[t,β] — additions of the rows it selects, so its work
   follows |T_α|. It re-randomizes with an LWE encryption of zero
   (r_α ternary, fresh noise): w_α = u_α + r_αᵀA_pk + e2_α and
   c'_{α,β} = r_αᵀP[:,β] + e3, and sends w_α and v_k = c_{α,β} + c'_{α,β} + ρ_k
   for a uniform ρ_k ∈ Z_q it keeps. Its share is −ρ_k.
3. E's share is v_k − w_α·Sk[:,β] = Δ·count_k + e_k + ρ_k.

Security and parameters: n = 2048, q = 2^64, rounded Gaussian errors of
σ = 3.2·2^13 and ternary secrets have the noise rate σ/q of the set n = 2048,
log q = 51, σ = 3.2, which the Homomorphic Encryption Security Standard
(M. Albrecht, M. Chase, H. Chen et al., "Homomorphic Encryption Security
Standard", HomomorphicEncryption.org, 2018, Table 1) lists as 128-bit secure
against quantum attacks (classical: log q ≤ 54). An earlier σ = 3.2·2^10 matched
log q = 54: 128 bits classically, about 120 quantum. :mod:`mpc.lwe_security`
keeps the comparison reproducible (the equivalent log q, and a primal-uSVP
core-SVP block size against the standard's row). C and P are LWE samples under Sk (E's columns stay
hidden from S); w_α is u_α plus an LWE sample under r_α, pseudorandom to E
even though E knows Sk (so T_α stays hidden from E); every v_k is masked by a
uniform ρ_k. Noise: |e_k| ≤ 10σ·√(|T_α| + 2n + 1) except with probability
< 2^-70, i.e. below 2^29 for N ≤ 2^20 rows, against Δ ≥ 2^40; the encrypted path
takes up to about 2^27 transactions (:func:`delta_bits_for`).

Randomness: secrets, errors and masks come from AES-128-CTR under fresh
OS-random keys (:func:`mpc.keys.prg_bytes`); the public matrices from
AES-128-CTR under the public seed (:func:`mpc.crypto_hash.prg`).

What each party learns: nothing beyond its own input and the public sizes
(N, m_E, m_S, K, the pairs, Δ). Message sizes depend only on those — not on
the set sizes |T_α| or |T_β| — and every received value is an LWE sample or
uniformly masked. The shares reveal nothing until a later protocol opens a
function of them.

Cost: E sends 8·N·m_E bytes (+ 8·n·m_E for P) and does N·n·m_E multiply-adds
(as float64 BLAS products on 32-bit limbs, exact); S sends 8·n·m_S + 8·K bytes
and does (Σ_α |T_α|)·n additions; two message flights, one per direction.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os

import numpy as np
from scipy.sparse import csr_array
from threadpoolctl import ThreadpoolController

from .channel import Channel, agree, pack_arrays, unpack_arrays
from .crypto_hash import derive, prg
from .errors import InputMismatchError, ProtocolError
from .keys import pair_channel, prg_bytes

__all__ = ["LWE_LOG_Q", "LWE_N", "SIGMA", "encrypted_count_shares", "delta_bits_for", "noise_bound", "round_shares"]

LWE_N = 2048  #: LWE dimension n
LWE_LOG_Q = 64  #: q = 2^64 (arithmetic in uint64)
SIGMA = 3.2 * 2**13  #: error standard deviation (σ/q equal to n = 2048, q = 2^51, σ = 3.2: 128-bit quantum)
ROW_BLOCK = 1024  #: rows of A and C per streamed block
SUB_BLOCK = 128  #: rows per exact BLAS product (their float64 limbs, 4 MiB, stay in cache)
_U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)


# --------------------------------------------------------------------------- sizes
def noise_bound(max_rows: int) -> int:
    """A bound on |e_k| (failure probability < 2^-70) when at most ``max_rows`` rows are selected."""
    return int(10 * SIGMA * math.sqrt(max_rows + 2 * LWE_N + 1)) + 1


def delta_bits_for(n_transactions: int) -> int:
    """log2 Δ: the largest Δ = 2^d with Δ·(N + 1) ≤ 2^62, so Δ·(count − c) + Δ/2 + e fits a signed word.

    Needs Δ/4 > :func:`noise_bound` (N up to about 2^27 here).
    """
    N = max(int(n_transactions), 1)
    d = 62 - (N + 1).bit_length()
    if d < 2 or (1 << (d - 2)) <= noise_bound(N):
        raise ValueError(f"too many transactions for the encrypted path ({N})")
    return d


# --------------------------------------------------------------------------- sampling
def _uniform64(n: int) -> np.ndarray:
    return prg_bytes(os.urandom(16), 8 * n).view(_U64).copy()


def _ternary(shape: tuple[int, ...]) -> np.ndarray:
    """Uniform {−1, 0, 1} entries (float64), by rejection from fresh random bytes."""
    n = int(np.prod(shape))
    out = np.empty(0, np.int8)
    while out.size < n:
        b = prg_bytes(os.urandom(16), n + n // 8 + 64)
        b = b[b < 255]  # 255 = 3·85: b mod 3 is uniform on the rest
        out = np.concatenate([out, (b % 3).astype(np.int8) - 1])
    return out[:n].reshape(shape).astype(np.float64)


def _gauss(n: int) -> np.ndarray:
    """Rounded Gaussian errors of deviation :data:`SIGMA` as int64 (Box–Muller on 53-bit uniforms)."""
    m = (n + 1) // 2
    w = prg_bytes(os.urandom(16), 16 * m).view(_U64).reshape(m, 2) >> _U64(11)
    u1 = (w[:, 0].astype(np.float64) + 1.0) * 2.0**-53  # (0, 1]
    u2 = w[:, 1].astype(np.float64) * 2.0**-53
    r = np.sqrt(-2.0 * np.log(u1)) * SIGMA
    z = np.concatenate([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)])[:n]
    return np.rint(z).astype(np.int64)


def _public_rows(
    seed: bytes, label: str, lo: int, hi: int, n: int = LWE_N, out: np.ndarray | None = None
) -> np.ndarray:
    """Rows ``lo..hi−1`` of the public uniform matrix ``label`` (``(hi−lo, n)`` uint64), random access.

    ``out`` (uint64, at least ``(hi−lo)·n`` entries, contiguous) is filled and reused if given.
    """
    nonce = derive("ppdm/lwe/public", label, seed)[:16]
    per_row = n * 8 // 16  # AES blocks per row
    size = (hi - lo) * n
    buf = None if out is None else out.reshape(-1)[:size].view(np.uint8)
    got = prg(seed, nonce, size * 8, offset_blocks=lo * per_row, out=buf)
    return got.view(_U64).reshape(hi - lo, n)


# --------------------------------------------------------------------------- exact Z_2^64 products
_BLAS: list = []  # the threadpoolctl controller, made on first use (None: no BLAS it knows)


def _one_blas_thread():
    """A context limiting BLAS to one thread around a synchronous product (never across an ``await``).

    The products here are tall and skinny (``SUB_BLOCK × n`` by ``n × m``): OpenBLAS threads
    spin-waiting on them were 2–5× slower than one thread on a shared 2-core machine.
    """
    if not _BLAS:
        try:
            _BLAS.append(ThreadpoolController())
        except Exception:  # pragma: no cover - no BLAS threadpoolctl recognizes
            _BLAS.append(None)
    ctl = _BLAS[0]
    return ctl.limit(limits=1, user_api="blas") if ctl is not None else contextlib.nullcontext()


class _Limbs:
    """Reused float64 buffers for the 32-bit limbs of row blocks (fresh large arrays page-fault slowly)."""

    def __init__(self) -> None:
        self._buf: dict[tuple[int, int], np.ndarray] = {}

    def split(self, A: np.ndarray, axis: int) -> np.ndarray:
        """The low and high 32-bit halves of uint64 ``A`` (r × c) stacked along ``axis`` as float64.

        ``axis=0``: ``(2r, c)``, rows ``:r`` low halves; ``axis=1``: ``(r, 2c)``, columns ``:c`` low halves.
        The result is a view of a reused buffer, valid until the next call.
        """
        r, c = A.shape
        shape = (2 * r, c) if axis == 0 else (r, 2 * c)
        buf = self._buf.get(shape)
        if buf is None:
            buf = self._buf[shape] = np.empty(shape)
        halves = np.ascontiguousarray(A).view(np.uint32).reshape(r, c, 2)
        if axis == 0:
            buf[:r], buf[r:] = halves[:, :, 0], halves[:, :, 1]
        else:
            buf[:, :c], buf[:, c:] = halves[:, :, 0], halves[:, :, 1]
        return buf


_LIMBS = _Limbs()


def _combine(r_lo: np.ndarray, r_hi: np.ndarray) -> np.ndarray:
    return r_lo.astype(np.int64).view(_U64) + (r_hi.astype(np.int64).view(_U64) << _U64(32))


def _mul_small(A: np.ndarray, B: np.ndarray, limbs: _Limbs = _LIMBS) -> np.ndarray:
    """``A @ B mod 2^64`` for uint64 ``A`` (r × n) and a float64 matrix ``B`` (n × m) of small integers.

    Exact while n·max|B|·2^32 < 2^53 (here |B| ≤ 1 and n ≤ 2^20): the 32-bit
    limbs of A go through one float64 BLAS product per :data:`SUB_BLOCK` rows
    (low and high limbs stacked, so the block stays in cache).
    """
    out = np.empty((A.shape[0], B.shape[1]), _U64)
    with _one_blas_thread():
        for i in range(0, A.shape[0], SUB_BLOCK):
            s = min(SUB_BLOCK, A.shape[0] - i)
            R = limbs.split(A[i : i + s], 0) @ B
            out[i : i + s] = _combine(R[:s], R[s:])
    return out


def _small_mul(B: np.ndarray, A: np.ndarray, limbs: _Limbs = _LIMBS) -> np.ndarray:
    """``B @ A mod 2^64`` for a float64 small-integer ``B`` (r × n) and uint64 ``A`` (n × m)."""
    m = A.shape[1]
    acc = np.zeros((B.shape[0], 2 * m))
    with _one_blas_thread():
        for i in range(0, A.shape[0], SUB_BLOCK):  # partial sums stay below 2^53 (n·2^32, n ≤ 2^20)
            acc += B[:, i : i + SUB_BLOCK] @ limbs.split(A[i : i + SUB_BLOCK], 1)
    return _combine(acc[:, :m], acc[:, m:])


def _block_bits(cols: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Transactions ``lo..hi−1`` (``lo`` a multiple of 64) of packed bit columns, as a ``(m, hi−lo)`` uint8 0/1."""
    w0, w1 = lo // 64, -(-hi // 64)
    part = np.ascontiguousarray(cols[:, w0:w1])
    bits = np.unpackbits(part.view(np.uint8), axis=1, bitorder="little")
    return bits[:, : hi - lo]


def _selection(sel: np.ndarray) -> csr_array:
    """A 0/1 ``(m, r)`` selection as a sparse int64 matrix (for products that wrap mod 2^64)."""
    m, r = sel.shape
    a, t = np.nonzero(sel)  # row-major: grouped by a, ascending
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(np.bincount(a, minlength=m), out=indptr[1:])
    return csr_array((np.ones(a.size, np.int64), t.astype(np.int64), indptr), shape=(m, r))


def _select_sum(sel: csr_array, M: np.ndarray) -> np.ndarray:
    """``sel @ M mod 2^64`` for a sparse 0/1 ``(m, r)`` selection and a uint64 ``(r, c)`` matrix.

    scipy's CSR × dense product on int64 (two's-complement wrap-around is
    arithmetic mod 2^64): for each selector, one pass of additions over the
    rows it selects, so the work is ``nnz(sel)·c`` and the chosen rows are
    read in place (no gathered copy).
    """
    if sel.nnz == 0:
        return np.zeros((sel.shape[0], M.shape[1]), _U64)
    return np.asarray(sel @ M.view(np.int64)).view(_U64)


# --------------------------------------------------------------------------- the protocol
def _check_pairs(pairs, m_sel: int, m_enc: int) -> np.ndarray:
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if p.size and (p.min() < 0 or p[:, 0].max() >= m_sel or p[:, 1].max() >= m_enc):
        raise ValueError("pairs name columns outside the selector's or the encryptor's list")
    return p


async def encrypted_count_shares(
    ch: Channel,
    peer: str,
    *,
    role: str,
    columns: np.ndarray,
    n_columns_peer: int,
    pairs,
    n_transactions: int,
    delta_bits: int,
    tag: str,
) -> np.ndarray:
    """This party's ``(K,)`` uint64 share of ``Δ·|T_α ∩ T_β| + e`` for every pair (see module docstring).

    ``role`` is ``"encrypt"`` (its ``columns`` are the y_β) or ``"select"``
    (its ``columns`` are the x_α); ``columns`` are packed bit columns
    ``(m, ⌈N/64⌉)`` uint64 (transaction t = bit t%64 of word t//64, padding 0).
    ``n_columns_peer`` is the other party's column count and ``pairs`` the
    public ``(K, 2)`` list of (selector column, encryptor column); Δ = 2^``delta_bits``
    (:func:`delta_bits_for`). Both parties must agree on everything public
    (checked). Reveals nothing (module docstring).
    """
    if role not in ("encrypt", "select"):
        raise ValueError(f"role must be 'encrypt' or 'select', got {role!r}")
    N = int(n_transactions)
    cols = np.ascontiguousarray(columns, dtype=_U64)
    W = -(-N // 64)
    if cols.ndim != 2 or cols.shape[1] != W:
        raise InputMismatchError(f"columns must be a (m, {W}) packed bit matrix, got {cols.shape}")
    m_sel, m_enc = (cols.shape[0], int(n_columns_peer)) if role == "select" else (int(n_columns_peer), cols.shape[0])
    p = _check_pairs(pairs, m_sel, m_enc)
    if not (2 <= delta_bits <= 62) or (1 << (delta_bits - 2)) <= noise_bound(N):
        raise ValueError(f"Δ = 2^{delta_bits} is too small for the noise of {N} rows")
    pc = pair_channel(ch, peer)
    encryptor = ch.me if role == "encrypt" else peer
    await agree(
        pc,
        f"{tag}/params",
        n=N,
        m_sel=m_sel,
        m_enc=m_enc,
        pairs=hashlib.sha256(p.tobytes()).hexdigest(),
        delta_bits=int(delta_bits),
        encryptor=encryptor,
        lwe_n=LWE_N,
    )
    if p.shape[0] == 0:
        return np.zeros(0, _U64)
    if role == "encrypt":
        return await _encrypt_side(pc, peer, cols, N, m_sel, p, delta_bits, tag)
    return await _select_side(pc, peer, cols, N, m_enc, p, tag)


async def _encrypt_side(ch, peer, Y, N, m_sel, p, d, tag) -> np.ndarray:
    m = Y.shape[0]
    seed = os.urandom(16)
    Sk = _ternary((LWE_N, m))
    P = _gauss(LWE_N * m).view(_U64).reshape(LWE_N, m)
    rows = np.empty(ROW_BLOCK * LWE_N, _U64)
    for lo in range(0, LWE_N, ROW_BLOCK):
        P[lo : lo + ROW_BLOCK] += _mul_small(_public_rows(seed, "A_pk", lo, lo + ROW_BLOCK, out=rows), Sk)
    await ch.send(peer, f"{tag}/pk", pack_arrays(np.frombuffer(seed, np.uint8), P))
    delta = _U64(1) << _U64(d)
    for b, lo in enumerate(range(0, N, ROW_BLOCK)):
        hi = min(N, lo + ROW_BLOCK)
        C = _mul_small(_public_rows(seed, "A", lo, hi, out=rows), Sk)
        C += _gauss(C.size).view(_U64).reshape(C.shape)
        C += _block_bits(Y, lo, hi).T.astype(_U64) * delta
        await ch.send(peer, f"{tag}/c{b}", pack_arrays(C))
        await asyncio.sleep(0)
    got = unpack_arrays(await ch.recv(peer, f"{tag}/reply"))
    if len(got) != 2 or got[0].shape != (m_sel, LWE_N) or got[1].shape != (p.shape[0],):
        raise ProtocolError(f"encrypted product {tag!r}: malformed reply from {peer}")
    Wm, v = (np.ascontiguousarray(g, dtype=_U64) for g in got)
    if Wm.dtype != _U64 or v.dtype != _U64:
        raise ProtocolError(f"encrypted product {tag!r}: malformed reply from {peer}")
    share = v.copy()
    used = np.unique(p[:, 0])
    WS = _mul_small(Wm[used], Sk)  # (|used|, m): w_α · Sk[:, β]
    row = np.searchsorted(used, p[:, 0])
    share -= WS[row, p[:, 1]]
    return share


async def _select_side(ch, peer, X, N, m_enc, p, tag) -> np.ndarray:
    m = X.shape[0]
    got = unpack_arrays(await ch.recv(peer, f"{tag}/pk"))
    if len(got) != 2 or got[0].shape != (16,) or got[1].shape != (LWE_N, m_enc) or got[1].dtype != _U64:
        raise ProtocolError(f"encrypted product {tag!r}: malformed public key from {peer}")
    seed, P = got[0].tobytes(), got[1]
    U = np.zeros((m, LWE_N), _U64)
    Cs = np.zeros((m, m_enc), _U64)
    rows = np.empty(ROW_BLOCK * LWE_N, _U64)
    for b, lo in enumerate(range(0, N, ROW_BLOCK)):
        hi = min(N, lo + ROW_BLOCK)
        (C,) = unpack_arrays(await ch.recv(peer, f"{tag}/c{b}"))
        if C.shape != (hi - lo, m_enc) or C.dtype != _U64:
            raise ProtocolError(f"encrypted product {tag!r}: malformed ciphertext block from {peer}")
        sel = _selection(_block_bits(X, lo, hi))
        if sel.nnz == 0:
            continue
        Cs += _select_sum(sel, C)
        U += _select_sum(sel, _public_rows(seed, "A", lo, hi, out=rows))
    # Lindner–Peikert re-randomization: an encryption of zero per selector column
    R = _ternary((m, LWE_N))
    for lo in range(0, LWE_N, ROW_BLOCK):
        U += _small_mul(R[:, lo : lo + ROW_BLOCK], _public_rows(seed, "A_pk", lo, lo + ROW_BLOCK, out=rows))
    U += _gauss(U.size).view(_U64).reshape(U.shape)
    rho = _uniform64(p.shape[0])
    used = np.unique(p[:, 1])
    RP = _small_mul(R, np.ascontiguousarray(P[:, used]))  # (m, |used|)
    col = np.searchsorted(used, p[:, 1])
    v = Cs[p[:, 0], p[:, 1]] + RP[p[:, 0], col] + _gauss(p.shape[0]).view(_U64) + rho
    await ch.send(peer, f"{tag}/reply", pack_arrays(U, v))
    return -rho


# --------------------------------------------------------------------------- rounding
async def round_shares(ch: Channel, peer: str, x: np.ndarray, *, role: int, delta_bits: int, tag: str) -> np.ndarray:
    """Shares of ``round(X/Δ)`` from shares of ``X = Δ·c + e`` with |e| < Δ/4, both over Z_2^64.

    Output: additive shares of c modulo 2^(64 − d) (Δ = 2^d), as uint64 values
    below 2^(64−d); ``role`` 0 or 1 (the two share holders). With
    X' = X + Δ/2 (added by role 0), c = ⌊X'/Δ⌋ = ⌊x0/Δ⌋ + ⌊x1/Δ⌋ + κ with the
    carry κ = [L0 + L1 ≥ Δ], L_i = x_i mod Δ. The noise bound (|e| < Δ/4,
    :func:`delta_bits_for`) keeps L = X' mod Δ inside (Δ/4, 3Δ/4), so L0 + L1
    lies in (Δ/4, 3Δ/4) without carry and in (5Δ/4, 7Δ/4) with one; with
    a_i = ⌊L_i/(Δ/4)⌋ ∈ {0..3}, a0 + a1 ∈ [0, 2] resp. [4, 6], hence
    κ = [a0 + a1 ≥ 4] = MSB of a0 + a1 in Z_8 — a 2-bit millionaires' run
    (:func:`mpc.comparison.msb_of_shares`, Rathee et al., CCS 2020) instead of
    a d-bit one, XOR-shared, made additive by one correlated OT
    (κ = κ0 + κ1 − 2κ0κ1; Gilboa 1999). The noise never leaves the shares:
    this reveals nothing.
    """
    from .comparison import msb_of_shares
    from .ot_extension import correlated_ot_recv, correlated_ot_send

    d = int(delta_bits)
    if not 3 <= d <= 62:
        raise ValueError(f"delta_bits must be in 3..62, got {d}")
    s = np.ascontiguousarray(x, dtype=_U64).copy()
    if role == 0:
        s += _U64(1) << _U64(d - 1)
    quarter = (s & ((_U64(1) << _U64(d)) - _U64(1))) >> _U64(d - 2)  # a_i = ⌊(x_i mod Δ)/(Δ/4)⌋
    kappa = await msb_of_shares(ch, peer, quarter, role=role, tag=f"{tag}/carry", ring_bits=3)
    k64 = kappa.astype(_U64)
    if role == 0:
        r = await correlated_ot_send(ch, peer, _U64(1) - _U64(2) * k64, tag=f"{tag}/b2a")
        share = k64 - r
    else:
        share = await correlated_ot_recv(ch, peer, kappa, tag=f"{tag}/b2a")
    mask = (_U64(1) << _U64(64 - d)) - _U64(1)
    return ((s >> _U64(d)) + share) & mask
