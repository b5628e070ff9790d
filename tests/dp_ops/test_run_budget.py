"""One privacy budget per run: every DP stage's event composed with PLD (dp_ops.run_budget), and the
stages' noise calibrated jointly to one total (dp_ops.joint_calibration)."""

import math

import dp_accounting
import numpy as np
import pipeline_dp
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import common, pld_privacy_accountant, privacy_loss_distribution

from core.spend import MechanismSpend
from dp_ops import dp_kmeans as km
from dp_ops.dp_counts import DPCountParams, noise_for_budget, spend_from_accountant
from dp_ops.dp_events import EpsilonDeltaDpEvent, composed_epsilon, event_from_json, event_to_json, merged
from dp_ops.joint_calibration import (
    StageRequest,
    calibrate_jointly,
    calibrate_separately,
    clustering_request,
    count_request,
)
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.partition_selection import spend_from_accountant as selection_spend
from dp_ops.run_budget import RunBudget, spend_event
from dp_ops.tfidf import DocumentFrequencyParams
from publishing.report import privacy_section
from transforms.dp_cluster_sizes import cluster_size_params
from transforms.keyword_histograms import keyword_count_params

C, KEYWORD_PARTITIONS = 5, 10
DEFAULT_REQUESTS = [clustering_request(4, 3), count_request("cluster_sizes", 1, "laplace", l0=1, linf=C),
                    count_request("keyword_histograms", 2, "gaussian", l0=KEYWORD_PARTITIONS)]


def _pipeline_dp(params, aggregate):
    """Runs one PipelineDP aggregation on its LocalBackend; returns (output, accountant after compute_budgets)."""
    accountant = params.budget_accountant()
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda pair: pair[0],
                                            partition_extractor=lambda pair: pair[1], value_extractor=lambda pair: 0)
    output = aggregate(engine, extractors)
    accountant.compute_budgets()
    return dict(output), accountant


def _count_spend(params: DPCountParams, partitions=(0, 1)):
    counts, accountant = _pipeline_dp(params, lambda engine, extractors: engine.aggregate(
        [("u1", partitions[0]), ("u2", partitions[-1])], params.aggregate_params(), extractors,
        public_partitions=list(partitions)))
    return counts, spend_from_accountant(params, accountant, "test")


def _selection_spend(params: TermSelectionParams):
    pairs = [(f"u{i}", "python") for i in range(50)]
    _, accountant = _pipeline_dp(params, lambda engine, extractors: engine.aggregate(
        pairs, params.count_params(), extractors))
    return selection_spend(params, accountant, "test")


def _nightly_spends():
    """The spends the job's stages report, from the real dp_ops code and PipelineDP, at today's defaults."""
    kmeans = km.DPKMeansParams(num_clusters=3, epsilon=4.0, delta=5e-7, input_dim=8)
    _, sizes = _count_spend(cluster_size_params(1.0, C))
    _, histogram = _count_spend(keyword_count_params(2.0, 5e-7, "gaussian", KEYWORD_PARTITIONS))
    return [km.calibrate(kmeans).spend(kmeans), sizes, histogram]


def _keyword_set_spends():
    frequencies = DocumentFrequencyParams(noise_multiplier=10.0, delta=5e-7, terms_per_user=16)
    selection = TermSelectionParams(stage="keyword_set", epsilon=0.5, delta=1e-6, max_partitions_per_user=25,
                                    with_counts=True)
    return [frequencies.spend(), _selection_spend(selection)]


# --- Independent recomputation: the serialised events, read without dp_ops, composed by dp-accounting ---

