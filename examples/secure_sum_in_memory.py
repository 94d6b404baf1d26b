"""Three parties compute a secure sum and a secure comparison on the in-memory network.

    python examples/secure_sum_in_memory.py

The same protocol functions run unchanged between party daemons (see
joint_mining_daemons.py); here all parties share one event loop.
"""

import numpy as np

from mpc.channel import run_parties
from mpc.secure_sum import secure_sum, secure_sum_threshold

salaries = {"alice": np.array([52_000, 61_000]), "bob": np.array([48_000, 75_000]), "carol": np.array([55_000, 58_000])}


async def party(ch, mine):
    total = await secure_sum(ch, mine, tag="payroll")  # everyone learns the sums, nothing else
    above = await secure_sum_threshold(ch, mine, 180_000, tag="budget")  # only Σ ≥ 180,000 per column
    return total, above


results = run_parties(list(salaries), party, salaries)
total, above = results["alice"]
print("column sums:", total.tolist())
print("sum >= 180,000:", above.tolist())
assert total.tolist() == sum(salaries.values()).tolist()
