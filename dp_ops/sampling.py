"""Seeded, data-independent randomness keyed by record ids.

A hash of (seed, purpose, id) gives every record its own uniform number, the same on every worker
and every retry, whatever order the runner processes records in. The numbers depend on ids and the
seed only, never on content, so sampling with them is data-independent.
"""

from __future__ import annotations

import hashlib


def keyed_uniform(seed: int, purpose: str, key: str) -> float:
    """A uniform number in [0, 1) determined by (seed, purpose, key)."""
    digest = hashlib.blake2b(f"{seed}\x1f{purpose}\x1f{key}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def poisson_keep(rate: float, seed: int, purpose: str, key: str) -> bool:
    """Poisson sampling: keep each record independently with probability `rate`."""
    return keyed_uniform(seed, purpose, key) < rate


def keyword_sampling_rate(samples_per_cluster: int | None, noisy_size: float) -> float:
    """min(1, m / noisy size), 1 when m is None (every conversation): a function of DP outputs and
    public parameters only, so the sample is data-independent."""
    if samples_per_cluster is None or noisy_size <= 0:
        return 1.0
    return min(1.0, samples_per_cluster / noisy_size)