def _library_event(data: dict):
    """A serialised event as dp-accounting's own classes (EpsilonDelta has none: see _independent_pld)."""
    kind = data["type"]
    if kind == "SelfComposedDpEvent":
        return dp_accounting.SelfComposedDpEvent(_library_event(data["event"]), data["count"])
    if kind == "ComposedDpEvent":
        return dp_accounting.ComposedDpEvent([_library_event(e) for e in data["events"]])
    if kind == "GaussianDpEvent":
        return dp_accounting.GaussianDpEvent(data["noise_multiplier"])
    if kind == "LaplaceDpEvent":
        return dp_accounting.LaplaceDpEvent(data["noise_multiplier"])
    if kind == "DiscreteLaplaceDpEvent":
        return dp_event.DiscreteLaplaceDpEvent(data["noise_parameter"], data["sensitivity"])
    raise KeyError(kind)


def _independent_plds(data: dict, count: int = 1):
    """PLDs of a serialised event built directly from dp-accounting's PLD constructors."""
    interval = 1e-3
    kind = data["type"]
    if kind == "SelfComposedDpEvent":
        return _independent_plds(data["event"], count * data["count"])
    if kind == "ComposedDpEvent":
        return [pld for e in data["events"] for pld in _independent_plds(e, count)]
    if kind == "EpsilonDeltaDpEvent":
        pld = privacy_loss_distribution.from_privacy_parameters(
            common.DifferentialPrivacyParameters(data["epsilon"], data["delta"]), value_discretization_interval=interval)
    elif kind == "GaussianDpEvent":
        pld = privacy_loss_distribution.from_gaussian_mechanism(data["noise_multiplier"],
                                                                value_discretization_interval=interval)
    elif kind == "LaplaceDpEvent":
        pld = privacy_loss_distribution.from_laplace_mechanism(data["noise_multiplier"],
                                                               value_discretization_interval=interval)
    else:
        pld = privacy_loss_distribution.from_discrete_laplace_mechanism(
            data["noise_parameter"], sensitivity=data["sensitivity"], value_discretization_interval=interval)
    return [pld] * count


def test_the_runs_total_is_the_pld_composition_of_its_registered_events():
    budget = RunBudget.of(_nightly_spends(), 1e-6)
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for entry in budget.entries:
        accountant.compose(_library_event(entry.event))
    assert budget.epsilon() == pytest.approx(accountant.get_epsilon(1e-6), abs=2e-3)
    assert budget.epsilon() < sum(entry.epsilon for entry in budget.entries) - 1.5


def test_a_run_with_a_dp_keyword_set_composes_its_events_too():
    nightly, keyword_set = _nightly_spends(), _keyword_set_spends()
    budget = RunBudget.of(keyword_set + nightly, 1e-6 + 1e-6)
    plds = [pld for entry in budget.entries for pld in _independent_plds(entry.event)]
    composed = plds[0]
    for pld in plds[1:]:
        composed = composed.compose(pld)
    assert budget.epsilon() == pytest.approx(composed.get_epsilon_for_delta(2e-6), abs=5e-3)
    assert budget.delta_floor() == pytest.approx(keyword_set[1].delta)
    assert budget.epsilon() < sum(spend.epsilon for spend in keyword_set + nightly)
    with pytest.raises(ValueError, match="does not cover"):
        RunBudget.of(keyword_set + nightly, 1e-6).epsilon()


def test_every_mechanism_spend_carries_the_event_of_the_noise_it_draws():
    kmeans, sizes, histogram = _nightly_spends()
    frequencies, selection = _keyword_set_spends()
    assert kmeans.event == event_to_json(dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(kmeans.noise["sigma"]), 4))
    assert sizes.event == {"type": "LaplaceDpEvent", "noise_multiplier": pytest.approx(sizes.noise["scale"] / C)}
    assert histogram.event == {"type": "GaussianDpEvent",
                               "noise_multiplier": pytest.approx(histogram.noise["sigma"] / math.sqrt(10))}
    assert frequencies.event == {"type": "GaussianDpEvent",
                                 "noise_multiplier": pytest.approx(frequencies.noise["sigma"] / math.sqrt(17))}
    # Thresholding as the (epsilon, delta) PipelineDP gave it, the user counts as their Laplace noise:
    # together the stage's budget.
    parts = {part["type"]: part for part in selection.event["events"]}
    assert sorted(parts) == ["EpsilonDeltaDpEvent", "LaplaceDpEvent"]
    assert parts["EpsilonDeltaDpEvent"]["delta"] == 1e-6
    assert parts["EpsilonDeltaDpEvent"]["epsilon"] + 1 / parts["LaplaceDpEvent"]["noise_multiplier"] == (
        pytest.approx(0.5))


