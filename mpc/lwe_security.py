"""A reproducible security estimate for the LWE parameters of :mod:`mpc.lwe_product`.

Two checks, both run by ``tests/test_lwe_security.py`` (and printable with
``python -m mpc.lwe_security``):

1. **Against the standard's table.** The Homomorphic Encryption Security Standard (M. Albrecht,
   M. Chase, H. Chen et al., HomomorphicEncryption.org, 2018, Table 1, ternary secrets,
   σ = 3.2) allows at most log q = 54 (classical) and 51 (quantum) for n = 2048 at 128 bits.
   For fixed n and secret distribution, lattice attacks depend on q and σ through the ratio
   q/σ (scaling the errors and the modulus together scales the lattice), so parameters with
   σ ≠ 3.2 are compared by their *equivalent* log q: ``log2(q / σ · 3.2)``.
2. **Primal uSVP, core-SVP model** (E. Alkim, L. Ducas, T. Pöppelmann, P. Schwabe, "Post-quantum
   key exchange — a new hope", USENIX Security 2016, §6; the secret rescaled to the error's
   width as in S. Bai, S. Galbraith, "Lattice decoding attacks on binary LWE", ACISP 2014): the
   smallest BKZ block size β for which ``σ·√β ≤ δ_β^(2β−d−1) · Vol^(1/d)`` for some number of
   samples m, with d = m + n + 1 and Vol = q^m · (σ/σ_s)^n; cost 2^(0.292β) classically and
   2^(0.265β) quantum (sieving). The model is conservative (it ignores the cost of the
   enumeration/sieving overhead and BKZ tours), so the check is *relative*: the block size our
   parameters need is at least what the standard's 128-bit quantum row needs.
"""

from __future__ import annotations

import math

__all__ = [
    "HES_MAX_LOG_Q_2048",
    "HES_SIGMA",
    "core_svp_bits",
    "equivalent_log_q",
    "usvp_block_size",
]

HES_SIGMA = 3.2
#: the standard's largest log q for n = 2048, ternary secret, σ = 3.2, at 128 bits
HES_MAX_LOG_Q_2048 = {"classical": 54, "quantum": 51}


def equivalent_log_q(log2_q: float, sigma: float) -> float:
    """log2 of the modulus that, with σ = 3.2, has the same q/σ as ``(2^log2_q, sigma)``."""
    return log2_q - math.log2(sigma / HES_SIGMA)


def _delta(beta: int) -> float:
    """Root-Hermite factor BKZ-β reaches (Chen's formula, as in Alkim et al. 2016)."""
    return ((math.pi * beta) ** (1 / beta) * beta / (2 * math.pi * math.e)) ** (1 / (2 * (beta - 1)))


def usvp_block_size(n: int, log2_q: float, sigma: float, sigma_secret: float = math.sqrt(2 / 3)) -> int:
    """Smallest β for which the primal uSVP attack succeeds with some number of samples m ≤ 2n."""
    log_nu = math.log2(sigma / sigma_secret)  # the secret's coordinates rescaled to the error's width
    for beta in range(60, 2 * n):
        lhs = math.log2(sigma) + 0.5 * math.log2(beta)
        log_delta = math.log2(_delta(beta))
        for m in range(max(1, beta - n), 2 * n + 1, 16):
            d = m + n + 1
            log_vol = m * log2_q + n * log_nu
            if lhs <= (2 * beta - d - 1) * log_delta + log_vol / d:
                return beta
    return 2 * n


def core_svp_bits(beta: int, *, quantum: bool) -> float:
    """log2 of the core-SVP cost of BKZ-β: 0.265β with quantum sieving, 0.292β classically."""
    return (0.265 if quantum else 0.292) * beta


def _report() -> str:
    from .lwe_product import LWE_LOG_Q, LWE_N, SIGMA

    eq = equivalent_log_q(LWE_LOG_Q, SIGMA)
    ours = usvp_block_size(LWE_N, LWE_LOG_Q, SIGMA)
    ref = usvp_block_size(LWE_N, HES_MAX_LOG_Q_2048["quantum"], HES_SIGMA)
    return "\n".join(
        [
            f"n = {LWE_N}, q = 2^{LWE_LOG_Q}, sigma = {SIGMA:g}, ternary secret",
            f"equivalent log q at sigma 3.2: {eq:.2f} (HE standard, 128 bits: <= "
            f"{HES_MAX_LOG_Q_2048['classical']} classical, <= {HES_MAX_LOG_Q_2048['quantum']} quantum)",
            f"primal uSVP block size: {ours}; the standard's 128-bit quantum row (n=2048, log q=51, sigma 3.2): {ref}",
            f"(core-SVP, a conservative lower-bound model, puts both at {core_svp_bits(ours, quantum=False):.0f} bits "
            f"classical / {core_svp_bits(ours, quantum=True):.0f} quantum; the standard's 128 uses a fuller cost model)",
        ]
    )


if __name__ == "__main__":  # pragma: no cover - a report for people
    print(_report())
