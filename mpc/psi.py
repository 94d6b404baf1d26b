"""Private set intersection from a batched oblivious PRF and OT extension (KKRT16), 2 or more parties.

Model and assumptions
---------------------
Semi-honest parties that do not collude, static corruption, authenticated
channels; computational security κ = 128, statistical security σ = 40.
Construction: V. Kolesnikov, R. Kumaresan, M. Rosulek, N. Trieu, "Efficient
Batched Oblivious PRF with Applications to Private Set Intersection", ACM CCS
2016 (IACR ePrint 2016/799): the BaRK-OPRF (their Fig. 2, a 1-out-of-∞ OT
extension) and its PSI with cuckoo hashing. Primitives:

* 512 base OTs per call: random OTs from IKNP extension
  (:func:`mpc.ot_extension.random_ot_send`, whose 128 Chou–Orlandi base OTs
  are set up once per session and ordered pair, :mod:`mpc.base_ot`);
* PRG: AES-128-CTR (:func:`mpc.crypto_hash.prg_rows`); bit matrices transposed
  with :func:`mpc.ot_extension.transpose_bits`;
* every hash is the fixed-key AES TCCR hash ``H(x, i) = π(π(x) ⊕ i) ⊕ π(x)`` of
  C. Guo, J. Katz, X. Wang, Y. Yu, "Efficient and Secure Multiparty Computation
  from Fixed-Key Block Ciphers", IEEE S&P 2020 (:func:`mpc.crypto_hash.tccr_hash`),
  in the ideal-permutation model, with 64-bit tweak words derived by SHA-256
  from the call's label and a fresh 128-bit salt.

Inputs are 16-byte digests (the caller hashes its keys); they must be distinct.

Two-party protocol (receiver R = the first of the two in ``ch.parties``, sender S)
-------------------------------------------------------------------------------
0. Both send their set size (public). An empty set on either side ends the run.
1. *Base OTs.* ``w = 512`` random OTs with R as OT sender of key pairs
   ``(k0_i, k1_i)`` and S as OT receiver with random choice bits ``s ∈ {0,1}^512``.
2. *Cuckoo hashing (R).* R draws a 128-bit salt, derives three bin hash
   functions ``h_0, h_1, h_2`` into ``m`` bins (:func:`table_size`) and places each
   of its ``n_R`` items ``x`` in one bin ``h_i(x)`` with no stash (R. Pagh,
   F. F. Rodler, "Cuckoo Hashing", J. Algorithms 51(2), 2004, with three hash
   functions; placement by vectorized random-walk rounds, or, if those stall, by
   a maximum bipartite matching, so a placement is found whenever one exists).
   If none exists (probability ≤ 2^-40, below) R draws a fresh salt and retries
   *locally*; S only ever sees the final salt, which R sends.
3. *OPRF (KKRT16 Fig. 2).* The pseudorandom code is ``C(x, i) ∈ {0,1}^512``,
   four TCCR blocks of ``x`` under tweaks ``(c, 4i + b)``, ``b < 4`` (``c`` from
   the salt); the hash index ``i`` is part of the input, so an item never
   collides with itself in a bin two of its hash functions share. For bin ``j``
   holding ``x_j`` (placed by ``h_{i_j}``; an empty bin holds a random dummy), R
   expands ``t^c = G(k0_c)`` and ``G(k1_c)`` column-wise (``c < 512``), transposes
   to rows ``t_j`` and ``w_j = t_j ⊕ G(k1)_j`` and sends ``u_j = w_j ⊕ C(x_j, i_j)``
   in slabs of :data:`SLAB` bins. S expands ``G(k_{s_c})`` and computes
   ``q_j = G(k_s)_j ⊕ (s ∧ u_j) = t_j ⊕ (s ∧ C(x_j, i_j))``. The OPRF is
   ``F_j(y, i) = H*(q_j ⊕ (s ∧ C(y, i)), j)``; R knows ``F_j(x_j, i_j) = H*(t_j, j)``.
4. *Values.* For every item ``y`` and ``i < 3`` S computes ``F_{h_i(y)}(y, i)``
   (simple hashing: all three bins, no bin capacity), truncated to
   :func:`value_bytes` bytes, and sends three lists, one per ``i``, all in one
   uniformly random order of its rows (position ``k`` of every list belongs to
   row ``perm[k]``), so the lists carry nothing of S's row order.
5. *Intersection.* R looks up each of its values in the list of its placement
   index, marks its matching rows, and sends back one bit per *position* ``k``
   (``n_S`` bits, whatever the intersection's size); S marks rows ``perm[k]``.
   Both return the flags of their own rows. (KKRT16 permute the three lists
   independently; here they share one permutation so that R can answer per row:
   a bit per list entry would tell S which hash function R used for each common
   item, and that choice depends on R's other items.)

``H*`` hashes a 512-bit row to 128 bits by chaining the TCCR hash over its four
16-byte blocks, ``h_{b+1} = H(h_b ⊕ z_b, (τ, 4j + b))`` from ``h_0 = 0`` (``τ`` from the salt). A sender
value hides ``y``: R knows ``q_j ⊕ (s ∧ C(y, i))`` only up to ``s`` on the support
of ``d = C(x_j, i_j) ⊕ C(y, i)``; every chain step's output is a fresh random
value to R until it has queried π at that step's exact input, which it can do only
after guessing both the previous (random) chain value and ``s`` on that block of
``d`` — so computing the last block needs all of ``s`` on ``supp(d)`` (≥ 128 bits,
below): one query succeeds with probability ≤ 2^-128. (An XOR of per-block hashes
would not do: each block could be attacked alone with 2^wt(d_b) queries.)

Parameters
----------
* Code width ``w = 512`` (:data:`WIDTH`). KKRT16 need ``wt(C(x) ⊕ C(y)) ≥ κ = 128``
  for every pair of the receiver's input to a bin and a sender evaluation in that bin;
  with a random code, one pair falls short with probability
  ``2^-512 · Σ_{i<128} C(512, i) ≈ 2^-102.3`` (a width of 424 gives 2^-54.3), so
  over the ``3·n_S ≤ 3·2^32`` evaluations (:data:`MAX_ITEMS`) the failure
  probability is ≤ 2^-68.7, well under 2^-σ.
* Values: ``ℓ = σ + ⌈log2(n_R·n_S)⌉`` bits rounded up to bytes (:func:`value_bytes`),
  e.g. 80 bits = 10 bytes for 2^20 × 2^20: each receiver value meets the ``n_S``
  values of one list, so a false match anywhere has probability ≤ n_R·n_S·2^-ℓ ≤ 2^-40.
* Cuckoo table: 3 hash functions, no stash, ``m = ⌈1.27·n_R⌉`` bins for
  ``n_R ≥ 2^12`` — the stash-less three-hash size that B. Pinkas, T. Schneider,
  M. Zohner, "Scalable Private Set Intersection Based on OT Extension", ACM
  Transactions on Privacy and Security 21(2), 2018, determined experimentally for
  failure ≤ 2^-40 (an empirical bound, not a proof). Smaller sets, where that
  experiment says little, get the smallest ``m`` for which the first-moment bound
  of Hall's condition, ``Σ_{k≥2} C(n,k)·C(m,k−1)·((k−1)/m)^{3k}``, is ≤ 2^-40 (a
  proof for ideal hash functions; e.g. 257 bins for 2 items, 3 570 for 1 024).
  Why no stash and rehash on failure: with a stash, S would have to send ``n_S``
  more values per stash slot; failing that rarely, a local retry costs nothing
  and reveals at most that event (the salt S sees is within statistical
  distance 2^-40 of uniform, whatever R's set).

N ≥ 3 parties
-------------
The first party of ``ch.parties`` (the *leader*) runs the two-party protocol as R
with each other party ``P_1, …, P_{N−1}`` in turn, on its surviving candidates:
first ``S_L`` with ``S_1``, then ``S_L ∩ S_1`` with ``S_2``, …; after the last
round it knows which of its rows are in ``∩ S``. Then it tells each ``P_i``
(``i < N−1``) which of the rows of that pairwise intersection survived: one bit
per element of ``(S_L ∩ … ∩ S_{i−1}) ∩ S_i``, elements ordered by their digest
(both sides hold exactly those digests). For ``P_{N−1}`` the pairwise result is
already the final one.

What each party learns (beyond its own input)
---------------------------------------------
* Everyone: every party's set size (sent in the first message to all, so a bad
  input aborts the call everywhere); which of its own rows are in ``∩ S``.
* Two parties: nothing more (up to the 2^-40 events above; a false match would
  wrongly mark a row on both sides).
* N ≥ 3, the leader: for every ``i``, which of its rows are in
  ``S_L ∩ S_1 ∩ … ∩ S_i`` (the intersection with the first ``i`` others, in
  ``ch.parties`` order).
* N ≥ 3, party ``P_i``: which of its rows are in ``S_L ∩ S_1 ∩ … ∩ S_{i−1}``
  (the leader's candidates at its turn; ``S_L`` itself for ``P_1``) and that
  candidate set's size.
* Nothing about items outside those sets: S's values for other items are
  pseudorandom to R, and R's messages are pseudorandom to S.

Cost (two parties): R sends ``64·m`` bytes (≈ 81 bytes per item) plus ``n_S/8``;
S sends ``3·ℓ/8·n_S`` bytes (30 bytes per item at 2^20). Work is a few dozen
fixed-key AES blocks per item, vectorized over slabs.
"""

