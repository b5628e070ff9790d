"""The DP stages are declared once (dp_ops/dp_stage_specs.py): a stage added there alone is weighted, shown
in progress and labelled on the report page."""

import io

import dp_accounting
import pytest

from backends.keyword_set import load_keyword_set
from beam_jobs import progress
from beam_jobs.insights import calibrate_night
from config.insights import InsightsOptions, insights_params
from config.privacy import PrivacyParams
from core.progress_stage import ProgressStage
from core.spend import MechanismSpend
from dp_ops import dp_stage_specs
from dp_ops.dp_events import event_to_json
from dp_ops.dp_stage_specs import DPStageSpec
from dp_ops.run_budget import RunBudget
from publishing.report import ReleasePrivacy, build_report
from publishing.report_html import render_report
from transforms import progress as registry

TOY = DPStageSpec(
    "toy_sums", "the toy sums of every topic", 0.5,
    progress=ProgressStage("toy_sums", "DP toy sums", "blocks", "blocks", after="assign_clusters"))


@pytest.fixture
def with_toy_stage(monkeypatch):
    monkeypatch.setattr(dp_stage_specs, "DP_STAGE_SPECS", dp_stage_specs.DP_STAGE_SPECS + (TOY,))


def test_the_declared_stages_are_the_jobs(tmp_path):
    specs = dp_stage_specs.calibrated_specs()
    assert [s.name for s in specs] == ["user_count", "clustering", "cluster_sizes", "keyword_histograms", "themes",
                                       "facets", "facet_topics", "token_decoding"]
    assert dp_stage_specs.default_weights() == (
        "clustering:4,cluster_sizes:1,keyword_histograms:2,user_count:0.1,themes:2.5,facets:1,facet_topics:1,token_decoding:1")
    # Every stage the job registers with its budget has a declaration saying what it releases.
    # The defaults release the themes and every facet of the bundled set (three).
    params = insights_params(InsightsOptions(["--input", "x", "--output", str(tmp_path)]))
    requests = calibrate_night(params, load_keyword_set()).calibration.stages.values()
    requested = [r.stage for r in requests]
    assert requested == ["user_count", "clustering", "cluster_sizes", "keyword_histograms", "themes", "facets",
                         "facet_topics"]
    assert [r.request.releases for r in requests][-2:] == [3, 3]
    topics_only = ["--themes", "false", "--facets", "none"]
    params = insights_params(InsightsOptions(["--input", "x", "--output", str(tmp_path), *topics_only]))
    assert [r.stage for r in calibrate_night(params, load_keyword_set()).calibration.stages.values()] == [
        "user_count", "clustering", "cluster_sizes", "keyword_histograms"]
    params = insights_params(InsightsOptions(["--input", "x", "--output", str(tmp_path), "--facets", "language,concern"]))
    requests = calibrate_night(params, load_keyword_set()).calibration.stages.values()
    assert [(r.stage, r.request.releases) for r in requests][-2:] == [("facets", 2), ("facet_topics", 2)]
    params = insights_params(InsightsOptions(["--input", "x", "--output", str(tmp_path), "--token_decoding_steps", "3"]))
    decoding = calibrate_night(params, load_keyword_set()).calibration.stages["token_decoding"].request
    assert (decoding.releases, decoding.sensitivity) == (3, 2 * 40.0 / 8)  # T steps of 2C/n, the defaults' C and n
    assert set(requested) | {r.stage for r in requests} | {"keyword_set", "token_decoding"} == set(
        dp_stage_specs.stage_releases())
    keys = [stage.key for stage in progress.stages()]
    assert keys.index("embed") < keys.index("user_count") < keys.index("dp_kmeans") < keys.index("assign_clusters")


def test_a_stage_declared_once_is_weighted_shown_and_labelled(with_toy_stage):
    # Weighted: --epsilon_weights knows it, its default weight is in the default, leaving it out is refused.
    assert dp_stage_specs.default_weights().endswith(
        "keyword_histograms:2,toy_sums:0.5,user_count:0.1,themes:2.5,facets:1,facet_topics:1,token_decoding:1")
    with pytest.raises(ValueError, match="give a weight for toy_sums"):
        PrivacyParams(epsilon_weights="clustering:4,cluster_sizes:1,keyword_histograms:2")

    # Shown in progress: its line comes after the stage it follows, and shows when its counter moves.
    keys = [stage.key for stage in progress.stages()]
    assert keys.index("toy_sums") == keys.index("assign_clusters") + 1
    clock = iter(range(0, 10_000, 5))
    reporter = progress.ProgressReporter(5, 4, 3, interval=3600, stream=io.StringIO(), clock=lambda: next(clock))
    reporter.start()
    try:
        for user in ("u1", "u2", "u3"):
            registry.note_valid_record(user)
        registry.advance("toy_sums", 1, 0.5)
        assert reporter.line().startswith("DP toy sums: 1/1 blocks (100%)")
    finally:
        reporter.stop()

    # Labelled on the page: the report says what it released. (Its calibration, spend, transform and sections:
    # tests/transforms/test_release_stage.py, which adds a whole stage.)
    spend = MechanismSpend("toy_sums", "Gaussian", 0.5, 0.0, 1.0, {"sigma": 3.0},
                           event_to_json(dp_accounting.GaussianDpEvent(3.0)))
    budget = RunBudget.of([spend], 1e-6)
    report = build_report({}, {}, ReleasePrivacy(list(budget.entries), 5, budget.composition(),
                                                 dp_stage_specs.stage_releases()), {})
    toy_entry = report["privacy"]["mechanisms"][-1]
    assert toy_entry["stage"] == "toy_sums" and toy_entry["releases"] == "the toy sums of every topic"
    assert "the toy sums of every topic" in render_report(report)


def test_the_page_says_what_each_stage_released_and_falls_back_to_the_name_for_older_reports():
    spend = MechanismSpend("user_count", "Gaussian", 0.1, 0.0, 1.0, {"sigma": 30.0},
                           event_to_json(dp_accounting.GaussianDpEvent(30.0)))
    composition = RunBudget.of([spend], 1e-6).composition()
    page = render_report(build_report({}, {}, ReleasePrivacy([spend], 5, composition, dp_stage_specs.stage_releases()), {}))
    assert "the number of users (it chooses the clustering dimension)" in page
    old = build_report({}, {}, ReleasePrivacy([spend], 5, composition), {})
    assert "releases" not in old["privacy"]["mechanisms"][0] and "user_count" in render_report(old)
