"""The LWE parameters of mpc.lwe_product against the HE Security Standard's 128-bit quantum row
(issue 16, item 12), with the estimator checked against published core-SVP block sizes."""

from __future__ import annotations

import math

from mpc.lwe_product import LWE_LOG_Q, LWE_N, SIGMA, delta_bits_for, noise_bound
from mpc.lwe_security import HES_MAX_LOG_Q_2048, HES_SIGMA, equivalent_log_q, usvp_block_size


def test_the_estimator_reproduces_published_block_sizes():
    # Kyber-512 (round 3 spec: primal attack beta = 406) and NewHope-1024 (Alkim et al. 2016: beta = 967)
    assert usvp_block_size(512, math.log2(3329), math.sqrt(1.5), math.sqrt(1.5)) == 406
    assert abs(usvp_block_size(1024, math.log2(12289), math.sqrt(8), math.sqrt(8)) - 967) <= 2


def test_parameters_meet_the_standards_quantum_row():
    assert equivalent_log_q(LWE_LOG_Q, SIGMA) <= HES_MAX_LOG_Q_2048["quantum"]
    ours = usvp_block_size(LWE_N, LWE_LOG_Q, SIGMA)
    assert ours >= usvp_block_size(LWE_N, HES_MAX_LOG_Q_2048["quantum"], HES_SIGMA)
    # the previous sigma = 3.2 * 2^10 met only the classical row
    old = 3.2 * 2**10
    assert HES_MAX_LOG_Q_2048["quantum"] < equivalent_log_q(LWE_LOG_Q, old) <= HES_MAX_LOG_Q_2048["classical"]
    assert usvp_block_size(LWE_N, LWE_LOG_Q, old) < ours


def test_decryption_stays_far_below_delta_over_four():
    for n_rows in (1_000, 1 << 20, 1 << 27):
        d = delta_bits_for(n_rows)
        assert noise_bound(n_rows) * 4 < 2**d
