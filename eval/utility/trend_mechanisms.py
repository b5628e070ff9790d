"""Issue 40, item 2: two stronger releases of a theme's trend, measured against the plain per-night
histogram at the same window cap.

    python -m eval.utility.trend_mechanisms --runs 400

A theme of BASE users a night is simulated night after night with the SAME users returning every night
(user-level across nights: one user can be in all 30 nights of a window). True counts are Poisson,
overdispersed by the rules' own DAY_TO_DAY_CV (gamma-Poisson: variance m + (cv m)^2). Three releases,
all at the themes' share of the production window cap (cap 30 over 30 nights at DEFAULT_WINDOW_DELTA,
the nightly command's plan with --themes, `production_plan`):

(a) `plain`: today's. Each night a Gaussian of sigma = the plan's themes sigma (L2 sensitivity 1 a
    night); flags by the project's own rules, run on synthetic reports through publishing.theme_timeline
    (nightly: publishing.timeline.night_status; weekly: weekly_status).
(b) `tree` (and, in the noise table only, other factorisations): a matrix-mechanism release y = C x + z
    per block of WINDOW_NIGHTS nights; C the binary tree of dyadic intervals (Honaker 2015; Kairouz et al.
    2021's DP-FTRL tree), released as each node completes; nights estimated by generalised least squares
    on what has been released so far (the optimal linear post-processing; for the tree it equals
    Honaker's). Sensitivity: C >= 0, and every user adds a non-negative amount <= 1 to a theme each night,
    so the largest change in y is a user present on every night, ||C 1||: a node of 2^l nights carries 2^l
    of that user, not 1 (the DP-FTRL "sqrt(levels)" is for a user in one step per tree). What a ledger
    window charges is every row released on its nights, so the sensitivity is the largest ||C 1|| over
    the rows released in any WINDOW_NIGHTS consecutive nights (`window_sensitivity`). The rows are one
    Gaussian mechanism: with node sigma = s * sigma_plain / sqrt(30) it has the plain window's Gaussian
    privacy exactly (Gaussians compose by adding 1/z^2: dp_ops.dp_events.merged), so the window's PLD
    composition with the other stages is the plan's (checked with dp-accounting, `accounting`). The
    rules are the project's, fed the estimates with the contrast's exact noise variance (their noise
    is correlated across nights: `_weekly_flag`, `_nightly_flag`).
(c) `svt`: sparse-vector alerts. Laplace AboveThreshold (Dwork and Roth 2014, Thm 3.23; Lyu, Su and Li
    2017, Alg. 1: threshold noise Lap(2 Delta / eps), query noise Lap(4 Delta / eps), eps-DP until and
    including its first alert for ANY queries of sensitivity Delta, monotone or not). The query is the
    weekly rule's margin on the true counts, q_t = week mean - prior mean - Z sqrt(natural variance of
    the contrast at the prior mean); one user (present on any nights, adding 0..1 a night) moves the
    two means by a, b in [0, 1] and the margin by at most 1 + Z L, L = sqrt(g(1)) (g's root is concave:
    `svt_sensitivity`). A new instance starts after each alert; an instance is charged eps to every
    window its queries span, and a new one starts only while fewer than `instances` instances touch the
    last WINDOW_NIGHTS nights, so no window holds more than `instances` of them. Their eps is the largest
    whose `instances` pure-eps events (EpsilonDeltaDpEvent(eps, 0), the worst case of any eps-DP
    mechanism) compose with the other stages' 30 nights to <= the cap (PLD). That is the nearest correct
    variant: a Gaussian SVT (Zhu and Wang 2020) is accounted in RDP, which dp-accounting has no event
    for, so it is not used. A single theme is simulated; the real histogram has ~21 themes, whose alerts
    would share the same `instances` (a user may be in any of them): favourable to SVT.

Printed: nights from a change's start to its first rise flag (0: flagged on its first night; median
and p90 over the runs, ">H" past the horizon) and false rise flags per 100 steady theme-nights (and,
for (a) and (b), any flag: growing, shrinking, rising or falling), for each base, and the noise each
release puts on a night, a week's mean and the weekly contrast. Evaluation only: nothing here runs in
the job.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import math
import statistics
import sys
from collections.abc import Sequence

import dp_accounting
import numpy as np
from scipy import integrate, optimize

from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA
from dp_ops.dp_events import EpsilonDeltaDpEvent, composed_epsilon
from dp_ops.theme_histogram import STAGE as THEMES_STAGE
from publishing.theme_timeline import PRIOR_WEEKS, WEEK, theme_timeline, weekly_status
from publishing.timeline import BASELINE_NIGHTS, DAY_TO_DAY_CV, EMERGING_NIGHTS, Z, night_status

CAP = 30.0
WINDOW_NIGHTS = 30
SPAN = WEEK * (PRIOR_WEEKS + 1)  # the nights the weekly rule reads: 35
# A change starts on a night drawn from [FIRST_START, FIRST_START + WINDOW_NIGHTS): after a full weekly
# baseline, and anywhere in a tree's block (its noise depends on where in the block a night falls).
FIRST_START = SPAN
HORIZON = 30  # nights a change is followed; not flagged by then: censored
NIGHTS = FIRST_START + WINDOW_NIGHTS - 1 + HORIZON
# The part of an AboveThreshold query's noise that may cross the threshold on a steady night: the
# threshold is set so that the noise alone alerts with this probability a query.
SVT_NOISE_ALERT_RATE = 0.002
FACTORISATIONS = ("identity", "tree", "prefix", "sqrt", "sliding7")


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # "ramp": base x (1 + rate x (nights since the start + 1)); "step": base x (1 + rate)
    rate: float


SCENARIOS = (Scenario("rise 15%/night", "ramp", 0.15), Scenario("rise 5%/night", "ramp", 0.05),
             Scenario("step +50%", "step", 0.5), Scenario("steady", "steady", 0.0))


# -- the production noise and the window's other spends ------------------------------------------------

@functools.lru_cache(maxsize=4)
def production_plan(cap: float = CAP, window_days: int = WINDOW_NIGHTS, window_delta: float = DEFAULT_WINDOW_DELTA):
    """The nightly plan of the documented command with --themes (num_clusters 20, one k-means iteration),
    as the stream evaluation makes it: the themes' sigma and the other stages' events come from here."""
    from eval.urania_inprocess import UraniaConfig
    from eval.utility.nightly_stream import make_plan
    return make_plan(UraniaConfig(num_clusters=20, kmeans_iterations=1, themes=True), cap, window_days, window_delta)


def themes_sigma(plan) -> float:
    return plan.calibration.stages[THEMES_STAGE].noise_std_parameter


def other_window_events(plan) -> list[dp_accounting.DpEvent]:
    """What a window spends besides the themes: the other stages' events, every night of the window."""
    events = [s.event() for name, s in plan.calibration.stages.items() if name != THEMES_STAGE]
    return [dp_accounting.SelfComposedDpEvent(dp_accounting.ComposedDpEvent(events), plan.nights_per_window),
            *plan.fixed_events]