from __future__ import annotations

import functools
import json
import math
import os
import secrets

import numpy as np

from .channel import Channel, pack_arrays, scoped, unpack_arrays
from .crypto_hash import aes_fixed, derive, prg_rows, tccr_hash
from .errors import InputMismatchError, ProtocolError
from .ot_extension import random_ot_recv, random_ot_send, transpose_bits

__all__ = [
    "PSI_LEAKAGE",
    "WIDTH",
    "SIGMA",
    "HASHES",
    "SLAB",
    "MAX_ITEMS",
    "private_set_intersection",
    "table_size",
    "value_bytes",
]

PSI_LEAKAGE = (
    "private set intersection (KKRT16 OT-based PSI, semi-honest): every party learns every party's set size and "
    "which of its own rows are in the intersection of all parties' sets, nothing else about other parties' items; "
    "with 3 or more parties the first party (leader) runs the two-party protocol with each other party in turn on "
    "its surviving rows, so the leader also learns which of its rows are in its intersection with the first i "
    "other parties for every i, and the i-th other party learns which of its rows are in the intersection of the "
    "leader's and the preceding parties' sets, and that set's size"
)

WIDTH = 512  #: bits of the pseudorandom code = base OTs per call
SIGMA = 40  #: statistical security parameter (false matches, cuckoo failure)
HASHES = 3  #: cuckoo hash functions
SLAB = 1 << 16  #: bins per OPRF extension message (64 · SLAB bytes = 4 MiB)
MAX_ITEMS = 1 << 32  #: largest set per party (the code-distance bound above)