def test_a_stage_keeps_its_own_accounted_figure():
    kmeans, sizes, histogram = _nightly_spends()
    assert kmeans.epsilon == composed_epsilon([spend_event(kmeans)], kmeans.delta) and kmeans.epsilon <= 4.0
    assert (sizes.epsilon, sizes.delta) == (pytest.approx(1.0), 0.0)
    assert composed_epsilon([spend_event(histogram)], histogram.delta) == pytest.approx(histogram.epsilon, abs=2e-3)


def test_todays_default_noise_composes_to_5_35_not_7():
    separate = calibrate_separately(DEFAULT_REQUESTS, {"clustering": (4.0, 5e-7), "cluster_sizes": (1.0, 0.0),
                                                       "keyword_histograms": (2.0, 5e-7)})
    assert separate["clustering"].noise_multiplier == pytest.approx(2.451, abs=1e-3)
    assert separate["cluster_sizes"].noise_std_parameter == pytest.approx(C)
    assert separate["keyword_histograms"].noise_std_parameter == pytest.approx(7.27, abs=5e-3)
    assert composed_epsilon([s.event() for s in separate.values()], 1e-6) == pytest.approx(5.35, abs=0.01)
    # The same figure from what the job's stages report.
    assert RunBudget.of(_nightly_spends(), 1e-6).epsilon() == pytest.approx(5.35, abs=0.01)


def _recomputed(calibration) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for stage in calibration.stages.values():
        accountant.compose(_library_event(event_to_json(stage.event())))
    return accountant.get_epsilon(calibration.delta)


@pytest.mark.parametrize("total,delta,requests", [
    (7.0, 1e-6, DEFAULT_REQUESTS),
    (1.0, 1e-6, DEFAULT_REQUESTS),
    (15.0, 1e-5, DEFAULT_REQUESTS),
    (3.0, 1e-7, [clustering_request(1, 5), count_request("cluster_sizes", 10, "laplace", l0=1, linf=3),
                 count_request("keyword_histograms", 1, "gaussian", l0=25)]),
    # Centroid keywords: no histogram stage; Laplace keyword noise.
    (5.0, 1e-6, DEFAULT_REQUESTS[:2]),
    (7.0, 1e-6, [*DEFAULT_REQUESTS[:2], count_request("keyword_histograms", 2, "laplace", l0=KEYWORD_PARTITIONS)]),
])
def test_joint_calibration_spends_at_most_the_total_and_nearly_all_of_it(total, delta, requests):
    calibration = calibrate_jointly(total, delta, requests)
    spent = _recomputed(calibration)
    assert calibration.epsilon_spent <= total
    assert total * 0.995 <= spent <= total + 2e-3  # a finer accountant may differ by its discretisation
    weights = {r.stage: r.weight for r in requests}
    for stage in calibration.stages.values():  # one scale factor on every stage's weighted reference noise
        assert stage.noise_multiplier >= 0.999 * calibration.noise_scale * _reference(stage.request, total, delta, weights)


def _reference(request, total, delta, weights):
    from dp_ops.joint_calibration import reference_noise_multiplier
    return reference_noise_multiplier(request, total * request.weight / sum(weights.values()), delta)