# -- (b) factorisations ---------------------------------------------------------------------------------

def factorisation(name: str, nights: int = WINDOW_NIGHTS) -> tuple[np.ndarray, np.ndarray]:
    """(C, night each row is released on) for one block of `nights`. Every C here is >= 0 and causal (a
    row released on night p reads nights <= p only)."""
    if name == "identity":
        return np.eye(nights), np.arange(nights)
    if name == "tree":
        rows, avail = [], []
        for level in range(math.ceil(math.log2(nights)) + 1):
            width = 2 ** level
            for start in range(0, nights, width):
                end = min(start + width, nights)
                row = np.zeros(nights)
                row[start:end] = 1.0
                rows.append(row)
                avail.append(end - 1)
        return np.array(rows), np.array(avail)
    if name == "prefix":
        return np.tril(np.ones((nights, nights))), np.arange(nights)
    if name == "sqrt":  # the square root of the prefix-sum matrix (Denisov et al. 2022; Fichtenberger et al. 2023)
        coefficients = np.ones(nights)
        for k in range(1, nights):
            coefficients[k] = coefficients[k - 1] * (2 * k - 1) / (2 * k)  # binom(2k, k) / 4^k
        c = np.zeros((nights, nights))
        for i in range(nights):
            c[i, :i + 1] = coefficients[:i + 1][::-1]
        return c, np.arange(nights)
    if name == "sliding7":  # the page's week sums themselves, released every night
        c = np.zeros((nights, nights))
        for i in range(nights):
            c[i, max(0, i - WEEK + 1):i + 1] = 1.0
        return c, np.arange(nights)
    raise ValueError(f"unknown factorisation {name!r}; known: {FACTORISATIONS}")


