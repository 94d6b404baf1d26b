"""Incremental row spaces of 0/1 query vectors, exactly: which unit vectors e_i they contain.

A sum query over a record set ``Q`` is the row vector ``1_Q``; answered sum queries reveal
every linear combination of their rows, so record ``i`` is fully disclosed exactly when the
unit vector ``e_i`` lies in the row space of the answered query matrix ``A`` (Chin and
Özsoyoğlu, "Auditing and inference control in statistical databases", IEEE TSE 8(6), 1982).
In the reduced row echelon form (RREF) of ``A`` that happens iff some row of the RREF *is*
``e_i`` (a row is the only one with a nonzero in its pivot column, so a combination equal to
``e_i`` uses the row pivoted at ``i`` alone). Equivalently ``i`` is a *coloop* of the column
matroid of ``A``: column ``i`` is not in the span of the others.

Two engines with one interface (``check(q) -> Step``, ``commit(step)``, ``add_columns(k)``):

:class:`RationalRowSpace`
    RREF over the rationals with :class:`fractions.Fraction`: exact and deterministic,
    ``O(rank · n)`` Python operations per query. For small record sets (the party daemons
    audit sessions over a handful of parties).

:class:`ModularRowSpace`
    Elimination over GF(p) for a secret random prime ``2^30 < p < 2^31``; numpy int64/float64
    arithmetic, every value exact (no floating rank test anywhere). It never stores the RREF
    ``R`` (``rank × n``, dense): it keeps the answered 0/1 rows ``A_b`` bit-packed and the
    transform ``T`` with ``R = T · A_b`` (``rank × rank``), updated lazily as a sum of pending
    rank-one terms that are folded in every :data:`PENDING` commits with exact BLAS products
    on 16-bit limbs. Unit rows are found with secret random fingerprints ``g = R · w``
    (Schwartz–Zippel: a nonzero row fingerprints to 0 with probability 1/p) and every
    fingerprint hit is re-checked exactly, so fingerprints cost speed, never correctness.
    Per query: ``O(n + rank²)`` word operations; ``O(rank · n / 8)`` table look-ups (the
    "four Russians" product of a vector with the bit-packed rows) only for queries already in
    the row space and for the rare rows a fingerprint flags. Pivots are taken from a cached
    set of :data:`CANDIDATES` random non-pivot columns whose ``R`` columns are kept up to date,
    so a decision costs ``O(n + rank · CANDIDATES)`` and only an answered query pays ``O(rank²)``.

    GF(p) can disagree with the rationals only if p divides a nonzero minor of the query
    matrix; see :func:`modular_error_bound` for the bound a caller should state.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

__all__ = [
    "single_threaded_blas",
    "PRIME_BITS",
    "PRIMES_IN_RANGE",
    "RationalRowSpace",
    "ModularRowSpace",
    "Step",
    "is_prime",
    "random_prime",
    "modular_error_bound",
]

PRIME_BITS = 31
# pi(2^31) - pi(2^30) = 105,097,565 - 54,400,028: the primes random_prime() draws from
PRIMES_IN_RANGE = 50_697_537
PENDING = 64  # rank-one terms of T kept lazily; 64 · (2^31-1)(2^16-1) < 2^53 keeps BLAS products exact
CANDIDATES = 64  # non-pivot columns whose R column is kept at hand for choosing pivots
_EXACT = float(1 << 52)  # float64 holds every integer below 2^53: keep |T0| · rank under 2^52
_MASK16 = (1 << 16) - 1
# _BYTE_BITS[m, b] = bit b of m (little-endian): subset sums of 8 coefficients per byte value
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)


_BLAS: list = []  # the threadpoolctl controller, made on first use (None: not installed)


def single_threaded_blas():
    """A context limiting BLAS to one thread (via threadpoolctl when installed, else a no-op).

    The products here are small (``rank × 64``): OpenBLAS threads spin-waiting on them cost 2–3×
    the CPU time of the work itself, measured on a 2-core machine.
    """
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except Exception:  # not installed, or no BLAS it knows
            _BLAS.append(None)
    ctl = _BLAS[0]
    return ctl.limit(limits=1, user_api="blas") if ctl is not None else contextlib.nullcontext()


def is_prime(n: int) -> bool:
    """Deterministic Miller–Rabin for ``n < 3.3·10^24`` (bases 2..41)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for q in small:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def random_prime(bits: int = PRIME_BITS) -> int:
    """A uniformly random prime in ``[2^(bits-1), 2^bits)``, from the OS CSPRNG (:mod:`secrets`)."""
    lo = 1 << (bits - 1)
    while True:
        c = lo + secrets.randbelow(lo) | 1
        if is_prime(c):
            return c