_BLOCKS = WIDTH // 128
_EPS = 1.27  # bins per item for large sets (PSZ18, stash-less, three hash functions)
_LARGE = 1 << 12  # from this set size on, the table is ⌈1.27 n⌉
_CHUNK = 1 << 18  # rows per message of sender values
_ROUNDS = 2000  # random-walk rounds before the exact matching takes over
_ATTEMPTS = 8  # fresh salts before giving up (each fails with probability ≤ 2^-40)
_PROTO = "kkrt16-psi/v1"


# --------------------------------------------------------------------------- public parameters
@functools.lru_cache(maxsize=256)
def _hall_table_size(n: int) -> int:
    """Smallest m with the first-moment bound on a violated Hall condition ≤ 2^-σ (ideal hashes)."""
    ks = np.arange(2, n + 1, dtype=np.float64)
    lgam = np.vectorize(math.lgamma, otypes=[np.float64])
    log_n_k = math.lgamma(n + 1) - lgam(ks + 1) - lgam(n - ks + 1)

    def log2_bound(m: int) -> float:
        terms = log_n_k + math.lgamma(m + 1) - lgam(ks) - lgam(m - ks + 2) + HASHES * ks * np.log((ks - 1) / m)
        top = float(terms.max())
        return (top + math.log(float(np.exp(terms - top).sum()))) / math.log(2)

    lo, hi = n + 1, max(n + 2, 2 * n)
    while log2_bound(hi) > -SIGMA:
        lo, hi = hi, 2 * hi
    while lo < hi:  # the bound decreases in m
        mid = (lo + hi) // 2
        if log2_bound(mid) <= -SIGMA:
            hi = mid
        else:
            lo = mid + 1
    return hi


