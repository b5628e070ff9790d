"""The toy stage's mechanism: each kept topic's users, as one Gaussian sum of weighted votes over a fixed
public partition with a single column (a user's conversations weigh 1 in all, and each is in one topic, so
the vote vector's L2 norm is <= 1: dp_ops/fixed_histogram.py)."""

from __future__ import annotations

from dp_ops.fixed_histogram import FixedPartition, fixed_partition_request
from dp_ops.joint_calibration import StageRequest

TOY_SUMS = "toy_sums"
COLUMN = "users"
PARTITION = FixedPartition(TOY_SUMS, (COLUMN,), "Gaussian sum of weighted votes", "topic", noise_stream=0x7011)


def toy_request(weight: float) -> StageRequest:
    return fixed_partition_request(TOY_SUMS, weight)