def modular_error_bound(rank: int, records: int, primes: int) -> float:
    """Bound on the chance that one audited query is decided differently over GF(p) than over Q.

    A 0/1 matrix of rank ``r`` has a nonzero ``r×r`` minor ``D`` with ``|D| ≤ (r+1)^((r+1)/2) / 2^r``
    (Hadamard's inequality), so at most ``h = ⌈log2|D| / 30⌉`` of the :data:`PRIMES_IN_RANGE`
    primes in ``[2^30, 2^31)`` divide it: one random prime loses rank on a fixed matrix with
    probability ``ε ≤ h / PRIMES_IN_RANGE``. A decision on ``M = [A; q]`` can go wrong only
    through such a loss: a missed disclosure needs a rank loss on ``M``; a false denial of
    record ``i`` one on ``M`` without column ``i``, which contains a column basis of ``M`` (one
    minor for every ``i`` outside the basis) or a basis swapped at ``i`` (``r`` more minors). So
    at most ``r + 2`` minors matter. With ``k`` independent primes and a record reported only
    when a majority ``m = ⌈(k+1)/2⌉`` of them report it, a wrong decision needs ``m`` primes to
    divide one of these minors::

        P(wrong decision) ≤ (min(r, records) + 2) · C(k, m) · ε^m.

    Until a first wrong decision every answer equals the exact one and is independent of the
    primes, so the sum of this bound over the queries of a run bounds the chance that the run
    ever differs from exact rational auditing, adaptively chosen queries included. It is a
    worst case: for matrices met in practice the chance is about ``1/p`` per query and prime.
    """
    if primes <= 0:
        return 0.0
    r = max(rank, 1)
    log2_det = (r + 1) / 2 * math.log2(r + 1) - r
    eps = max(1, math.ceil(max(log2_det, 1.0) / (PRIME_BITS - 1))) / PRIMES_IN_RANGE
    m = (primes + 2) // 2
    return min(1.0, (min(r, records) + 2) * math.comb(primes, m) * eps**m)


@dataclass
class Step:
    """The outcome of checking one query against a row space (nothing is changed until ``commit``)."""

    in_rowspace: bool  # the query adds nothing new (its answer follows from earlier ones)
    newly: np.ndarray  # columns whose unit vector the query would bring into the row space
    data: dict = field(default_factory=dict, repr=False)  # what commit() needs


# --------------------------------------------------------------------------- exact, small
class RationalRowSpace:
    """Exact RREF over Q (:class:`fractions.Fraction`); see the module docstring."""

    exact = True

    def __init__(self, n: int = 0):
        self.n = n
        self.rows: list[list[Fraction]] = []
        self.piv: list[int] = []
        self.disclosed = np.zeros(n, dtype=bool)

    @property
    def rank(self) -> int:
        return len(self.rows)

    def add_columns(self, k: int) -> None:
        """Append ``k`` records that no query has touched yet."""
        self.n += k
        zero = Fraction(0)
        for row in self.rows:
            row.extend([zero] * k)
        self.disclosed = np.concatenate([self.disclosed, np.zeros(k, dtype=bool)])

    def check(self, q: np.ndarray) -> Step:
        v = [Fraction(int(x)) for x in q]
        for row, pc in zip(self.rows, self.piv):
            c = v[pc]
            if c:
                v = [a - c * b for a, b in zip(v, row)]
        nz = [j for j, x in enumerate(v) if x]
        if not nz:
            return Step(True, np.zeros(0, dtype=np.int64))
        j0 = nz[0]
        inv = 1 / v[j0]
        new = [x * inv for x in v]
        rows = []
        for row in self.rows:  # eliminate the new pivot column from the other rows
            c = row[j0]
            rows.append([a - c * b for a, b in zip(row, new)] if c else row)
        rows.append(new)
        piv = [*self.piv, j0]
        units = [pc for row, pc in zip(rows, piv) if sum(1 for x in row if x) == 1]
        newly = np.array(sorted(j for j in units if not self.disclosed[j]), dtype=np.int64)
        return Step(False, newly, {"rows": rows, "piv": piv})

    def commit(self, step: Step) -> None:
        if step.in_rowspace:
            return
        self.rows, self.piv = step.data["rows"], step.data["piv"]
        self.disclosed[step.newly] = True