def window_sensitivity(c: np.ndarray, avail: np.ndarray, window: int = WINDOW_NIGHTS) -> float:
    """The L2 sensitivity of all rows released in any `window` consecutive nights of a stream of blocks,
    to one user: the largest over the window's offsets of ||C_rows 1|| (a user present on every night, the
    worst case for a non-negative C: `test_the_all_nights_user_is_the_worst_case`)."""
    if (c < 0).any():
        raise ValueError("the all-nights user is the worst case only for a non-negative factorisation")
    block = c.shape[1]
    weight = c.sum(axis=1) ** 2
    released = np.concatenate([avail, avail + block, avail + 2 * block])  # three blocks cover any window
    weights = np.concatenate([weight] * 3)
    return max(math.sqrt(weights[(released >= w) & (released < w + window)].sum()) for w in range(0, 2 * block))


@dataclasses.dataclass(frozen=True)
class Online:
    """A factorisation's estimates as a night would see them: for each position p in a block, the GLS map
    from the rows released by p to nights 0..p, and its covariance per unit node variance."""

    c: np.ndarray
    avail: np.ndarray
    maps: tuple  # p -> (rows released by p, (p+1) x rows matrix)
    covariances: tuple  # p -> (p+1) x (p+1)

    @classmethod
    def of(cls, name: str, nights: int = WINDOW_NIGHTS) -> "Online":
        c, avail = factorisation(name, nights)
        maps, covariances = [], []
        for p in range(nights):
            rows = np.flatnonzero(avail <= p)
            a = c[rows][:, :p + 1]
            covariance = np.linalg.inv(a.T @ a)
            maps.append((rows, covariance @ a.T))
            covariances.append(covariance)
        return cls(c, avail, tuple(maps), tuple(covariances))

    @property
    def block(self) -> int:
        return self.c.shape[1]

    def estimates(self, released: np.ndarray, night: int) -> tuple[np.ndarray, np.ndarray]:
        """(runs x nights 0..night estimates, their noise covariance per unit node variance) from
        `released` (runs x blocks x rows) as of `night`: earlier blocks complete, the current one so far."""
        current, p = divmod(night, self.block)
        parts, covariances = [], []
        for b in range(current + 1):
            position = self.block - 1 if b < current else p
            rows, matrix = self.maps[position]
            parts.append(released[:, b, rows] @ matrix.T)
            covariances.append(self.covariances[position])
        size = sum(len(cv) for cv in covariances)
        covariance = np.zeros((size, size))
        at = 0
        for cv in covariances:
            covariance[at:at + len(cv), at:at + len(cv)] = cv
            at += len(cv)
        return np.concatenate(parts, axis=1), covariance


def node_sigma_of(online: Online, sigma: float) -> float:
    """The node sigma that gives a factorised window the plain window's Gaussian privacy (sigma a night,
    sensitivity 1 a night: sqrt(WINDOW_NIGHTS) a window)."""
    return window_sensitivity(online.c, online.avail) * sigma / math.sqrt(WINDOW_NIGHTS)


def contrasts(span: int = SPAN) -> dict[str, np.ndarray]:
    """The rules' linear views of the last `span` nights: tonight, tonight against the previous week's
    mean (nightly), the last week's mean against the prior weeks' (weekly), and the two means."""
    week = np.zeros(span)
    week[-WEEK:] = 1 / WEEK
    prior = np.zeros(span)
    prior[-SPAN:-WEEK] = 1 / (SPAN - WEEK)
    tonight = np.zeros(span)
    tonight[-1] = 1.0
    previous = np.zeros(span)
    previous[-BASELINE_NIGHTS - 1:-1] = 1 / BASELINE_NIGHTS
    return {"tonight": tonight, "previous": previous, "nightly": tonight - previous, "week": week, "prior": prior,
            "weekly": week - prior}


