"""The one shape every DP mechanism uses to report what it spent."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class MechanismSpend:
    """What one DP release cost, in the units of the privacy guarantee (a user).

    `noise` describes the noise actually added (e.g. {"kind": "gaussian", "sigma": 3.2}) so a
    reader can judge small counts; `sensitivity` is the user-level sensitivity it was calibrated
    to (L1 for Laplace, L2 for Gaussian).
    """

    stage: str
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    noise: dict

    def __post_init__(self):
        if not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"{self.stage}: epsilon must be finite and >= 0, got {self.epsilon}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"{self.stage}: delta must be in [0, 1), got {self.delta}")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "MechanismSpend":
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def total_spend(spends: Iterable[MechanismSpend]) -> tuple[float, float]:
    """(epsilon, delta) of running all mechanisms on the same users: basic composition.

    Basic composition is an upper bound that holds for any mix of mechanisms and any adaptivity
    between them (later stages use earlier DP outputs), which is how the stages are chained.
    """
    spends = list(spends)
    return sum(s.epsilon for s in spends), sum(s.delta for s in spends)