# --------------------------------------------------------------------------- modular, large
class ModularRowSpace:
    """Incremental elimination over GF(p); see the module docstring for the representation.

    Invariants (``r`` = rank, ``K`` = pivot columns ``piv[:r]``):
    ``R = (T0 - U·V) · A_b  (mod p)`` is the RREF (``R[:, K] = I``); ``g = R · w (mod p)``.
    """

    exact = False
    T0: np.ndarray
    U: np.ndarray
    V0: np.ndarray
    V1: np.ndarray
    bits: np.ndarray
    g: np.ndarray
    g2: np.ndarray
    piv: np.ndarray

    def __init__(self, n: int = 0, p: int | None = None):
        self.p = p or random_prime()
        self.n = n
        self.r = 0
        self.cap = 0
        self.L = 0  # pending rank-one terms
        self._rng = np.random.default_rng(secrets.randbits(128))
        self._t0_max = float(self.p)  # bound on |T0| (T0 is reduced mod p only when sums could lose exactness)
        self.w = self._weights(n)
        self.w2 = self._weights(n)  # a second, independent fingerprint: "already in the row space" test
        self.is_piv = np.zeros(n, dtype=bool)
        self.disclosed = np.zeros(n, dtype=bool)
        self.J = np.zeros(0, dtype=np.int64)  # cached candidate pivot columns
        self.RJ = np.zeros((0, 0), dtype=np.int64)  # R[:, J]
        self._grow(8)

    # ------------------------------------------------------------------ storage
    def _weights(self, k: int) -> np.ndarray:
        rng = np.random.default_rng(secrets.randbits(128))  # secret: fingerprints must not be predictable
        return rng.integers(1, self.p, size=k, dtype=np.int64)

    def _grow(self, cap: int) -> None:
        cap = max(8, -(-cap // 8) * 8)
        old, r = self.cap, self.r
        T0 = np.zeros((cap, cap))
        U = np.zeros((cap, PENDING))
        V0 = np.zeros((PENDING, cap))
        V1 = np.zeros((PENDING, cap))
        bits = np.zeros((cap // 8, self.n), dtype=np.uint8)
        g = np.zeros(cap, dtype=np.int64)
        g2 = np.zeros(cap, dtype=np.int64)
        piv = np.zeros(cap, dtype=np.int64)
        if old:
            T0[:r, :r] = self.T0[:r, :r]
            U[:r] = self.U[:r]
            V0[:, :r] = self.V0[:, :r]
            V1[:, :r] = self.V1[:, :r]
            bits[: old // 8] = self.bits
            g[:r] = self.g[:r]
            g2[:r] = self.g2[:r]
            piv[:r] = self.piv[:r]
        self.T0, self.U, self.V0, self.V1, self.bits, self.g, self.g2, self.piv = T0, U, V0, V1, bits, g, g2, piv
        self.cap = cap

    @property
    def rank(self) -> int:
        return self.r

    def add_columns(self, k: int) -> None:
        """Append ``k`` records that no query has touched yet (zero columns of ``A_b`` and ``R``)."""
        self.n += k
        self.bits = np.concatenate([self.bits, np.zeros((self.bits.shape[0], k), dtype=np.uint8)], axis=1)
        self.w = np.concatenate([self.w, self._weights(k)])
        self.w2 = np.concatenate([self.w2, self._weights(k)])
        self.is_piv = np.concatenate([self.is_piv, np.zeros(k, dtype=bool)])
        self.disclosed = np.concatenate([self.disclosed, np.zeros(k, dtype=bool)])

    # ------------------------------------------------------------------ exact mod-p products
    def _mod(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64).astype(np.int64) % self.p

    def _combine(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(lo + hi · 2^16) mod p`` for exact float64 limb products ``lo``, ``hi`` (< 2^53)."""
        p = self.p
        return (self._mod(lo) + (self._mod(hi) << 16) % p) % p

    def _pending_left(self, c: np.ndarray) -> np.ndarray:
        """``(c · V) mod p`` for ``c`` (L,) with entries < p: V is held as 16-bit limbs."""
        L, r = self.L, self.r
        cf = c.astype(np.float64)
        return self._combine(cf @ self.V0[:L, :r], cf @ self.V1[:L, :r])

    def _row_combination(self, sel: np.ndarray) -> np.ndarray:
        """``y = sel^T · T (mod p)`` for a 0/1 vector ``sel`` over the basis rows."""
        r, L = self.r, self.L
        s = sel.astype(np.float64)
        # numpy's own loop, not BLAS: a threaded gemv this small spends more time waiting than working
        y = self._mod(np.einsum("i,ij->j", s, self.T0[:r, :r]))  # exact: |sums| < r · |T0| < 2^53
        if L:
            c = self._mod(s @ self.U[:r, :L])
            y = (y - self._pending_left(c)) % self.p
        return y

    def _row(self, k: int) -> np.ndarray:
        """Row ``k`` of ``T`` (mod p)."""
        r, L = self.r, self.L
        y = self._mod(self.T0[k, :r])
        if L:
            y = (y - self._pending_left(self._mod(self.U[k, :L]))) % self.p
        return y

    def _column_product(self, a: np.ndarray) -> np.ndarray:
        """``T · a (mod p)`` for a 0/1 vector ``a`` over the rows of ``A_b`` (= a column of R)."""
        r, L, p = self.r, self.L, self.p
        af = a.astype(np.float64)
        x = self._mod(np.einsum("ij,j->i", self.T0[:r, :r], af))
        if L:
            d = self._combine(self.V0[:L, :r] @ af, self.V1[:L, :r] @ af)  # V·a, (L,)
            lo = (d & _MASK16).astype(np.float64)
            hi = (d >> 16).astype(np.float64)
            Ur = self.U[:r, :L]
            x = (x - self._combine(Ur @ lo, Ur @ hi)) % p
        return x

    def _fold(self) -> None:
        """T0 ← T0 − U·V: every BLAS product is below 2^53, hence exact; T0 itself stays unreduced
        (entries grow by < 2p per fold) until ``|T0| · rank`` could reach 2^52."""
        r, L, p = self.r, self.L, self.p
        if not L:
            return
        U = self.U[:r, :L]
        lo = (U @ self.V0[:L, :r]).astype(np.int64)
        lo %= p
        hi = (U @ self.V1[:L, :r]).astype(np.int64)
        hi %= p
        hi <<= 16
        hi %= p
        lo += hi
        T = self.T0[:r, :r]
        T -= lo
        self._t0_max += 2 * p
        if self._t0_max * max(self.cap, 1) >= _EXACT:
            self.T0[:r, :r] = self.T0[:r, :r].astype(np.int64) % p
            self._t0_max = float(p)
        self.U[:r, :L] = 0
        self.V0[:L] = 0
        self.V1[:L] = 0
        self.L = 0

    def _times_rows(self, y: np.ndarray) -> np.ndarray:
        """``y^T · A_b (mod p)``: "four Russians" — per byte of 8 rows, a 256-entry table of subset sums."""
        r, p = self.r, self.p
        if r == 0:
            return np.zeros(self.n, dtype=np.int64)
        C = -(-r // 8)
        Y = np.zeros(C * 8, dtype=np.int64)
        Y[:r] = y
        table = Y.reshape(C, 8) @ _BYTE_BITS.T  # (C, 256), entries < 8·2^31
        s = np.zeros(self.n, dtype=np.int64)
        for c in range(C):  # one 256-entry gather per byte of rows (C = rank/8 numpy calls)
            s += table[c].take(self.bits[c])
        return s % p

    def _columns(self, cols: np.ndarray) -> np.ndarray:
        """The 0/1 entries ``A_b[:, cols]`` as an int64 ``(r, len(cols))`` array."""
        C = -(-self.r // 8)
        return np.unpackbits(self.bits[:C][:, cols], axis=0, bitorder="little")[: self.r].astype(np.int64)

    def _column_block(self, cols: np.ndarray) -> np.ndarray:
        """``R[:, cols] = T · A_b[:, cols] (mod p)``, as one exact BLAS product per limb."""
        r, L, p = self.r, self.L, self.p
        if not r or not cols.size:
            return np.zeros((r, cols.size), dtype=np.int64)
        A = self._columns(cols).astype(np.float64)
        X = self._mod(self.T0[:r, :r] @ A)  # |sums| < r · |T0| < 2^53
        if L:
            D = self._combine(self.V0[:L, :r] @ A, self.V1[:L, :r] @ A)  # V·A, (L, m), < p
            Ur = self.U[:r, :L]
            lo = (D & _MASK16).astype(np.float64)
            hi = (D >> 16).astype(np.float64)
            X = (X - self._combine(Ur @ lo, Ur @ hi)) % p
        return X

    def _refill(self) -> None:
        """Top the cached candidate pivot columns ``J`` (with ``RJ = R[:, J]``) back up to :data:`CANDIDATES`."""
        free = ~self.is_piv
        free[self.J] = False
        pool = np.flatnonzero(free)
        k = min(CANDIDATES - self.J.size, pool.size)
        if k <= 0:
            return
        new = self._rng.choice(pool, size=k, replace=False)
        self.J = np.concatenate([self.J, new])
        self.RJ = np.concatenate([self.RJ[: self.r], self._column_block(new)], axis=1)

    # ------------------------------------------------------------------ the audit step
    def check(self, q: np.ndarray) -> Step:
        p, r = self.p, self.r
        q = np.asarray(q, dtype=bool)
        piv = self.piv[:r]
        qK = q[piv]
        # rho = q - qK^T R is q reduced against the basis; rho·w = q·w - qK·g in O(n + r)
        rho_w = (int(self.w[q].sum()) - int(self.g[:r][qK].sum())) % p
        rho_w2 = (int(self.w2[q].sum()) - int(self.g2[:r][qK].sum())) % p
        if rho_w == 0 and rho_w2 == 0:
            # rho = 0 (the query adds nothing) unless rho is a nonzero vector orthogonal to two
            # independent secret random vectors: probability <= 1/p^2 (Schwartz–Zippel)
            return Step(True, np.zeros(0, dtype=np.int64))
        y = rho = None
        if self.J.size < CANDIDATES // 2:
            self._refill()
        RJ = self.RJ[:r]
        rhoJ = (q[self.J].astype(np.int64) - RJ[qK].sum(axis=0)) % p  # rho on the cached columns
        hit = np.flatnonzero(rhoJ)
        if hit.size:  # pivot on a cached column: its R column is at hand
            j0, rho_j0, u = int(self.J[hit[0]]), int(rhoJ[hit[0]]), RJ[:, hit[0]]
        else:  # rho vanishes on J: try the query's own free columns, then reduce q fully
            y = self._row_combination(qK) if r else np.zeros(0, dtype=np.int64)
            j0, rho_j0, rho = self._pivot(q, y)
            u = self._column_product(self._columns(np.array([j0]))[:, 0]) if r else np.zeros(0, dtype=np.int64)
        inv = pow(rho_j0, p - 2, p)
        gw_new = rho_w * inv % p  # fingerprint of the new RREF row r_new = rho / rho[j0]
        g_old = (self.g[:r] - u * gw_new) % p  # R_k' = R_k - u_k r_new
        gw2_new = rho_w2 * inv % p
        g2_old = (self.g2[:r] - u * gw2_new) % p
        h_old = (g_old - self.w[piv]) % p  # fingerprint of R_k' off its pivot
        h_new = (gw_new - int(self.w[j0])) % p
        flagged = np.flatnonzero((h_old == 0) & (u != 0) & ~self.disclosed[piv])
        newly: list[int] = []
        if flagged.size or h_new == 0:
            if rho is None:
                y = self._row_combination(qK) if y is None else y
                rho = (q.astype(np.int64) - self._times_rows(y)) % p
            r_new = rho * inv % p
            if h_new == 0 and np.count_nonzero(r_new) == 1:
                newly.append(j0)
            off = ~self.is_piv
            off[j0] = False
            for k in flagged:  # exact re-check of every fingerprint hit
                row = (self._times_rows(self._row(int(k))) - int(u[k]) * r_new) % p
                if not row[off].any():
                    newly.append(int(piv[k]))
        data = {"q": q, "qK": qK, "y": y, "j0": j0, "inv": inv, "u": u, "g_old": g_old, "gw_new": gw_new}
        data["g2_old"], data["gw2_new"] = g2_old, gw2_new
        data["rJ"] = rhoJ * inv % p  # the new RREF row on the cached columns
        data["J"] = self.J
        return Step(False, np.array(sorted(set(newly)), dtype=np.int64), data)

    def _pivot(self, q: np.ndarray, y: np.ndarray) -> tuple[int, int, np.ndarray | None]:
        """A column ``j0`` with ``rho[j0] != 0`` (rho ≠ 0 is known): the query's free columns
        first (one ``rank × 64`` product), else the full reduction; returns ``(j0, rho[j0], rho or None)``."""
        p = self.p
        cand = np.flatnonzero(q & ~self.is_piv)[:64]
        if cand.size:
            vals = q[cand].astype(np.int64)
            if self.r:
                vals = (vals - (y @ self._columns(cand)) % p) % p
            hit = np.flatnonzero(vals)
            if hit.size:
                return int(cand[hit[0]]), int(vals[hit[0]]), None
        rho = (q.astype(np.int64) - self._times_rows(y)) % p
        j0 = int(np.flatnonzero(rho)[0])
        return j0, int(rho[j0]), rho

    def commit(self, step: Step) -> None:
        if step.in_rowspace:
            return
        d = step.data
        if d["J"] is not self.J or self.disclosed.size != d["q"].size:
            raise RuntimeError("stale step: the row space changed since this query was checked")
        r, p, inv = self.r, self.p, d["inv"]
        y = d["y"] if d["y"] is not None else self._row_combination(d["qK"]) if r else np.zeros(0, dtype=np.int64)
        t = np.append((-y * inv) % p, inv)  # the new row of T, over [A_b; q]
        u, j0 = d["u"], d["j0"]
        RJ = (self.RJ[:r] - np.multiply.outer(u, d["rJ"])) % p  # R' = R - u r_new^T on the cached columns
        keep = self.J != j0
        self.RJ = np.concatenate([RJ, d["rJ"][None, :]], axis=0)[:, keep]
        self.J = self.J[keep]
        if r + 1 > self.cap:
            self._fold()
            self._grow(2 * self.cap)
        if self.L == PENDING:
            self._fold()
        if r:  # pending rank-one term: T[:r] -= u t^T
            self.U[:r, self.L] = u
            self.V0[self.L, : r + 1] = t & _MASK16
            self.V1[self.L, : r + 1] = t >> 16
            self.L += 1
        self.T0[r, : r + 1] = t
        self.bits[r // 8] |= d["q"].astype(np.uint8) << np.uint8(r % 8)
        self.g[:r] = d["g_old"]
        self.g[r] = d["gw_new"]
        self.g2[:r] = d["g2_old"]
        self.g2[r] = d["gw2_new"]
        self.piv[r] = j0
        self.is_piv[j0] = True
        self.disclosed[step.newly] = True
        self.r = r + 1
