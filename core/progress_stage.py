"""ProgressStage: how a stage of the job shows in its progress lines (beam_jobs/progress.py).

Beam-free and low in the stack, because the DP stages declare their line where they are declared
(dp_ops/dp_stage_specs.py), below the transforms that count their progress (transforms/progress.py).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ProgressStage:
    """A stage as the progress lines show it. `key`: the stage's counter here (what it passes to
    `advance`); `expected`: what its count is measured against ("users", "kept", "blocks",
    "kmeans_passes" or None); `after`: for a DP stage (dp_ops/dp_stage_specs.py), the key of the
    stage its line follows."""

    key: str
    label: str
    unit: str
    expected: str | None
    after: str | None = None
