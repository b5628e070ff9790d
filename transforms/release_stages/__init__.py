"""The release stages (transforms/release_stage.py): every module of this package declares one, as `STAGE`.

`registered()` finds them, so adding a module here is how a stage joins the run: nothing else lists them.
They are returned in pipeline order, the order of their DP stages' declarations (dp_ops/dp_stage_specs.py).
"""

from __future__ import annotations

import importlib
import pkgutil

from dp_ops import dp_stage_specs


def registered() -> tuple:
    """Every module's STAGE (a transforms.release_stage.ReleaseStage), in pipeline order. Read at call time,
    from this package's path, so a stage module placed on it (a deployment's, a test's) is found too."""
    stages = [importlib.import_module(f"{__name__}.{module.name}").STAGE
              for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_")]
    order = [spec.name for spec in dp_stage_specs.DP_STAGE_SPECS]
    unknown = sorted(name for stage in stages for name in stage.dp_stages if name not in order)
    if unknown:
        raise ValueError(f"release stages draw noise for undeclared DP stages {unknown}: declare them in "
                         f"dp_ops/dp_stage_specs.py")
    return tuple(sorted(stages, key=lambda stage: order.index(stage.dp_stages[0])))


def enabled(plan) -> tuple:
    """The registered stages the run of `plan` has, in pipeline order."""
    return tuple(stage for stage in registered() if stage.enabled(plan))
