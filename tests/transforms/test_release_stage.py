"""A new DP stage beside the topics is 4 files, and from them alone it reaches every consumer.

The toy stage (tests/support/toy_stage/) releases each kept topic's noisy user count. Its 4 files:
- its declaration: TOY_SPEC, added to dp_ops/dp_stage_specs.DP_STAGE_SPECS here (standing for a line there);
- its mechanism: tests/support/toy_stage/toy_mechanism.py (standing for a new module of dp_ops/);
- its stage module: tests/support/toy_stage/release/toy_sums.py, its transform and its ReleaseStage, put on
  transforms/release_stages/'s path here (standing for a new module there);
- its flag: --toy_sums, a field of the keywords group (standing for an edit of config/keywords.py).
Nothing else names it, yet the job on Beam calibrates it, runs it, counts its spend in the PLD total and
writes its section and topic field into report.json and onto the page; and the in-process run, on the
local engine, does the same from the same files.
"""

from __future__ import annotations

import dataclasses
import json
import os

import apache_beam as beam
import pytest

from beam_jobs.insights import build_pipeline
from beam_jobs.topic_plan import stage_requests
from config.insights import InsightsOptions, InsightsParams, insights_params
from config.keywords import KeywordParams
from core.params import flag, params_group
from core.run_context import make_run_context
from dp_ops import dp_stage_specs
from dp_ops.dp_events import composed_epsilon, event_from_json
from dp_ops.dp_stage_specs import DPStageSpec
from eval.data import embed_cached, load_dataset
from eval.urania_inprocess import config_class, run_urania
from synthetic.sample import write_sample
from tests.support.toy_stage.toy_mechanism import TOY_SUMS
from transforms import release_stages

pytestmark = pytest.mark.e2e  # the job on Beam and the in-process run, each with a joint calibration (PLD)

TOY_SPEC = DPStageSpec(TOY_SUMS, "the users of each kept topic (the toy stage)", 0.5, optional=True)
TOY_FOLDER = os.path.join(os.path.dirname(__file__), os.pardir, "support", "toy_stage", "release")


@params_group
class ToyKeywordParams(KeywordParams):
    """Topic keywords: the keyword set, how keywords are chosen and how many are released."""

    toy_sums: bool = flag(False, "Toy: release each kept topic's noisy user count.", public=True)


@dataclasses.dataclass(frozen=True)
class ToyJob(InsightsParams):
    keywords: ToyKeywordParams


@pytest.fixture
def toy_stage(monkeypatch):
    monkeypatch.setattr(dp_stage_specs, "DP_STAGE_SPECS", dp_stage_specs.DP_STAGE_SPECS + (TOY_SPEC,))
    monkeypatch.setattr(release_stages, "__path__", [*release_stages.__path__, os.path.abspath(TOY_FOLDER)])
    assert TOY_SUMS in [stage.name for stage in release_stages.registered()]


SMALL = ("--num_clusters", "4", "--min_cluster_size", "5", "--themes", "false", "--facets", "none",
         "--centre_decoder", "false", "--epsilon", "6", "--noise_seed", "3")


def _toy_params(tmp_path, toy: bool) -> ToyJob:
    base = insights_params(InsightsOptions(["--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"),
                                            *SMALL]))
    keywords = ToyKeywordParams(**{f.name: getattr(base.keywords, f.name) for f in dataclasses.fields(KeywordParams)},
                                toy_sums=toy)
    groups = {f.name: getattr(base, f.name) for f in dataclasses.fields(InsightsParams)}
    return ToyJob(**{**groups, "keywords": keywords, "run": base.run.with_seed()})


def _check_toy_release(report: dict, epsilon: float) -> None:
    toy = next(m for m in report["privacy"]["mechanisms"] if m["stage"] == TOY_SUMS)
    assert toy["releases"] == TOY_SPEC.releases
    # Its spend is in the PLD total, which still meets the run's epsilon.
    events = [event_from_json(m["event"]) for m in report["privacy"]["mechanisms"]]
    assert report["privacy"]["epsilon"] == pytest.approx(composed_epsilon(events, report["privacy"]["delta"]), rel=1e-6)
    assert epsilon - 0.02 <= report["privacy"]["epsilon"] <= epsilon
    assert report[TOY_SUMS] == {"topics": len(report["topics"])} and report["topics"]
    assert all(isinstance(topic["toy_users"], float) for topic in report["topics"])


def test_a_stage_added_by_its_four_files_reaches_the_job_the_report_the_page_and_the_in_process_run(toy_stage, tmp_path):
    write_sample(str(tmp_path / "in.jsonl"), 240, 100, seed=2)

    # The job on Beam.
    params = _toy_params(tmp_path, toy=True)
    context = make_run_context(params.reading.input, params.run.output, None)
    from backends.embedding import dimension
    pipeline = beam.Pipeline(runner="FnApiRunner")
    build_pipeline(pipeline, params, dimension(params.embedding.encoder), context)
    pipeline.run().wait_until_finish()
    release = context.path("release")
    report = json.loads(open(os.path.join(release, "report.json")).read())
    _check_toy_release(report, 6.0)
    assert report["config"]["toy_sums"] is True  # public: the flag is in the report's config
    page = open(os.path.join(release, "report.html")).read()
    assert 'id="release-toy_sums"' in page and TOY_SPEC.releases in page

    # Off, it is not calibrated (nor run: it has no calibration to run with).
    off = _toy_params(tmp_path, toy=False)
    assert TOY_SUMS not in [r.stage for r in stage_requests(off)]

    # The in-process run (the local engine), from the same declarations.
    data = load_dataset(str(tmp_path / "in.jsonl"))
    config = config_class(ToyJob)(num_clusters=4, min_cluster_size=5, themes=False, facets="none",
                                  centre_decoder=False, epsilon=6.0, toy_sums=True)
    local = run_urania(data.conversation_ids, data.user_ids, data.facets, embed_cached(data.facets, cache_dir=None),
                       config, seed=1, noise_seed=3)
    _check_toy_release(local, 6.0)
