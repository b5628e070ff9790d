"""DPStage: the base of every PTransform that releases data-dependent values with DP noise.

Every DP stage knows its spend (`self.spend`, a MechanismSpend carrying the dp-accounting event of the
noise it draws) from its construction, so a caller reads it before the stage is applied, never after.
It registers that spend with the run's RunBudget (dp_ops/run_budget.py): at construction where the
stage draws the noise itself (DP k-means, the vote histograms), when it is applied where PipelineDP
draws it (the counts, partition selection: the entry names the engine that drew it, and PipelineDP's
accountant must give exactly the spend constructed, dp_ops.pipeline_dp_engine). The run's total is the
PLD composition of what was registered, so a stage that did not register would release without being
counted: the jobs refuse to run a pipeline holding one (`unregistered_dp_stages`).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor

from core.spend import MechanismSpend
from dp_ops.run_budget import RunBudget


class DPStage(beam.PTransform):
    def __init__(self, budget: RunBudget | None):
        super().__init__()
        self._budget = budget
        self.spend: MechanismSpend | None = None
        self.registered = False

    def _spends(self, spend: MechanismSpend) -> None:
        """Records the stage's spend and registers it with the run's budget (if it was given one);
        at most once."""
        if self.registered:
            raise RuntimeError(f"{spend.stage}: a DP stage is applied once; construct another to release again")
        self.spend = spend
        if self._budget is not None:
            self.spend = self._budget.register(spend)
            self.registered = True


class _DPStageFinder(PipelineVisitor):
    def __init__(self):
        self.stages: list[tuple[str, DPStage]] = []

    def enter_composite_transform(self, node):
        self.visit_transform(node)

    def visit_transform(self, node):
        if isinstance(node.transform, DPStage):
            self.stages.append((node.full_label, node.transform))


def unregistered_dp_stages(pipeline: beam.Pipeline) -> list[str]:
    """The labels of the DP stages in `pipeline` that registered no spend with a run budget."""
    finder = _DPStageFinder()
    pipeline.visit(finder)
    return [label for label, stage in finder.stages if not stage.registered]


def require_registered_dp_stages(pipeline: beam.Pipeline) -> None:
    """Raises RuntimeError, before anything runs, if a DP stage of `pipeline` registered no spend:
    its release would be missing from the run's privacy total."""
    missing = unregistered_dp_stages(pipeline)
    if missing:
        raise RuntimeError(f"DP stage(s) not registered with the run's privacy budget: {', '.join(missing)}; "
                           f"their spend would be missing from the reported total")