def test_joint_calibration_gives_every_stage_less_noise_than_todays_at_the_same_total():
    separate = calibrate_separately(DEFAULT_REQUESTS, {"clustering": (4.0, 5e-7), "cluster_sizes": (1.0, 0.0),
                                                       "keyword_histograms": (2.0, 5e-7)})
    joint = calibrate_jointly(7.0, 1e-6, DEFAULT_REQUESTS)
    for stage, old in separate.items():
        assert joint.stages[stage].noise_std_parameter < 0.82 * old.noise_std_parameter


def test_pipeline_dp_draws_exactly_the_jointly_calibrated_noise():
    joint = calibrate_jointly(7.0, 1e-6, DEFAULT_REQUESTS)
    sizes, histogram = joint.stages["cluster_sizes"], joint.stages["keyword_histograms"]
    size_params = DPCountParams(stage="cluster_sizes", epsilon=sizes.pipeline_dp_budget[0], noise="laplace",
                                max_contributions=C)
    histogram_params = DPCountParams(stage="keyword_histograms", epsilon=histogram.pipeline_dp_budget[0],
                                     delta=histogram.pipeline_dp_budget[1], noise="gaussian",
                                     max_partitions_contributed=KEYWORD_PARTITIONS, max_contributions_per_partition=1)
    for stage, params in ((sizes, size_params), (histogram, histogram_params)):
        assert params.sensitivity() == pytest.approx(stage.request.sensitivity)
        counts, spend = _count_spend(params, partitions=tuple(range(20000)))
        # The event PipelineDP's own accountant and mechanism give is the calibrated one...
        assert event_from_json(spend.event) == stage.event()
        assert noise_for_budget(stage.request.noise, *stage.pipeline_dp_budget, stage.request.sensitivity) == (
            pytest.approx(stage.noise_std_parameter, rel=1e-12))
        # ...and the counts it releases have that noise (partitions 1..19998 hold no data).
        noise = np.array([counts[p] for p in range(1, 19999)])
        std = stage.noise_std_parameter * (math.sqrt(2) if stage.request.noise == "laplace" else 1)
        assert noise.std() == pytest.approx(std, rel=0.05)


def test_the_clustering_stage_uses_a_given_noise_multiplier_as_is():
    joint = calibrate_jointly(7.0, 1e-6, DEFAULT_REQUESTS)
    z = joint.stages["clustering"].noise_multiplier
    params = km.DPKMeansParams(num_clusters=3, epsilon=None, delta=1e-6, input_dim=8, noise_multiplier=z)
    calibration = km.calibrate(params)
    assert calibration.sigma == z and calibration.event() == joint.stages["clustering"].event()
    assert calibration.spend(params).epsilon == composed_epsilon([calibration.event()], 1e-6)


def test_a_spend_written_before_events_is_composed_as_its_own_epsilon_delta():
    old = MechanismSpend.from_json({"stage": "keyword_set", "mechanism": "selection", "epsilon": 0.8, "delta": 1e-7,
                                    "sensitivity": 3.0, "noise": {}})
    assert old.event is None and spend_event(old) == EpsilonDeltaDpEvent(0.8, 1e-7)
    registered = RunBudget(1e-6).register(old)
    assert registered.event == {"type": "EpsilonDeltaDpEvent", "epsilon": 0.8, "delta": 1e-7}


def test_the_report_states_the_pld_total_and_lists_every_event():
    budget = RunBudget.of(_nightly_spends(), 1e-6)
    section = privacy_section(list(budget.entries), C, budget.composition())
    assert section["composition"] == "PLD" and section["epsilon"] == budget.epsilon() and section["delta"] == 1e-6
    assert [m["event"] for m in section["mechanisms"]] == [e.event for e in budget.entries]
    with pytest.raises(ValueError, match="event"):
        privacy_section([MechanismSpend("s", "m", 1.0, 0.0, 1.0, {})], C, budget.composition())
    # No made-up total: DP stages without the total their budget composed are refused, not summed.
    with pytest.raises(ValueError, match="composed total"):
        privacy_section(list(budget.entries), C, None)
    assert "epsilon" not in privacy_section([], C, None)  # no DP stage ran (the non-private evaluation)