def noise_profile(name: str, sigma: float, first: int = FIRST_START, last: int = NIGHTS) -> dict:
    """A factorisation's node sigma at the plain release's window privacy and the noise sd it leaves on
    each view of `contrasts`, averaged (as variances) over the nights first..last-1."""
    online = Online.of(name)
    sensitivity = window_sensitivity(online.c, online.avail)
    node_sigma = node_sigma_of(online, sigma)
    views = contrasts()
    variances = {key: [] for key in views}
    for night in range(first, last):
        _, covariance = online.estimates(np.zeros((1, night // online.block + 1, len(online.c))), night)
        tail = covariance[-SPAN:, -SPAN:] * node_sigma ** 2
        for key, d in views.items():
            variances[key].append(float(d @ tail @ d))
    return {"factorisation": name, "sensitivity": sensitivity, "node_sigma": node_sigma,
            "sd": {key: math.sqrt(statistics.fmean(v)) for key, v in variances.items()}}


# -- (c) sparse vector ----------------------------------------------------------------------------------

def natural_contrast_variance(prior_mean: float) -> float:
    """The weekly contrast's natural variance under no change (publishing.theme_timeline.weekly_z's term)."""
    mu = max(prior_mean, 0.0)
    return (mu + (DAY_TO_DAY_CV * mu) ** 2) * (1 / WEEK + 1 / (SPAN - WEEK))


def svt_sensitivity() -> float:
    """The weekly margin's user-level sensitivity: removing a user lowers the week mean by a and the prior
    mean by b (a, b in [0, 1]), so the margin moves by -a + b + Z (sqrt g(mu) - sqrt g(mu - b)), and sqrt g
    is concave (g(mu) = k (mu + cv^2 mu^2): (sqrt g)'' = -k^2 / (4 g^1.5)): its rise over one unit is
    largest from 0."""
    return 1.0 + Z * math.sqrt(natural_contrast_variance(1.0))


def svt_margin(counts: np.ndarray, night: int) -> np.ndarray:
    """The query of every run on `night`: week mean - prior mean - Z sqrt(natural variance)."""
    week = counts[:, night - WEEK + 1:night + 1].mean(axis=1)
    prior = counts[:, night - SPAN + 1:night - WEEK + 1].mean(axis=1)
    mu = np.maximum(prior, 0.0)
    natural = (mu + (DAY_TO_DAY_CV * mu) ** 2) * (1 / WEEK + 1 / (SPAN - WEEK))
    return week - prior - Z * np.sqrt(natural)


def svt_epsilon(plan, instances: int, cap: float = CAP) -> float:
    """The largest eps per AboveThreshold instance such that `instances` of them and the other stages'
    window compose to <= `cap` at the window's delta (PLD, bisection on a 1e-3 grid, rounded down)."""
    others = other_window_events(plan)

    def spent(eps: float) -> float:
        return composed_epsilon([*others, dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(eps, 0.0), instances)],
                                plan.window_delta)

    low, high = 0.0, cap / instances
    while high - low > 1e-3:
        middle = (low + high) / 2
        low, high = (middle, high) if spent(middle) <= cap else (low, middle)
    return math.floor(low * 1000) / 1000


def svt_threshold(nu_scale: float, rho_scale: float, rate: float = SVT_NOISE_ALERT_RATE) -> float:
    """theta such that P(nu >= theta + rho) = rate for nu ~ Lap(nu_scale), rho ~ Lap(rho_scale)."""
    def above(theta: float) -> float:
        def tail(x):  # P(nu >= x)
            return 0.5 * math.exp(-x / nu_scale) if x >= 0 else 1 - 0.5 * math.exp(x / nu_scale)
        value, _ = integrate.quad(lambda r: tail(theta + r) * math.exp(-abs(r) / rho_scale) / (2 * rho_scale),
                                  -60 * rho_scale, 60 * rho_scale, points=[-theta, 0.0], limit=200)
        return value
    return optimize.brentq(lambda t: above(t) - rate, 0.0, 100 * (nu_scale + rho_scale))


@dataclasses.dataclass(frozen=True)
class SVTSettings:
    instances: int
    epsilon: float
    sensitivity: float
    rho_scale: float
    nu_scale: float
    threshold: float

    @classmethod
    def of(cls, plan, instances: int, alert_rate: float = SVT_NOISE_ALERT_RATE) -> "SVTSettings":
        eps, delta = svt_epsilon(plan, instances), svt_sensitivity()
        rho, nu = 2 * delta / eps, 4 * delta / eps
        return cls(instances, eps, delta, rho, nu, svt_threshold(nu, rho, alert_rate))


def svt_alerts(counts: np.ndarray, settings: SVTSettings, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """Alerts (runs x nights, bool) and each run's instances [(first night, last night)] of AboveThreshold
    run from night FIRST_START on, restarted after each alert while the window rule allows."""
    runs, nights = counts.shape
    alerts = np.zeros((runs, nights), dtype=bool)
    margins = np.stack([svt_margin(counts, t) if t >= SPAN - 1 else np.zeros(runs) for t in range(nights)], axis=1)
    spans = []
    for run in range(runs):
        ended, started, rho, mine = [], None, 0.0, []
        for t in range(FIRST_START, nights):
            if started is None:
                if sum(e >= t - WINDOW_NIGHTS + 1 for e in ended) > settings.instances - 1:
                    continue  # every window holding tonight would get one instance too many: silent
                started, rho = t, rng.laplace(0.0, settings.rho_scale)
            if margins[run, t] + rng.laplace(0.0, settings.nu_scale) >= settings.threshold + rho:
                alerts[run, t] = True
                ended.append(t)
                mine.append((started, t))
                started = None
        if started is not None:
            mine.append((started, nights - 1))
        spans.append(mine)
    return alerts, spans


# -- the accounting of each release ---------------------------------------------------------------------

def accounting(plan, svt: Sequence[SVTSettings] = ()) -> dict[str, float]:
    """Each release's worst window, composed with the other stages by dp-accounting's PLD at the window delta."""
    others, sigma = other_window_events(plan), themes_sigma(plan)
    figures = {"plain": composed_epsilon(
        [*others, dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), WINDOW_NIGHTS)],
        plan.window_delta)}
    tree = noise_profile("tree", sigma, FIRST_START, FIRST_START + 1)
    figures["tree"] = composed_epsilon(
        [*others, dp_accounting.GaussianDpEvent(tree["node_sigma"] / tree["sensitivity"])], plan.window_delta)
    for s in svt:
        figures[f"svt x{s.instances}"] = composed_epsilon(
            [*others, dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(s.epsilon, 0.0), s.instances)],
            plan.window_delta)
    return figures


