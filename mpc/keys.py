"""Session pairwise seeds and the AES-CTR pseudo-random generator built on them.

Model and assumptions
---------------------
* Semi-honest parties; the transport authenticates senders (mTLS in
  ``parties``, the caller's process in :class:`mpc.channel.MemoryNetwork`), so
  an *unauthenticated* Diffie–Hellman exchange over it is enough.
* Once per session and per pair of parties {i, j}, each party sends the other a
  fresh X25519 public key; both derive the same 32-byte pairwise seed

      s_ij = HKDF-SHA256(X25519(sk_i, pk_j), info = "ppdm/mpc/pairwise-seed/v1" | i | j)

  with i, j in the session's party order. Seeds live in ``ch.state`` (one
  session), are never sent, and are known only to i and j.
* Masks are derived per protocol step: ``key = SHA-256(s_ij | full_tag)[:16]``
  and ``PRG(key) = AES-128-CTR(key, nonce 0)`` over zero bytes. The *full tag*
  (the tag with every :class:`mpc.channel.ScopedChannel` prefix) is unique in a
  session by the channel contract; :func:`claim_tag` enforces it so a mask can
  never be used twice (reuse would reveal the difference of two inputs).

The exchange runs on the session's root channel under the fixed tag
``mpc.keys/x25519``, so concurrent protocols in different scopes share it
without deadlock, whichever of them asks first.

References: RFC 7748 (X25519), RFC 5869 (HKDF); the pairwise-seed masking of
Bonawitz et al., "Practical Secure Aggregation for Privacy-Preserving Machine
Learning", CCS 2017.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .channel import Channel, ScopedChannel, root_channel
from .errors import ProtocolError

__all__ = [
    "root_channel",
    "full_tag",
    "pair_channel",
    "claim_tag",
    "pairwise_seed",
    "pairwise_seeds",
    "step_key",
    "prg_bytes",
    "prg_uint64",
    "random_bits",
]

_STATE = "mpc.keys"
_KEX_TAG = "mpc.keys/x25519"
_INFO = b"ppdm/mpc/pairwise-seed/v1"


# --------------------------------------------------------------------------- views and tags
class _PairChannel:
    """``ch`` restricted to some of its parties (``me`` among them; same tags, same state)."""

    def __init__(self, ch: Channel, peer: str | Sequence[str]):
        members = {peer} if isinstance(peer, str) else set(peer)
        self._ch = ch
        self.me = ch.me
        self.parties = tuple(p for p in ch.parties if p == ch.me or p in members)
        self.state = ch.state

    @property
    def root(self) -> Channel:
        return root_channel(self._ch)

    @property
    def bytes_sent(self) -> int:
        return self._ch.bytes_sent

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        await self._ch.send(to, tag, payload)

    async def recv(self, frm: str, tag: str) -> bytes:
        return await self._ch.recv(frm, tag)


def pair_channel(ch: Channel, peer: str) -> Channel:
    """A view of ``ch`` whose ``parties`` are only this party and ``peer``.

    Lets two-party protocols inside an N-party session use
    :func:`mpc.channel.agree` and friends without waiting for bystanders.
    """
    if peer == ch.me or peer not in ch.parties:
        raise ValueError(f"peer must be another party of the session, got {peer!r}")
    return _PairChannel(ch, peer)


def subset_channel(ch: Channel, members: Sequence[str]) -> Channel:
    """A view of ``ch`` whose ``parties`` are only ``members`` (this party among them), in session order.

    Lets a protocol among some parties of a session (say the data holders, without a compute-only
    party) run its broadcasts and agreements among them alone; tags and session state are shared.
    """
    if ch.me not in members or not set(members) <= set(ch.parties):
        raise ValueError("members must be parties of the session, this party among them")
    return _PairChannel(ch, [p for p in members if p != ch.me])


def _unwrap(ch: Channel) -> tuple[Channel, list[str]]:
    """(session channel, scope prefixes outermost-last) under scope and pair views."""
    prefixes = []
    while True:
        if isinstance(ch, ScopedChannel):
            prefixes.append(ch.prefix)
            ch = ch.inner
        elif isinstance(ch, _PairChannel):
            ch = ch._ch
        else:
            return ch, prefixes


def full_tag(ch: Channel, tag: str) -> str:
    """``tag`` as the session sees it: with every scope prefix of ``ch`` applied."""
    return "/".join([*reversed(_unwrap(ch)[1]), tag])


def claim_tag(ch: Channel, tag: str) -> str:
    """Reserve ``tag`` (full form) for mask derivation; raise if it was used before.

    Returns the full tag. Reusing a mask tag would make two masked inputs
    differ by the difference of the inputs, so it is refused.
    """
    ft = full_tag(ch, tag)
    used = ch.state.setdefault(_STATE, {}).setdefault("used", set())
    if ft in used:
        raise ProtocolError(f"tag {ft!r} was already used in this session; give each protocol run its own tag")
    used.add(ft)
    return ft


# --------------------------------------------------------------------------- seeds
def _my_key(st: dict) -> tuple[X25519PrivateKey, bytes]:
    if "sk" not in st:
        sk = X25519PrivateKey.generate()
        pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        st["sk"], st["pk"] = sk, pk
    return st["sk"], st["pk"]


async def _exchange(root: Channel, peer: str, st: dict) -> bytes:
    sk, pk = _my_key(st)
    await root.send(peer, _KEX_TAG, pk)
    theirs = await root.recv(peer, _KEX_TAG)
    try:
        shared = sk.exchange(X25519PublicKey.from_public_bytes(bytes(theirs)))
    except ValueError as e:  # wrong length or low-order point
        raise ProtocolError(f"bad key-agreement message from {peer}: {e}") from None
    order = [p for p in root.parties if p in (root.me, peer)]  # s_ij = s_ji
    info = _INFO + b"|" + "|".join(order).encode()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


async def pairwise_seed(ch: Channel, peer: str) -> bytes:
    """The 32-byte seed this party shares with ``peer`` (agreed once per session)."""
    root = root_channel(ch)
    if peer == root.me or peer not in root.parties:
        raise ProtocolError(f"no pairwise seed with {peer!r}")
    st = root.state.setdefault(_STATE, {})
    futs = st.setdefault("seeds", {})
    if peer not in futs:
        futs[peer] = asyncio.ensure_future(_exchange(root, peer, st))
    return await asyncio.shield(futs[peer])


async def pairwise_seeds(ch: Channel, peers) -> dict[str, bytes]:
    """:func:`pairwise_seed` for several peers, concurrently."""
    peers = list(peers)
    got = await asyncio.gather(*(pairwise_seed(ch, p) for p in peers))
    return dict(zip(peers, got))


# --------------------------------------------------------------------------- PRG
def step_key(seed: bytes, ftag: str) -> bytes:
    """AES-128 key for one protocol step: SHA-256(seed | 0x00 | full tag)[:16]."""
    return hashlib.sha256(seed + b"\x00" + ftag.encode()).digest()[:16]


def prg_bytes(key: bytes, nbytes: int) -> np.ndarray:
    """``nbytes`` pseudo-random bytes: AES-128-CTR(key, nonce 0) into a preallocated buffer."""
    buf = np.empty(nbytes + 16, dtype=np.uint8)
    if nbytes:
        enc = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()
        n = enc.update_into(np.zeros(nbytes, dtype=np.uint8), buf)  # type: ignore[arg-type]  # numpy buffers
        assert n == nbytes
    return buf[:nbytes]


def prg_uint64(key: bytes, m: int) -> np.ndarray:
    """``m`` pseudo-random uint64 words (little-endian) from :func:`prg_bytes`."""
    return prg_bytes(key, 8 * m).view("<u8")


def random_bits(n: int) -> np.ndarray:
    """``n`` uniformly random bits as uint8 0/1 (AES-CTR under a fresh OS-random key)."""
    return np.unpackbits(prg_bytes(os.urandom(16), (n + 7) // 8))[:n]