def test_gaussian_events_fold_into_one_exactly():
    events = [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 4),
              dp_accounting.GaussianDpEvent(1.5), dp_accounting.LaplaceDpEvent(1.0), dp_accounting.LaplaceDpEvent(1.0)]
    folded = merged(events)
    assert folded == [dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1.0), 2),
                      dp_accounting.GaussianDpEvent((4 / 2.0 ** 2 + 1 / 1.5 ** 2) ** -0.5)]
    unfolded = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    for event in events:
        unfolded.compose(event)
    assert composed_epsilon(events, 1e-6) == pytest.approx(unfolded.get_epsilon(1e-6), abs=1e-4)


@pytest.mark.parametrize("data", [
    {"type": "PoissonSampledDpEvent", "sampling_probability": 0.5, "event": {"type": "GaussianDpEvent",
                                                                           "noise_multiplier": 1.0}},
    {"type": "GaussianDpEvent", "noise_multiplier": 0},
    {"type": "GaussianDpEvent", "noise_multiplier": 1.0, "extra": 1},
    {"type": "LaplaceDpEvent", "noise_multiplier": float("nan")},
    {"type": "SelfComposedDpEvent", "count": 0, "event": {"type": "LaplaceDpEvent", "noise_multiplier": 1.0}},
    {"type": "EpsilonDeltaDpEvent", "epsilon": 1.0, "delta": 1.0},
    {"type": "DiscreteLaplaceDpEvent", "noise_parameter": 0.1, "sensitivity": 2.5},
])
def test_an_unknown_or_invalid_event_is_refused(data):
    with pytest.raises(ValueError):
        event_from_json(data)


def test_events_round_trip_through_json():
    event = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 4), dp_accounting.LaplaceDpEvent(0.5),
        dp_event.DiscreteLaplaceDpEvent(0.01, 85), EpsilonDeltaDpEvent(0.5, 1e-6)])
    assert event_from_json(event_to_json(event)) == event


@pytest.mark.parametrize("kwargs", [dict(noise="uniform"), dict(sensitivity=0), dict(weight=0), dict(releases=2)])
def test_bad_stage_requests_fail_at_construction(kwargs):
    with pytest.raises(ValueError):
        StageRequest(**{**dict(stage="s", noise="gaussian", sensitivity=1.0, weight=1.0), **kwargs})


def test_an_epsilon_too_large_to_calibrate_fails_early_and_names_the_flag():
    """Above a share of MAX_GAUSSIAN_STAGE_EPSILON PipelineDP's Gaussian formula overflows (its sigma is
    the smallest float, 0 once squared): the run must be refused with a clear error, not a
    ZeroDivisionError inside the composition (dp_ops.dp_events.merged)."""
    from dp_ops.joint_calibration import MAX_GAUSSIAN_STAGE_EPSILON, user_count_request
    assert pipeline_dp.dp_computations.compute_sigma(800.0, 1e-6, 1.0) < 1e-300  # the overflow guarded against
    requests = [clustering_request(4.0, 5), count_request("cluster_sizes", 1.0, "laplace", l0=1, linf=1),
                user_count_request(0.1)]
    for total in (20000.0, 1e6):
        with pytest.raises(ValueError, match=r"--epsilon.*clustering.*--epsilon_weights"):
            calibrate_jointly(total, 1e-6, requests)
    # The stage's share is what counts: a large weight on a small stage is refused as well.
    assert 20000.0 * 30.0 / 31.0 > MAX_GAUSSIAN_STAGE_EPSILON
    with pytest.raises(ValueError, match="stage user_count"):
        calibrate_jointly(20000.0, 1e-6, [clustering_request(1.0, 5), user_count_request(30.0)])