# -- the simulation -------------------------------------------------------------------------------------

def true_counts(rng: np.random.Generator, base: float, scenario: Scenario, starts: np.ndarray,
                nights: int = NIGHTS) -> np.ndarray:
    """Runs x nights of true counts (users in the theme): gamma-Poisson around the scenario's mean."""
    since = np.arange(nights)[None, :] - starts[:, None]
    if scenario.kind == "ramp":
        mean = base * (1 + scenario.rate * np.where(since >= 0, since + 1, 0))
    elif scenario.kind == "step":
        mean = base * (1 + scenario.rate * (since >= 0))
    else:
        mean = np.full(since.shape, float(base))
    shape = 1 / DAY_TO_DAY_CV ** 2
    return rng.poisson(rng.gamma(shape, mean / shape)).astype(float)


def _date(night: int) -> str:
    return (datetime.date(2025, 1, 1) + datetime.timedelta(days=night)).isoformat()


def plain_flags(counts: np.ndarray, sigma: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rise flags, any flags), runs x nights, of today's release: each run is a theme of synthetic
    reports, and publishing.theme_timeline gives its statuses."""
    runs, nights = counts.shape
    noisy = counts + rng.normal(0.0, sigma, counts.shape)
    reports = [(_date(t), {"themes": {"sigma": sigma, "themes": [{"id": f"run{r}", "size": float(noisy[r, t])}
                                                                 for r in range(runs)]}}) for t in range(nights)]
    rise, change = np.zeros((runs, nights), dtype=bool), np.zeros((runs, nights), dtype=bool)
    for theme in theme_timeline(reports):
        r = int(theme["id"][3:])
        for t, night in enumerate(theme["nights"]):
            rise[r, t] = night["status"] == "growing" or night["week"] == "rising"
            change[r, t] = night["status"] in ("growing", "shrinking") or night["week"] in ("rising", "falling")
    return rise, change


def _weekly_flag(week_mean: float, prior_mean: float, noise_variance: float) -> str:
    """publishing.theme_timeline.weekly_status on a week and prior weeks whose means carry a contrast noise
    variance `noise_variance` (correlated noise): equal nights whose per-night variances make
    weekly_z's noise term exactly that."""
    per_night = noise_variance / (1 / WEEK + 1 / (SPAN - WEEK))
    return weekly_status([(prior_mean, per_night)] * (SPAN - WEEK) + [(week_mean, per_night)] * WEEK)


