"""The job's calibration requests for a command line (beam_jobs.topic_plan.stage_requests): what the job
calibrates for these flags, read through the job's own params, never a hand-built copy of them."""

from __future__ import annotations

from beam_jobs.topic_plan import stage_requests
from config.insights import InsightsOptions, insights_params
from dp_ops.joint_calibration import StageRequest

# Only the topic stages, unless a test's flags turn the release stages on.
TOPICS_ONLY = ("--themes", "false", "--facets", "none")


def job_requests(*flags: str) -> list[StageRequest]:
    """The requests for the job's defaults changed by `flags` (TOPICS_ONLY first, so a later flag wins)."""
    return stage_requests(insights_params(InsightsOptions(["--input", "x", "--output", "out", *TOPICS_ONLY, *flags])))
