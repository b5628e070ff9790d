"""eval/utility/trend_mechanisms.py: the tree and sparse-vector releases against the plain per-night
histogram, at the production window cap (issue 40, item 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from eval.utility import trend_mechanisms as tm
from publishing.theme_timeline import PRIOR_WEEKS, WEEK, weekly_status
from publishing.timeline import BASELINE_NIGHTS, EMERGING_NIGHTS, night_status


@pytest.fixture(scope="module")
def plan():
    return tm.production_plan()


def test_the_plain_sigma_is_the_production_plans_themes_sigma(plan):
    # The nightly command at its defaults: 30 nights at cap 30, delta 1e-5, the themes at their default weight
    # 2.5 beside the facets' two stages at 1 each (2.87 without the facets; docs/privacy.md#one-budget-for-every-release).
    assert tm.themes_sigma(plan) == pytest.approx(2.96, abs=0.01)
    assert plan.window_epsilon <= tm.CAP


def test_a_tree_window_is_charged_for_a_user_on_every_night():
    c, avail = tm.factorisation("tree")
    # 30 leaves, 15 pairs (4 each), 7 quads and a pair (16 x 7 + 4), ..., and the root (900): a node of
    # 2^l nights carries 2^l of an every-night user, so the window costs sqrt(1786), not sqrt(levels).
    assert tm.window_sensitivity(c, avail) == pytest.approx(math.sqrt(30 + 60 + 116 + 228 + 452 + 900))
    identity, released = tm.factorisation("identity")
    assert tm.window_sensitivity(identity, released) == pytest.approx(math.sqrt(tm.WINDOW_NIGHTS))


def test_the_all_nights_user_is_the_worst_case():
    rng = np.random.default_rng(0)
    for name in tm.FACTORISATIONS:
        c, avail = tm.factorisation(name)
        bound = tm.window_sensitivity(c, avail)
        block = c.shape[1]
        stream = np.kron(np.eye(3), c)  # three blocks, each released on its own nights
        released = np.concatenate([avail + b * block for b in range(3)])
        for _ in range(300):
            # Any user: present on any nights of the stream, adding 0..1 a night (all-in or fractional).
            user = rng.random(3 * block) * (rng.random(3 * block) < rng.random())
            if rng.random() < 0.3:
                user = (user > 0).astype(float)
            start = int(rng.integers(0, 2 * block))
            rows = (released >= start) & (released < start + tm.WINDOW_NIGHTS)
            assert np.linalg.norm(stream[rows] @ user) <= bound + 1e-9


def test_tree_node_noise_and_its_estimates_have_the_stated_spread(plan):
    sigma = tm.themes_sigma(plan)
    online = tm.Online.of("tree")
    node_sigma = tm.node_sigma_of(online, sigma)
    released = tm.factorised_release(np.zeros((4000, 70)), online, node_sigma, np.random.default_rng(1))
    assert released.std() == pytest.approx(node_sigma, rel=0.02)
    views = tm.contrasts()
    for night in (44, 59, 69):  # mid-block, a block's last night, a block's first nights in the span
        estimates, covariance = online.estimates(released, night)
        tail = estimates[:, -tm.SPAN:]
        stated = covariance[-tm.SPAN:, -tm.SPAN:] * node_sigma ** 2
        for key in ("tonight", "weekly"):
            d = views[key]
            assert (tail @ d).std() == pytest.approx(math.sqrt(d @ stated @ d), rel=0.05)


def test_each_release_spends_at_most_the_cap(plan):
    svt = [tm.SVTSettings.of(plan, n) for n in (1, 3)]
    spent = tm.accounting(plan, svt)
    assert set(spent) == {"plain", "tree", "svt x1", "svt x3"}
    assert all(value <= tm.CAP for value in spent.values()), spent
    # The tree's window is one Gaussian of the plain window's multiplier: the same composition exactly.
    assert spent["tree"] == pytest.approx(spent["plain"], abs=1e-6)
    assert spent["plain"] == pytest.approx(plan.window_epsilon, abs=1e-6)
    # More instances a window: less epsilon each (and no slack left to speak of).
    assert svt[0].epsilon > svt[1].epsilon > 0 and min(spent.values()) > tm.CAP - 0.05  # the plan's grid: 29.976 of 30


def test_the_weekly_margins_sensitivity_bounds_any_users_effect_and_is_reached():
    delta = tm.svt_sensitivity()
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(2000):
        user = rng.random(tm.SPAN) * (rng.random(tm.SPAN) < rng.random())
        counts = user + rng.poisson(rng.choice([0.0, 1.0, 5.0, 60.0]), tm.SPAN)
        with_user, without = (tm.svt_margin(x[None, :], tm.SPAN - 1)[0] for x in (counts, counts - user))
        worst = max(worst, abs(with_user - without))
    assert worst <= delta
    # Tight: the only user of the prior weeks, absent this week, moves the margin by exactly Delta.
    alone = np.r_[np.ones(tm.SPAN - WEEK), np.zeros(WEEK)]
    assert abs(tm.svt_margin(alone[None, :], tm.SPAN - 1)[0]) == pytest.approx(delta)


def test_the_svt_threshold_gives_the_stated_noise_alert_rate():
    rng = np.random.default_rng(3)
    nu, rho = 4.0, 2.0
    theta = tm.svt_threshold(nu, rho, 0.01)
    draws = rng.laplace(0, nu, 400_000) >= theta + rng.laplace(0, rho, 400_000)
    assert draws.mean() == pytest.approx(0.01, rel=0.05)


def test_svt_windows_hold_at_most_their_instances_and_steady_false_alerts_stay_under_the_bound():
    settings = tm.SVTSettings(instances=2, epsilon=1.0, sensitivity=tm.svt_sensitivity(), rho_scale=2 * 2.27,
                              nu_scale=4 * 2.27, threshold=tm.svt_threshold(4 * 2.27, 2 * 2.27, 0.01))
    rng = np.random.default_rng(4)
    starts = np.full(300, tm.NIGHTS)
    counts = tm.true_counts(rng, 60, tm.SCENARIOS[-1], starts)
    alerts, spans = tm.svt_alerts(counts, settings, rng)
    for run_spans in spans:
        for w in range(tm.NIGHTS):
            assert sum(first <= w + tm.WINDOW_NIGHTS - 1 and last >= w for first, last in run_spans) <= 2
    # A steady night alerts only if its margin is above 0 (natural variation beyond Z) or the noise alone
    # crosses (rate 0.01); 3 binomial standard deviations of slack over the nights counted.
    margins = np.stack([tm.svt_margin(counts, t) for t in range(tm.FIRST_START, tm.NIGHTS)], axis=1)
    bound = 0.01 + float((margins > 0).mean())
    nights = alerts[:, tm.FIRST_START:].size
    assert 0 < alerts[:, tm.FIRST_START:].mean() <= bound + 3 * math.sqrt(bound / nights)


def test_the_rules_on_correlated_estimates_are_the_project_rules_on_independent_nights():
    rng = np.random.default_rng(5)
    variance = 6.29 ** 2
    for _ in range(300):
        level = rng.choice([5.0, 30.0, 200.0])
        sizes = list(rng.normal(level, math.sqrt(level + variance), tm.SPAN) + rng.choice([0, 5, 20]) * (
            np.arange(tm.SPAN) >= tm.SPAN - WEEK))
        week, prior = np.mean(sizes[-WEEK:]), np.mean(sizes[:-WEEK])
        assert tm._weekly_flag(week, prior, variance * (1 / WEEK + 1 / (WEEK * PRIOR_WEEKS))) == weekly_status(
            [(s, variance) for s in sizes])
        history = [(s, variance) for s in sizes[-BASELINE_NIGHTS - 1:-1]]
        previous = np.mean(sizes[-BASELINE_NIGHTS - 1:-1])
        assert tm._nightly_flag(sizes[-1], previous, variance * (1 + 1 / BASELINE_NIGHTS)) == night_status(
            sizes[-1], variance, history, EMERGING_NIGHTS)


def test_the_script_runs_on_a_tiny_configuration_from_its_simulation(tmp_path, capsys):
    out = tmp_path / "figures.json"
    figures = tm.main(["--runs", "16", "--bases", "200", "--svt_instances", "1", "--seed", "3", "--json", str(out)])
    printed = capsys.readouterr().out
    assert json.loads(out.read_text())["runs"] == 16
    rows = {row["release"]: row for row in figures["rows"]}
    assert set(rows) == {"plain", "tree", "svt x1"}
    for line in tm.format_table(figures["rows"]):
        assert line in printed
    # The figures are the simulation's: a steep ramp is flagged no later than a slow one, every release
    # flags the steep ramp of a large theme within the horizon, and another seed gives other waits.
    for row in rows.values():
        assert row["rise 15%/night"]["median"] <= row["rise 5%/night"]["median"]
        assert row["rise 15%/night"]["flagged"] > 0.5
    again = tm.simulate([200.0], 16, 4, [], figures["sigma"])
    assert [r["rise 5%/night"] for r in again] != [rows[r["release"]]["rise 5%/night"] for r in again]
