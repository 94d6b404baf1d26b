"""Up-front estimates of a joint mining job's peak memory on one party.

The joint miners stream their heavy work in bounded pieces (the product
path in chunks of about :data:`mpc.batched_product.DEFAULT_BUDGET` bytes,
the encrypted path in blocks of :data:`mpc.lwe_product.ROW_BLOCK` rows), so
what grows with the data is the party's own database: its CSR arrays and the
packed bit columns of its items (one bit per transaction and item, built
once), plus per level the candidate arrays and this party's part columns.
:func:`estimate_job_bytes` adds these with a safety factor, so a daemon can
refuse a job with one clear line before it starts swapping
(``[limits] max_job_memory_bytes``); each level's candidates are checked again
(:func:`level_bytes`) before the level is counted.
"""

from __future__ import annotations

from pathlib import Path

from anonymize.itemsets import TransactionDB
from mpc.batched_product import DEFAULT_BUDGET
from mpc.lwe_product import LWE_N, ROW_BLOCK

__all__ = ["estimate_job_bytes", "estimate_file_bytes", "level_bytes", "BASELINE_BYTES", "LEVEL_BYTES_PER_CANDIDATE"]

BASELINE_BYTES = 160 << 20  #: interpreter, numpy, gRPC and the daemon itself


def estimate_file_bytes(path: str | Path, size: int) -> int:
    """Memory to load a transactions file of ``size`` bytes (FIMI text or CSR .npz), before parsing it."""
    per_byte = 6 if str(path).endswith(".dat") else 3  # text: parse buffers and int64 ids; npz: arrays + copy
    return BASELINE_BYTES + per_byte * int(size)


#: working bytes per candidate of a level beyond its ``8·k`` bytes of item ids: local counts, the
#: threshold inputs and their shares, the secure comparison's bits (horizontal; measured: a level of
#: 30 M candidates took about 1.2 GiB per party), or the chunked products' per-candidate state (vertical)
LEVEL_BYTES_PER_CANDIDATE = {"horizontal": 64, "vertical": 48}


def level_bytes(n_candidates: int, k: int, split: str) -> int:
    """Estimated working bytes of one level of ``n_candidates`` itemsets of length ``k``."""
    return int(n_candidates) * (8 * int(k) + LEVEL_BYTES_PER_CANDIDATE[split])


def estimate_job_bytes(db: TransactionDB, split: str, n_items: int | None = None) -> int:
    """Estimated peak bytes of a joint mining job on this party's ``db`` (see the module docstring).

    ``n_items``: a horizontal job's agreed universe, whose level 1 tests every item of it.
    """
    N = db.n_transactions
    items = int(db.items.size)
    if hasattr(db, "largest_partition_lines"):  # partitioned on an engine: one partition in memory at a time
        nnz = int(db.largest_partition_lines())
        N = max(1, N // max(1, getattr(db, "n_partitions", 1)))
    else:
        nnz = int(db.indices.size)
    csr = 8 * (N + 1) + 8 * nnz + 8 * items
    bit_columns = items * ((N + 63) // 64) * 8  # the cached packed columns of every item held
    if split == "horizontal":
        work = 4 * bit_columns + (64 << 20)
    else:
        # part columns of one level (at most the item count again, as packed AND columns),
        # two product-path working sets, the encrypted path's row blocks and public key
        work = 2 * bit_columns + 2 * DEFAULT_BUDGET + 6 * 8 * ROW_BLOCK * LWE_N + 8 * LWE_N * LWE_N
    first_level = level_bytes(n_items, 1, split) if n_items is not None else 0
    return BASELINE_BYTES + 2 * csr + bit_columns + work + first_level