def _nightly_flag(tonight: float, previous_mean: float, noise_variance: float) -> str:
    """publishing.timeline.night_status (no weekday baseline: the simulation has no weekly pattern) with the
    contrast's whole noise variance on tonight and none on the baseline's equal nights."""
    return night_status(tonight, noise_variance, [(previous_mean, 0.0)] * BASELINE_NIGHTS, EMERGING_NIGHTS)


def factorised_release(counts: np.ndarray, online: Online, node_sigma: float, rng: np.random.Generator) -> np.ndarray:
    """runs x blocks x rows: C x + N(0, node_sigma^2) per block of the runs' nights (the last block padded
    with empty nights, never read before they happen: C is causal)."""
    runs, nights = counts.shape
    blocks = math.ceil(nights / online.block)
    padded = np.zeros((runs, blocks * online.block))
    padded[:, :nights] = counts
    return padded.reshape(runs, blocks, online.block) @ online.c.T + rng.normal(0.0, node_sigma,
                                                                                 (runs, blocks, len(online.c)))


def factorised_flags(counts: np.ndarray, name: str, sigma: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rise flags, any flags) of a factorised release at the plain window's privacy, from night FIRST_START."""
    runs, nights = counts.shape
    online = Online.of(name)
    node_sigma = node_sigma_of(online, sigma)
    released = factorised_release(counts, online, node_sigma, rng)
    views = contrasts()
    rise, change = np.zeros((runs, nights), dtype=bool), np.zeros((runs, nights), dtype=bool)
    for t in range(FIRST_START, nights):
        estimates, covariance = online.estimates(released, t)
        tail, cov = estimates[:, -SPAN:], covariance[-SPAN:, -SPAN:] * node_sigma ** 2
        value = {key: tail @ d for key, d in views.items()}
        variance = {key: float(views[key] @ cov @ views[key]) for key in ("nightly", "weekly")}
        for r in range(runs):
            weekly = _weekly_flag(value["week"][r], value["prior"][r], variance["weekly"])
            nightly = _nightly_flag(value["tonight"][r], value["previous"][r], variance["nightly"])
            rise[r, t] = nightly == "growing" or weekly == "rising"
            change[r, t] = nightly in ("growing", "shrinking") or weekly in ("rising", "falling")
    return rise, change


def nights_to_flag(flags: np.ndarray, starts: np.ndarray) -> list[float]:
    """Per run, nights from the start to the first flag on or after it (inf: none within HORIZON)."""
    out = []
    for run, start in enumerate(starts):
        hits = np.flatnonzero(flags[run, start:start + HORIZON])
        out.append(float(hits[0]) if len(hits) else math.inf)
    return out


def per_100(flags: np.ndarray) -> float:
    """Flags per 100 theme-nights over the evaluated nights (FIRST_START on)."""
    return 100.0 * float(flags[:, FIRST_START:].mean())


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def simulate(bases: Sequence[float], runs: int, seed: int, svt: Sequence[SVTSettings], sigma: float) -> list[dict]:
    """One row per base and release: nights to flag per scenario (median, p90, share flagged within
    HORIZON) and steady false flags per 100 theme-nights."""
    rows = []
    for b_index, base in enumerate(bases):
        by_release: dict[str, dict] = {}
        for s_index, scenario in enumerate(SCENARIOS):
            rng = np.random.default_rng([seed, b_index, s_index])
            starts = rng.integers(FIRST_START, FIRST_START + WINDOW_NIGHTS, runs)
            counts = true_counts(rng, base, scenario, starts)
            results = {"plain": plain_flags(counts, sigma, rng), "tree": factorised_flags(counts, "tree", sigma, rng)}
            for s in svt:
                alerts, _ = svt_alerts(counts, s, rng)
                results[f"svt x{s.instances}"] = (alerts, None)
            for release, (rise, change) in results.items():
                row = by_release.setdefault(release, {"base": base, "release": release})
                if scenario.kind == "steady":
                    row["false_rise_per_100"] = per_100(rise)
                    row["false_any_per_100"] = per_100(change) if change is not None else None
                else:
                    waits = nights_to_flag(rise, starts)
                    row[scenario.name] = {"median": quantile(waits, 0.5), "p90": quantile(waits, 0.9),
                                          "flagged": sum(math.isfinite(w) for w in waits) / runs}
        rows.extend(by_release.values())
    return rows


