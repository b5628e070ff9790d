"""The one shape every DP mechanism uses to report what it spent."""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class MechanismSpend:
    """What one DP release cost, in the units of the privacy guarantee (a user).

    `noise` describes the noise actually added (e.g. {"kind": "gaussian", "sigma": 3.2}) so a
    reader can judge small counts; `sensitivity` is the user-level sensitivity it was calibrated
    to (L1 for Laplace, L2 for Gaussian). `epsilon` and `delta` are the stage's own guarantee.

    `event` is the dp-accounting event of that noise, as plain JSON (dp_ops.dp_events writes and
    reads it), which the run's budget composes with the other stages' (PLD): the run's total is not
    the sum of the stages' epsilons. None only in files written before spends carried events.
    """

    stage: str
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    noise: dict
    event: dict | None = None

    def __post_init__(self):
        if not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"{self.stage}: epsilon must be finite and >= 0, got {self.epsilon}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"{self.stage}: delta must be in [0, 1), got {self.delta}")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "MechanismSpend":
        optional = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data or f.name not in optional})
