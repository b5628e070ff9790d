"""eval/audit/nightly_privacy_modes.py: each mode's per-night noise meets the window cap and is tight, the
keyed sampling and cohorts are deterministic with the right rates, and the script runs end to end."""

from __future__ import annotations

import functools
import math

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant

from dp_ops.dp_events import composed_epsilon
from dp_ops.nightly_plan import plan_nights
from eval import data as eval_data
from eval.audit import nightly_privacy_modes as modes
from tests.support.job_requests import job_requests

CAP, WINDOW_DELTA, WINDOW_DAYS, NIGHT_DELTA = 30.0, 1e-5, 30, 1e-6
C = 5
WINDOW = dict(cap=CAP, window_delta=WINDOW_DELTA, window_days=WINDOW_DAYS, cadence_days=1, night_delta=NIGHT_DELTA)


@functools.lru_cache(maxsize=1)
def _requests():
    return job_requests("--kmeans_iterations", "3", "--max_conversations_per_user", str(C))


@functools.lru_cache(maxsize=8)
def _night(mode: modes.Mode) -> modes.NightCalibration:
    return modes.mode_calibration(mode, _requests(), C, **WINDOW)


def _scaled(event: dp_accounting.DpEvent, factor: float) -> dp_accounting.DpEvent:
    """The same mechanism with every noise multiplier times `factor`."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(_scaled(event.event, factor), event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([_scaled(e, factor) for e in event.events])
    return type(event)(event.noise_multiplier * factor)


def _window_epsilon(night: modes.NightCalibration, factor: float = 1.0) -> float:
    """The window's epsilon of the night's noise times `factor`, accounted as the mode says."""
    events = [_scaled(e, factor) for e in night.calibration.events()]
    if night.mode.kind == "sampled":
        return modes.window_epsilon_of(modes.sampled_window_event(events, night.mode.q, night.nights_counted),
                                       WINDOW_DELTA)
    return composed_epsilon(events * night.nights_counted, WINDOW_DELTA)


@pytest.mark.parametrize("mode", [modes.Mode("plain"), modes.Mode("sampled", q=0.1), modes.Mode("sampled", q=0.5),
                                  modes.Mode("cohorts", cohorts=3), modes.Mode("cohorts", cohorts=7)],
                         ids=lambda m: m.name)
@pytest.mark.e2e
def test_calibrated_noise_meets_the_cap_and_one_percent_less_exceeds_it(mode):
    night = _night(mode)
    assert night.window_epsilon <= CAP
    assert _window_epsilon(night) == pytest.approx(night.window_epsilon)
    assert _window_epsilon(night) <= CAP
    assert _window_epsilon(night, 0.99) > CAP


@pytest.mark.e2e
def test_sampled_window_checked_with_the_library_accountant_from_the_stage_multipliers():
    # Independent of merged() and of the project's accountant: the night's Gaussians by hand, composed
    # by dp-accounting's own PLD accountant at its finer default discretisation.
    night = _night(modes.Mode("sampled", q=0.25))
    stages = night.calibration.stages.values()
    assert {s.request.noise for s in stages} == {"gaussian"}
    assert night.calibration.stages["cluster_sizes"].request.sensitivity == C
    z = sum(s.request.releases / s.noise_multiplier ** 2 for s in stages) ** -0.5
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.PoissonSampledDpEvent(0.25, dp_accounting.GaussianDpEvent(z)), WINDOW_DAYS)
    assert accountant.get_epsilon(WINDOW_DELTA) <= CAP
    assert accountant.get_epsilon(WINDOW_DELTA) == pytest.approx(CAP, rel=0.01)


@pytest.mark.e2e
def test_amplification_lets_a_sampled_night_spend_more_but_never_more_signal_per_unit_of_noise():
    plain, sampled = _night(modes.Mode("sampled", q=1)), _night(modes.Mode("sampled", q=0.25))
    assert sampled.night_epsilon > plain.night_epsilon
    z_plain = plain.calibration.stages["clustering"].noise_multiplier
    z_sampled = sampled.calibration.stages["clustering"].noise_multiplier
    assert z_sampled < z_plain  # less noise on the sample ...
    assert z_sampled / 0.25 > z_plain  # ... but not q times less: per user of the whole night, more


def test_sampling_every_user_is_the_plain_plan_with_gaussian_sizes():
    night = _night(modes.Mode("sampled", q=1))
    plan = plan_nights(modes.sampled_requests(_requests(), C), max_epsilon_per_window=CAP,
                       window_delta=WINDOW_DELTA, window_days=WINDOW_DAYS, night_delta=NIGHT_DELTA)
    # The same window: the night's Gaussians compose to the same one Gaussian. (Stage by stage they
    # differ by ~1%: the split is taken at a different epsilon, and PipelineDP rounds the sizes' sigma.)
    z = modes.night_gaussian(night.calibration.events()).noise_multiplier
    assert z == pytest.approx(modes.night_gaussian(plan.calibration.events()).noise_multiplier, rel=0.002)


def test_cohorts_count_ceil_n_over_m_nights_of_the_plain_plan():
    for m in (2, 7):
        night = _night(modes.Mode("cohorts", cohorts=m))
        assert night.nights_counted == math.ceil(WINDOW_DAYS / m)
        assert composed_epsilon(night.calibration.events() * night.nights_counted, WINDOW_DELTA) <= CAP
    assert (_night(modes.Mode("cohorts", cohorts=7)).calibration.stages["clustering"].noise_multiplier
            < _night(modes.Mode("plain")).calibration.stages["clustering"].noise_multiplier)


def test_a_sampled_night_must_be_one_gaussian():
    gaussian = dp_accounting.GaussianDpEvent(2.0)
    assert modes.night_gaussian([gaussian, dp_accounting.SelfComposedDpEvent(gaussian, 3)]).noise_multiplier == (
        pytest.approx(1.0))
    with pytest.raises(ValueError, match="under-count"):
        modes.night_gaussian([gaussian, dp_accounting.LaplaceDpEvent(1.0)])
    with pytest.raises(ValueError, match="all Gaussian"):
        modes.sampled_night_calibration(_requests(), q=0.5, **WINDOW)  # the job's Laplace sizes


USERS = [f"user-{i:06d}" for i in range(20000)]


def test_poisson_sample_is_keyed_deterministic_and_at_rate_q():
    q = 0.25
    night = {u for u in USERS if modes.in_sample(11, u, q)}
    assert night == {u for u in USERS if modes.in_sample(11, u, q)}
    sd = math.sqrt(len(USERS) * q * (1 - q))
    assert abs(len(night) - q * len(USERS)) < 5 * sd
    # another night's key: an independent sample (overlap ~ q^2), not the same users again
    other = {u for u in USERS if modes.in_sample(12, u, q)}
    overlap_sd = math.sqrt(len(USERS) * q * q * (1 - q * q))
    assert abs(len(night & other) - q * q * len(USERS)) < 5 * overlap_sd
    assert modes.Mode("sampled", q=q).night_users(USERS, 11) == night


def test_cohorts_are_keyed_deterministic_and_uniform():
    m = 7
    cohorts = [modes.cohort_of(3, u, m) for u in USERS]
    assert cohorts == [modes.cohort_of(3, u, m) for u in USERS]
    counts = [cohorts.count(c) for c in range(m)]
    sd = math.sqrt(len(USERS) / m * (1 - 1 / m))
    assert all(abs(n - len(USERS) / m) < 5 * sd for n in counts), counts
    assert modes.Mode("cohorts", cohorts=m).night_users(USERS, 3) == {u for u, c in zip(USERS, cohorts) if c == 0}
    assert [modes.cohort_of(4, u, m) for u in USERS] != cohorts  # another key, another partition


def test_scales_are_nested_keyed_subsets():
    small, large = modes.scale_users(USERS, 100), modes.scale_users(USERS, 1000)
    assert len(small) == 100 and len(large) == 1000 and small < large
    assert modes.scale_users(USERS[:50], 100) == set(USERS[:50])


@pytest.mark.e2e
def test_main_runs_end_to_end_on_tiny_generated_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(modes, "embed_cached", functools.partial(eval_data.embed_cached, cache_dir=None))
    modes.main(["--generate", "500,300,3", "--scales", "60,150", "--seeds", "1", "--sampling_rates", "0.5",
                "--cohorts", "2", "--num_clusters", "6", "--window_days", "4", "--max_epsilon_per_window", "10",
                "--set", "min_cluster_size=5", "--output", str(tmp_path)])
    out = capsys.readouterr().out
    for name in ("plain", "sampled q=0.5", "cohorts m=2"):
        assert f"| {name} |" in out
    assert "| 150 | plain | 150 |" in out
    rows = (tmp_path / "nightly_modes.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 * 2  # header, 3 modes x 2 scales x 1 seed
    assert (tmp_path / "nightly_modes.md").exists()


@pytest.mark.e2e
def test_run_urania_draws_the_given_calibration(tmp_path):
    # run_urania(joint=...) uses the precomputed noise, Gaussian sizes included, and its report's
    # spends carry exactly those events (PipelineDP's sensitivity is C, as the calibration assumed).
    from eval.urania_inprocess import NightContext, UraniaConfig, run_urania
    from synthetic.sample import write_sample
    night = _night(modes.Mode("sampled", q=0.25))
    path = str(tmp_path / "tiny.jsonl")
    write_sample(path, 200, 80, 5)
    dataset = eval_data.load_dataset(path)
    embeddings = eval_data.embed_cached(dataset.facets, cache_dir=None)
    # The audit calibrates the topic stages only, so the config turns the other releases off.
    config = UraniaConfig(num_clusters=4, min_cluster_size=5, delta=NIGHT_DELTA, themes=False, facets="none",
                          centre_decoder=False)
    with pytest.raises(ValueError, match="themes"):
        run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                   UraniaConfig(num_clusters=4, min_cluster_size=5, delta=NIGHT_DELTA), seed=1, noise_seed=1,
                   night=NightContext(joint=night.calibration))
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config, seed=1,
                        noise_seed=1, night=NightContext(joint=night.calibration))
    spent = {m["stage"]: m for m in report["privacy"]["mechanisms"]}
    sizes = night.calibration.stages["cluster_sizes"]
    assert spent["cluster_sizes"]["event"] == {"type": "GaussianDpEvent", "noise_multiplier": pytest.approx(
        sizes.noise_multiplier, rel=1e-9)}
    assert report["privacy"]["epsilon"] == pytest.approx(night.night_epsilon, abs=0.05)