# -- output ---------------------------------------------------------------------------------------------

def _wait(cell: dict) -> str:
    def one(value):
        return f">{HORIZON - 1}" if math.isinf(value) else f"{value:.0f}"
    return f"{one(cell['median'])} / {one(cell['p90'])}"


def format_table(rows: list[dict]) -> list[str]:
    ramps = [s.name for s in SCENARIOS if s.kind != "steady"]
    lines = ["| base users/night | release | " + " | ".join(f"{n}: nights to flag, median / p90" for n in ramps)
             + " | steady: false rise flags per 100 (any flag) |",
             "|" + "---|" * (len(ramps) + 3)]
    for row in rows:
        false = f"{row['false_rise_per_100']:.2f}"
        if row.get("false_any_per_100") is not None:
            false += f" ({row['false_any_per_100']:.2f})"
        lines.append(f"| {row['base']:g} | {row['release']} | " + " | ".join(_wait(row[n]) for n in ramps)
                     + f" | {false} |")
    return lines


def format_noise(profiles: list[dict], sigma: float, svt: Sequence[SVTSettings]) -> list[str]:
    lines = ["| release | window sensitivity | noise sd on a night | on a week's mean | on the weekly contrast |",
             "|---|---|---|---|---|"]
    for p in profiles:
        lines.append(f"| {p['factorisation']} | {p['sensitivity']:.1f} | {p['sd']['tonight']:.2f} | "
                     f"{p['sd']['week']:.2f} | {p['sd']['weekly']:.2f} |")
    for s in svt:
        sd = math.sqrt(2) * s.nu_scale
        lines.append(f"| svt x{s.instances} (eps {s.epsilon:.3f} each; Delta {s.sensitivity:.2f}; threshold "
                     f"{s.threshold:.1f}) | {s.sensitivity:.2f} | - | - | {sd:.2f} (Laplace query noise) |")
    lines.append(f"(plain sigma {sigma:.3f} users a night; all at the plain window's privacy)")
    return lines


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400, help="simulated runs per base and scenario")
    parser.add_argument("--bases", default="20,60,200", help="a theme's users a night before the change")
    parser.add_argument("--svt_instances", default="1,3", help="AboveThreshold instances a window may hold")
    parser.add_argument("--svt_alert_rate", type=float, default=SVT_NOISE_ALERT_RATE,
                        help="the chance that an AboveThreshold query's noise alone alerts (sets its threshold)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    plan = production_plan()
    sigma = themes_sigma(plan)
    svt = [SVTSettings.of(plan, int(n), args.svt_alert_rate) for n in args.svt_instances.split(",") if n]
    spent = accounting(plan, svt)
    print(f"themes sigma {sigma:.3f} users a night (plan: cap {plan.max_epsilon_per_window:g} over "
          f"{plan.window_days} nights at delta {plan.window_delta:g}); worst window epsilon with the other "
          "stages: " + ", ".join(f"{k} {v:.4f}" for k, v in spent.items()))
    profiles = [noise_profile(name, sigma) for name in FACTORISATIONS]
    print("\n".join(format_noise(profiles, sigma, svt)))
    rows = simulate([float(b) for b in args.bases.split(",")], args.runs, args.seed, svt, sigma)
    print(f"\n{args.runs} runs a cell; nights from the change's start (0: its first night), censored at "
          f"{HORIZON - 1}")
    print("\n".join(format_table(rows)))
    figures = {"sigma": sigma, "accounting": spent, "noise": profiles, "svt": [dataclasses.asdict(s) for s in svt],
               "rows": rows, "runs": args.runs, "seed": args.seed}
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1, default=str)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