def table_size(n: int) -> int:
    """Cuckoo bins for ``n`` receiver items: ⌈1.27 n⌉ from 2^12 items on, else the provable size (module doc)."""
    n = int(n)
    if n <= 0:
        return 0
    if n == 1:
        return 2
    m = math.ceil(_EPS * n)
    return m if n >= _LARGE else max(m, _hall_table_size(n))


def value_bytes(n_recv: int, n_send: int) -> int:
    """Bytes of each OPRF value: ⌈(σ + ⌈log2(n_R·n_S)⌉) / 8⌉, at most 16."""
    pairs = max(1, int(n_recv)) * max(1, int(n_send))
    return min(16, -(-(SIGMA + (pairs - 1).bit_length()) // 8))


# --------------------------------------------------------------------------- hashing
class _Keys:
    """Tweak words, PRG nonce of one run, derived from its label and the receiver's salt."""

    __slots__ = ("bins", "code", "hash", "nonce")

    def __init__(self, label: str, salt: bytes):
        d = derive("ppdm/psi/kkrt16/tweaks", label, salt)
        self.bins, self.code, self.hash = (int.from_bytes(d[8 * k : 8 * k + 8], "little") for k in range(3))
        self.nonce = derive("ppdm/psi/kkrt16/prg", label, salt, size=16)


def _bins(px: np.ndarray, tw: int, m: int) -> np.ndarray:
    """``(n, 3)`` bins ``h_i(x)`` from ``π(x)``: 64-bit words of TCCR hashes, mod ``m``."""
    n = px.shape[0]
    words = np.empty((n, 4), np.uint64)
    for b in range(2):
        words[:, 2 * b : 2 * b + 2] = tccr_hash(px, tw, np.full(n, b, np.uint64), px=px).view(np.uint64)
    return (words[:, :HASHES] % np.uint64(m)).astype(np.int64)


def _code(px: np.ndarray, hidx: np.ndarray, tw: int) -> np.ndarray:
    """Pseudorandom code ``C(x, i)``: ``(k, 64)`` uint8, block ``b`` = TCCR of ``x`` under tweak ``(tw, 4i + b)``."""
    k = px.shape[0]
    rep = np.repeat(px, _BLOCKS, axis=0)
    lo = (hidx.astype(np.uint64)[:, None] * np.uint64(_BLOCKS) + np.arange(_BLOCKS, dtype=np.uint64)).reshape(-1)
    return tccr_hash(rep, tw, lo, px=rep).reshape(k, WIDTH // 8)


def _row_hash(z: np.ndarray, bins: np.ndarray, tw: int) -> np.ndarray:
    """``H*``: ``(k, 64)`` rows → ``(k, 16)``, TCCR chained over the four blocks, tweaks ``(tw, 4j + b)``."""
    k = z.shape[0]
    base = bins.astype(np.uint64) * np.uint64(_BLOCKS)
    h = np.zeros((k, 16), np.uint8)
    for b in range(_BLOCKS):
        h ^= z[:, 16 * b : 16 * b + 16]
        h = tccr_hash(h, tw, base + np.uint64(b), out=h)
    return h


def _expand(seeds: np.ndarray, nonce: bytes, lo: int, mb: int, xor: np.ndarray | None = None) -> np.ndarray:
    """Rows ``lo:lo+mb`` of the 512 PRG columns ``G(seeds[c])``, as ``(mb, 64)`` (transposed)."""
    B = -(-mb // 64) * 8
    rows = np.empty((mb, WIDTH // 8), np.uint8)
    for c in range(_BLOCKS):
        M = prg_rows(seeds[128 * c : 128 * c + 128], nonce, B, offset_blocks=lo // 128)
        rows[:, 16 * c : 16 * c + 16] = transpose_bits(M)[:mb]
    if xor is not None:
        rows ^= xor
    return rows


def _sort_keys(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Big-endian 64-bit words (first 8 bytes, next 8 bytes zero-padded): their order is the bytewise order."""
    pad = np.zeros((v.shape[0], 16), np.uint8)
    pad[:, : v.shape[1]] = v
    w = pad.view(">u8")
    return w[:, 0].astype(np.uint64), w[:, 1].astype(np.uint64)


def _bytewise_order(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices sorting rows of ≤ 16 bytes bytewise, and the two sort words of the sorted rows.

    One argsort of the first 64-bit word; only runs of equal first words (rare for digests and
    OPRF values) are ordered by the second word too.
    """
    hi, lo = _sort_keys(v)
    order = np.argsort(hi)
    hs = hi[order]
    tie = hs[1:] == hs[:-1]
    if tie.any():
        run = np.zeros(order.size, bool)
        run[1:] |= tie
        run[:-1] |= tie
        sub = order[run]
        order[run] = sub[np.lexsort((lo[sub], hi[sub]))]
        hs = hi[order]
    return order, hs, lo[order]


def _permutation(n: int) -> np.ndarray:
    """A uniformly random permutation of ``range(n)``: argsort of 64-bit keys from the OS CSPRNG
    (uniform up to key collisions, probability ≤ n²/2^65)."""
    keys = np.frombuffer(secrets.token_bytes(8 * n), "<u8") if n else np.zeros(0, "<u8")
    return np.argsort(keys, kind="stable")


# --------------------------------------------------------------------------- cuckoo hashing
def _cuckoo(bins: np.ndarray, m: int, rounds: int = _ROUNDS) -> tuple[np.ndarray, np.ndarray] | None:
    """Place each item in one of its 3 bins, ≤ 1 per bin: ``(table (m,) item or −1, hash index (n,))``, or None.

    Vectorized random walk (Pagh–Rodler insertion, all pending items at once): each
    pending item claims its current bin, one claimant per bin wins and evicts the
    occupant; losers and evicted items move to another of their bins, chosen at
    random. If the walk has not settled after ``rounds`` rounds, a maximum bipartite
    matching (Hopcroft–Karp, scipy) decides exactly: None means no placement exists.
    """
    n = bins.shape[0]
    rng = np.random.default_rng()
    table = np.full(m, -1, np.int64)
    choice = np.zeros(n, np.int64)
    pending = np.arange(n)
    for _ in range(rounds):
        if not pending.size:
            return table, choice
        b = bins[pending, choice[pending]]
        prev = table[b]
        table[b] = pending  # with repeated bins, one of the writers wins
        won = table[b] == pending
        evicted = prev[won]
        pending = np.concatenate([evicted[evicted >= 0], pending[~won]])
        choice[pending] = (choice[pending] + 1 + rng.integers(0, 2, pending.size)) % HASHES
    if not pending.size:
        return table, choice
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    graph = csr_matrix(
        (np.ones(HASHES * n, np.int8), bins.reshape(-1), np.arange(0, HASHES * n + 1, HASHES)), shape=(n, m)
    )
    match = maximum_bipartite_matching(graph, perm_type="column")
    if (match < 0).any():
        return None
    table = np.full(m, -1, np.int64)
    table[match] = np.arange(n)
    choice = np.argmax(bins == match[:, None], axis=1).astype(np.int64)
    return table, choice


# --------------------------------------------------------------------------- validation and status
def _check_items(items) -> tuple[np.ndarray, str | None]:
    a = np.asarray(items)
    if a.ndim != 2 or a.shape[1] != 16 or a.dtype != np.uint8:
        return np.zeros((0, 16), np.uint8), "items must be an (n, 16) uint8 array of digests"
    if a.shape[0] > MAX_ITEMS:
        return np.zeros((0, 16), np.uint8), f"more than {MAX_ITEMS} items"
    a = np.ascontiguousarray(a)
    if a.shape[0] > 1:
        _, hi, lo = _bytewise_order(a)
        if ((hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])).any():
            return a, "duplicate rows (items must be distinct digests)"
    return a, None


async def _exchange_status(sc: Channel, n: int, problem: str | None) -> dict[str, int]:
    """Every party sends every other its size and parameters; any problem aborts the call on every party."""
    params = {"proto": _PROTO, "width": WIDTH, "sigma": SIGMA, "hashes": HASHES, "slab": SLAB}
    mine = json.dumps({**params, "n": n, "error": problem}, sort_keys=True).encode()
    peers = [p for p in sc.parties if p != sc.me]
    for p in peers:
        await sc.send(p, "status", mine)
    if problem is not None:
        raise ValueError(f"private_set_intersection: {problem}")
    sizes = {sc.me: n}
    for p in peers:
        try:
            theirs = json.loads(await sc.recv(p, "status"))
            if not isinstance(theirs, dict):
                raise ValueError
        except ValueError:
            raise ProtocolError(f"PSI: malformed status message from {p}") from None
        if theirs.get("error") is not None:
            raise ProtocolError(f"PSI aborted: party {p} rejected its input ({theirs['error']})")
        diff = sorted(k for k in params if theirs.get(k) != params[k])
        if diff:
            got = ", ".join(f"{k}: {sc.me}={params[k]!r}, {p}={theirs.get(k)!r}" for k in diff)
            raise InputMismatchError(f"PSI: parties disagree on parameters ({got})")
        size = theirs.get("n")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_ITEMS:
            raise ProtocolError(f"PSI: malformed set size from {p}")
        sizes[p] = size
    return sizes


def _recv_checked(raw: bytes, shape: tuple[int, ...], what: str, peer: str) -> np.ndarray:
    try:
        msg = unpack_arrays(raw)
    except ProtocolError:
        msg = []
    if len(msg) != 1 or msg[0].shape != shape or msg[0].dtype != np.uint8:
        raise ProtocolError(f"PSI: malformed {what} from {peer}")
    return msg[0]


async def _swap_sizes(sc: Channel, peer: str, n: int) -> int:
    await sc.send(peer, "size", pack_arrays(np.array([n], np.int64)))
    try:
        msg = unpack_arrays(await sc.recv(peer, "size"))
    except ProtocolError:
        msg = []
    if len(msg) != 1 or msg[0].shape != (1,) or msg[0].dtype != np.int64 or not 0 <= int(msg[0][0]) <= MAX_ITEMS:
        raise ProtocolError(f"PSI: malformed size message from {peer}")
    return int(msg[0][0])


# --------------------------------------------------------------------------- two-party roles
async def _receiver(sc: Channel, peer: str, items: np.ndarray, label: str) -> np.ndarray:
    """R of one two-party run: returns the flags of its rows; S learns which of its rows matched."""
    n = items.shape[0]
    n_s = await _swap_sizes(sc, peer, n)
    if n == 0 or n_s == 0:
        return np.zeros(n, bool)
    L, m = value_bytes(n, n_s), table_size(n)
    k0, k1 = await random_ot_send(sc, peer, WIDTH, tag="base")
    px = aes_fixed(items)
    for _ in range(_ATTEMPTS):
        salt = os.urandom(16)
        keys = _Keys(label, salt)
        placed = _cuckoo(_bins(px, keys.bins, m), m)
        if placed is not None:
            break
    else:
        raise ProtocolError(f"PSI: cuckoo hashing failed with {_ATTEMPTS} fresh salts (probability < 2^-300)")
    table, choice = placed
    await sc.send(peer, "salt", pack_arrays(np.frombuffer(salt, np.uint8)))
    mine = np.empty((n, L), np.uint8)  # R's OPRF value of each of its items
    for lo in range(0, m, SLAB):
        hi = min(m, lo + SLAB)
        occ = table[lo:hi]
        full = occ >= 0
        src = np.frombuffer(os.urandom(16 * (hi - lo)), np.uint8).reshape(hi - lo, 16).copy()  # dummies
        src[full] = px[occ[full]]
        t = _expand(k0, keys.nonce, lo, hi - lo)
        u = _expand(k1, keys.nonce, lo, hi - lo, xor=t)  # w = t ⊕ G(k1)
        u ^= _code(src, np.where(full, choice[np.maximum(occ, 0)], 0), keys.code)
        await sc.send(peer, "ext", pack_arrays(u))
        j = np.flatnonzero(full)
        mine[occ[j]] = _row_hash(t[j], j + lo, keys.hash)[:, :L]
    hits = np.zeros(n_s, bool)  # by position k of S's lists (row-aligned)
    flags = np.zeros(n, bool)
    for i in range(HASHES):
        theirs = np.empty((n_s, L), np.uint8)
        for a in range(0, n_s, _CHUNK):
            b = min(n_s, a + _CHUNK)
            theirs[a:b] = _recv_checked(await sc.recv(peer, "values"), (b - a, L), "OPRF values", peer)
        o_s, hi_s, lo_s = _bytewise_order(theirs)
        rows = np.flatnonzero(choice == i)
        o, hi_r, lo_r = _bytewise_order(mine[rows])  # sorted needles: a much faster searchsorted
        rows = rows[o]
        left = np.searchsorted(hi_s, hi_r, "left")
        right = np.searchsorted(hi_s, hi_r, "right")
        one = np.flatnonzero(right - left == 1)
        ok = one[lo_s[left[one]] == lo_r[one]]
        flags[rows[ok]] = True
        hits[o_s[left[ok]]] = True
        for r in np.flatnonzero(right - left > 1):  # equal 64-bit prefixes: probability ~ n_S^2 / 2^64
            same = left[r] + np.flatnonzero(lo_s[left[r] : right[r]] == lo_r[r])
            if same.size:
                flags[rows[r]] = True
                hits[o_s[same]] = True
    await sc.send(peer, "hits", pack_arrays(np.packbits(hits)))
    return flags


async def _sender(sc: Channel, peer: str, items: np.ndarray, label: str) -> np.ndarray:
    """S of one two-party run: returns the flags of its rows (R tells it which of its values matched)."""
    n = items.shape[0]
    n_r = await _swap_sizes(sc, peer, n)
    if n == 0 or n_r == 0:
        return np.zeros(n, bool)
    L, m = value_bytes(n_r, n), table_size(n_r)
    s_block = np.frombuffer(os.urandom(WIDTH // 8), np.uint8)
    ks = await random_ot_recv(sc, peer, np.unpackbits(s_block, bitorder="little").astype(bool), tag="base")
    salt = _recv_checked(await sc.recv(peer, "salt"), (16,), "salt", peer)
    keys = _Keys(label, salt.tobytes())
    px = aes_fixed(items)
    flat = _bins(px, keys.bins, m).reshape(-1)  # pair p = 3·row + i lands in bin flat[p]
    slab_of = flat // SLAB
    slab_of = slab_of.astype(np.uint16 if m <= SLAB << 16 else np.uint32)  # ≤ 16 bits: numpy's radix sort
    order = np.argsort(slab_of, kind="stable")
    by_bin = flat[order]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(slab_of, minlength=-(-m // SLAB)))])
    values = np.empty((HASHES, n, L), np.uint8)
    for k, lo in enumerate(range(0, m, SLAB)):
        hi = min(m, lo + SLAB)
        u = _recv_checked(await sc.recv(peer, "ext"), (hi - lo, WIDTH // 8), "OPRF extension message", peer)
        q = _expand(ks, keys.nonce, lo, hi - lo, xor=u & s_block)  # q_j = G(k_s)_j ⊕ (s ∧ u_j)
        p = order[bounds[k] : bounds[k + 1]]
        rows, hidx, j = p // HASHES, p % HASHES, by_bin[bounds[k] : bounds[k + 1]]
        z = _code(px[rows], hidx, keys.code)
        z &= s_block
        z ^= q[j - lo]
        values[hidx, rows] = _row_hash(z, j, keys.hash)[:, :L]
    perm = _permutation(n)  # position k of every list holds row perm[k]
    for i in range(HASHES):
        shuffled = values[i][perm]
        for a in range(0, n, _CHUNK):
            await sc.send(peer, "values", pack_arrays(shuffled[a : a + _CHUNK]))
    packed = _recv_checked(await sc.recv(peer, "hits"), (-(-n // 8),), "intersection bits", peer)
    flags = np.zeros(n, bool)
    flags[perm[np.unpackbits(packed)[:n].astype(bool)]] = True
    return flags


# --------------------------------------------------------------------------- entry point
async def private_set_intersection(ch: Channel, items: np.ndarray, *, tag: str) -> np.ndarray:
    """Which of this party's digests are in every party's set: KKRT16 PSI over ``ch.parties`` (module docstring).

    ``items``: ``(n, 16) uint8``, this party's keys already hashed to 16-byte digests,
    distinct (else ``ValueError`` here and :class:`~mpc.errors.ProtocolError` on the
    others, after one status message). Returns ``(n,) bool``: row ``r`` is True iff
    ``items[r]`` is in the intersection of all parties' sets. Every party calls it
    with the same ``tag``; set sizes may differ.

    Reveals (semi-honest, :data:`PSI_LEAKAGE`): every party's set size and, to each
    party, which of its own rows are in the intersection; with N ≥ 3 also the
    prefix intersections listed in the module docstring (leader and star order).
    """
    if len(ch.parties) < 2:
        raise ProtocolError("private_set_intersection needs at least 2 parties")
    sc = scoped(ch, tag)
    rows, problem = _check_items(items)
    await _exchange_status(sc, rows.shape[0], problem)
    leader, others = sc.parties[0], list(sc.parties[1:])
    if sc.me != leader:
        pc = scoped(sc, f"pair/{sc.me}")
        mine = await _sender(pc, leader, rows, f"{tag}/{leader}>{sc.me}")
        if sc.me == others[-1] or not mine.any():
            # the last party's pairwise result is final; an empty pairwise result stays empty
            return mine
        idx = np.flatnonzero(mine)
        idx = idx[_bytewise_order(rows[idx])[0]]
        packed = _recv_checked(await pc.recv(leader, "final"), (-(-idx.size // 8),), "final flags", leader)
        out = np.zeros(rows.shape[0], bool)
        out[idx[np.unpackbits(packed)[: idx.size].astype(bool)]] = True
        return out
    alive = np.arange(rows.shape[0])
    matched: dict[str, np.ndarray] = {}
    for p in others:
        got = await _receiver(scoped(sc, f"pair/{p}"), p, rows[alive], f"{tag}/{leader}>{p}")
        matched[p] = alive[got]
        alive = alive[got]
    final = np.zeros(rows.shape[0], bool)
    final[alive] = True
    for p in others[:-1]:
        idx = matched[p]
        if idx.size:
            idx = idx[_bytewise_order(rows[idx])[0]]
            await scoped(sc, f"pair/{p}").send(p, "final", pack_arrays(np.packbits(final[idx])))
    return final
