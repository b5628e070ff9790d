"""Issue 25, item 2: which way of running nightly gives the most signal per night at one window cap.

A privacy ledger caps every window of `--window_days` at `--max_epsilon_per_window`, composed with
PLD at one window delta. Three ways to spend it, each calibrated so that a window's worth of nights
composes to exactly that cap (dp-accounting's PLD accountant):

  plain     every user every night; N = ceil(window / cadence) nights of the same noise compose to the
            cap (dp_ops.nightly_plan.plan_nights: the planner the job uses).
  sampled   user-level Poisson sampling: a user's conversations enter a night with probability q,
            decided by a keyed hash of (night key, user id) with a fresh secret key every night.
            Accounting: PoissonSampledDpEvent(q, night) composed N times. The PLD accountant takes ONE
            Gaussian or Laplace event under the sampling, so the night must be one Gaussian: every
            release of a night is computed on the same sample, and Gaussians of multipliers z_i compose
            to exactly one of multiplier (sum 1 / z_i^2)^(-1/2) (dp_ops.dp_events.merged). Accounting
            each stage as its own sampled event would treat the stages' samples as independent and
            under-count, so a night with a Laplace release is refused. The cluster sizes therefore
            become a Gaussian COUNT of L2 sensitivity C (PipelineDP, the job's partitions and
            contribution bound, sizes still in conversations so tau keeps its meaning) rather than a
            weighted count of sensitivity 1 (sizes in users: a different tau, and a new mechanism).
  cohorts   each user counts on one night in m (a keyed hash of the user id, mod m; the key fixed
            across nights), so any window holds ceil(N / m) of a user's nights (parallel composition
            across cohorts): plan_nights with a cadence m times the job's.

For each mode the script prints the per-night noise, then runs the job's mechanisms in-process
(eval.urania_inprocess.run_urania, with the mode's calibration) on the users that enter one night, at
a few scales of users per night, and reports per-night topic quality with eval.utility.topic_quality's
metrics: planted topics recovered (named with an expected keyword: topic_quality's named_strict),
NMI against the planted topics (all kept conversations, unreleased topics as one label: nmi_kept;
and over released topics only: nmi_released), and topics labelled by their own DP votes.

The data is one generated set (beam_jobs.generate_sample, planted topics), embedded once (cached by
eval.data); a scale is a keyed subset of its users (nested: the 600 users are among the 2,000).
Seeds vary the night's key (which users are sampled, which cohort runs), contribution bounding and
noise.

    python -m eval.audit.nightly_privacy_modes --scales 600,2000,6000 --seeds 3
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence

import dp_accounting
import numpy as np

from config.privacy import PrivacyParams
from core.dp_stages import CLUSTER_SIZES, CLUSTERING, KEYWORD_HISTOGRAMS, USER_COUNT
from core.label_sources import VOTE_SOURCES
from dp_ops.dp_events import PLDAccountant, composed_epsilon, merged
from dp_ops.joint_calibration import JointCalibration, StageRequest, calibrate_jointly, count_request
from dp_ops.nightly_plan import nights_per_window, plan_nights
from dp_ops.sampling import keyed_uniform
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import RESULTS_DIR, embed_cached, load_dataset, planted_topics
from eval.tables import cell, mean, write_csv
from eval.urania_inprocess import NightContext, UraniaConfig, run_urania, stage_requests
from eval.utility.topic_quality import composition, nmi, planted_named, with_unreleased
from synthetic.sample import write_sample
from synthetic.topics import PLANTED_TOPICS

OUTPUT_DIR = os.path.join(RESULTS_DIR, "nightly_modes")
SAMPLE_PURPOSE = "nightly user sample"
COHORT_PURPOSE = "nightly user cohort"
SCALE_PURPOSE = "nightly modes scale"
# Relative tolerance on the sampled mode's night epsilon (its noise is within about this of the cap's).
_NIGHT_EPSILON_TOLERANCE = 1e-3


# ---- which users enter a night ----

def in_sample(night_key: int, user_id: str, q: float) -> bool:
    """Poisson sampling of users: True with probability q, independently per user and per night key.
    The key must be secret and fresh every night: amplification needs the sample hidden from whoever
    sees the release, and independent samples across nights."""
    return keyed_uniform(night_key, SAMPLE_PURPOSE, user_id) < q


def cohort_of(cohort_key: int, user_id: str, cohorts: int) -> int:
    """The user's cohort in 0..cohorts-1 (uniform; the key stays fixed across nights, so a user keeps
    its cohort and counts on one night in `cohorts`)."""
    return min(int(keyed_uniform(cohort_key, COHORT_PURPOSE, user_id) * cohorts), cohorts - 1)


# ---- accounting ----

@dataclasses.dataclass(frozen=True)
class Mode:
    """plain (every user every night), sampled (rate q) or cohorts (one night in m)."""

    kind: str
    q: float = 1.0
    cohorts: int = 1

    def __post_init__(self):
        if self.kind not in ("plain", "sampled", "cohorts"):
            raise ValueError(f"unknown mode {self.kind!r}")
        if not 0 < self.q <= 1 or self.cohorts < 1:
            raise ValueError(f"need 0 < q <= 1 and cohorts >= 1, got {self.q}, {self.cohorts}")

    @property
    def name(self) -> str:
        if self.kind == "sampled" and self.q == 1:  # every user, the sampled mode's all-Gaussian night
            return "plain, Gaussian sizes"
        return {"plain": "plain", "sampled": f"sampled q={self.q:g}", "cohorts": f"cohorts m={self.cohorts}"}[self.kind]

    @property
    def rate(self) -> float:
        """The expected share of users that enter a night."""
        return self.q if self.kind == "sampled" else 1 / self.cohorts

    def night_users(self, user_ids: Iterable[str], night_key: int) -> set[str]:
        users = set(user_ids)
        if self.kind == "sampled":
            return {u for u in users if in_sample(night_key, u, self.q)}
        if self.kind == "cohorts":  # the night's cohort: 0 under this night's cohort key
            return {u for u in users if cohort_of(night_key, u, self.cohorts) == 0}
        return users


@dataclasses.dataclass(frozen=True)
class NightCalibration:
    """A mode's per-night noise: `calibration` (what run_urania draws), `night_epsilon` (a night on its
    own, at the night's delta, no amplification) and `window_epsilon` (a full window at the window's
    delta, amplification and cohorts included), <= the cap."""

    mode: Mode
    calibration: JointCalibration
    nights_counted: int  # nights of a window a user can be in
    night_epsilon: float
    window_epsilon: float


def night_gaussian(events: Iterable[dp_accounting.DpEvent]) -> dp_accounting.GaussianDpEvent:
    """A night's releases as the one Gaussian they compose to exactly; ValueError if any is not Gaussian."""
    folded = merged(events)
    if len(folded) != 1 or not isinstance(folded[0], dp_accounting.GaussianDpEvent):
        raise ValueError("a sampled night must be all Gaussian releases (one Gaussian event under the sampling); "
                         f"got {folded}: accounting its stages as separate sampled events would under-count")
    return folded[0]


def sampled_window_event(events: Iterable[dp_accounting.DpEvent], q: float, nights: int) -> dp_accounting.DpEvent:
    """`nights` nights, each the releases `events` on an independent Poisson sample of users at rate q."""
    return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, night_gaussian(events)), nights)


def window_epsilon_of(event: dp_accounting.DpEvent, delta: float) -> float:
    """Epsilon at `delta` of one event, by the project's PLD accountant (which also composes
    PoissonSampledDpEvent of a Gaussian: dp-accounting 0.6.0's PLDAccountant)."""
    accountant = PLDAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def sampled_requests(requests: Sequence[StageRequest], max_conversations_per_user: int) -> list[StageRequest]:
    """The job's stages with the cluster sizes as a Gaussian COUNT (L2 sensitivity C, same weight)."""
    return [count_request(CLUSTER_SIZES, r.weight, "gaussian", l0=1, linf=max_conversations_per_user)
            if r.stage == CLUSTER_SIZES else r for r in requests]


def plain_night_calibration(requests: Sequence[StageRequest], cap: float, window_delta: float, window_days: int,
                            cadence_days: int, night_delta: float, mode: Mode = Mode("plain")) -> NightCalibration:
    """Every user every night: the job's nightly plan (N nights compose to the cap)."""
    plan = plan_nights(requests, max_epsilon_per_window=cap, window_delta=window_delta, window_days=window_days,
                       cadence_days=cadence_days, night_delta=night_delta)
    return NightCalibration(mode, plan.calibration, plan.nights_per_window, plan.night_epsilon, plan.window_epsilon)


def cohort_night_calibration(requests: Sequence[StageRequest], cap: float, window_delta: float, window_days: int,
                             cadence_days: int, night_delta: float, cohorts: int) -> NightCalibration:
    """One night in m per user: a user's cadence is m times the job's, so the plan for that cadence
    (ceil(N / m) nights of a window) is the cohort mode's. Cohorts are disjoint: a night's release
    depends on its own cohort only (parallel composition)."""
    return plain_night_calibration(requests, cap, window_delta, window_days, cadence_days * cohorts, night_delta,
                                   Mode("cohorts", cohorts=cohorts))


def sampled_night_calibration(requests: Sequence[StageRequest], cap: float, window_delta: float, window_days: int,
                              cadence_days: int, night_delta: float, q: float) -> NightCalibration:
    """The least noise (the job's stage weights, all Gaussian) such that N nights, each on its own
    Poisson sample at rate q, compose to <= cap at the window delta. The night is jointly calibrated
    (dp_ops.joint_calibration, as a single run) to a night epsilon found by bisection: the largest whose
    sampled window fits. That keeps PipelineDP's rounding of the Gaussian sizes in the accounting."""
    nights = nights_per_window(window_days, cadence_days)

    def calibration(night_epsilon: float) -> JointCalibration:
        return calibrate_jointly(night_epsilon, night_delta, requests)

    def window_event(night_epsilon: float) -> dp_accounting.DpEvent:
        return sampled_window_event(calibration(night_epsilon).events(), q, nights)

    def fits(night_epsilon: float) -> bool:
        return window_epsilon_of(window_event(night_epsilon), window_delta) <= cap

    # From the basic-composition share over q (roughly what amplification buys), outwards by factors of 2.
    low = high = cap / nights / q
    if fits(low):
        while fits(high):
            low, high = high, high * 2
    else:
        while not fits(low):
            low, high = low / 2, low
    night_epsilon = dp_accounting.calibrate_dp_mechanism(
        PLDAccountant, window_event, target_epsilon=cap, target_delta=window_delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(low, high), tol=_NIGHT_EPSILON_TOLERANCE * low)
    joint = calibration(night_epsilon)
    return NightCalibration(Mode("sampled", q=q), joint, nights, composed_epsilon(joint.events(), night_delta),
                            window_epsilon_of(window_event(night_epsilon), window_delta))


def mode_calibration(mode: Mode, requests: Sequence[StageRequest], max_conversations_per_user: int, **window) -> NightCalibration:
    if mode.kind == "sampled":
        return sampled_night_calibration(sampled_requests(requests, max_conversations_per_user), q=mode.q, **window)
    if mode.kind == "cohorts":
        return cohort_night_calibration(requests, cohorts=mode.cohorts, **window)
    return plain_night_calibration(requests, **window)


def noise_figures(night: NightCalibration) -> dict:
    """The per-night noise the mode's calibration draws, and the night as one Gaussian where it is one."""
    stages = night.calibration.stages
    sizes = stages[CLUSTER_SIZES]
    size_std = sizes.noise_std_parameter * (math.sqrt(2) if sizes.request.noise == "laplace" else 1.0)
    gaussian = [e for e in merged(night.calibration.events()) if isinstance(e, dp_accounting.GaussianDpEvent)]
    return {
        "clustering_z": stages[CLUSTERING].noise_multiplier,
        "votes_z": stages[KEYWORD_HISTOGRAMS].noise_multiplier,
        "user_count_z": stages[USER_COUNT].noise_multiplier if USER_COUNT in stages else None,
        "sizes": f"{sizes.request.noise} std {size_std:.2f}",
        "size_std": size_std,
        "gaussians_z": gaussian[0].noise_multiplier if gaussian else None,
    }


# ---- per-night topic quality ----

def night_quality(report: dict, planted: dict[str, str]) -> dict:
    """eval.utility.topic_quality's figures for one release: planted topics recovered (named_strict), NMI with
    the planted topics (nmi_kept, nmi_released), topics released and labelled by their DP votes."""
    assignments = report["_private"]["assignments"]
    topics = report["topics"]
    released = {t["id"] for t in topics}
    in_released = [c for c, cluster in assignments.items() if cluster in released]
    counts = composition({c: assignments[c] for c in in_released}, planted)
    _, strict = planted_named(topics, counts, {p.name: p.expected_keywords for p in PLANTED_TOPICS})
    kept_labels = with_unreleased(assignments, released)
    return {
        "recovered": len(strict),
        "nmi_kept": nmi(list(kept_labels.values()), [planted[c] for c in kept_labels]),
        "nmi_released": nmi([assignments[c] for c in in_released], [planted[c] for c in in_released]),
        "released": len(topics),
        "labelled_by_votes": sum(1 for t in topics if t.get("label_source") in VOTE_SOURCES),
    }


def scale_users(user_ids: Iterable[str], users: int, key: int = 0) -> set[str]:
    """`users` of the distinct users (all if fewer), chosen by a keyed hash: nested across scales."""
    ranked = sorted(set(user_ids), key=lambda u: keyed_uniform(key, SCALE_PURPOSE, u))
    return set(ranked[:users])


def measure(dataset, embeddings: np.ndarray, planted: dict[str, str], nights: Sequence[NightCalibration],
            scales: Sequence[int], seeds: Sequence[int], config: UraniaConfig,
            progress: Callable[[str], None] = print) -> list[dict]:
    """One row per (mode, scale, seed): the users that enter that seed's night, run with the mode's noise."""
    ids, users, facets = dataset.conversation_ids, dataset.user_ids, dataset.facets
    rows = []
    for scale in scales:
        population = scale_users(users, scale)
        for night in nights:
            config_night = dataclasses.replace(config, epsilon=night.calibration.total_epsilon,
                                               delta=night.calibration.delta)
            for seed in seeds:
                entering = night.mode.night_users(population, night_key=seed)
                index = [i for i, u in enumerate(users) if u in entering]
                started = time.perf_counter()
                report = run_urania([ids[i] for i in index], [users[i] for i in index], [facets[i] for i in index],
                                    embeddings[index], config_night, seed=seed, noise_seed=seed,
                                    night=NightContext(joint=night.calibration))
                row = {"mode": night.mode.name, "scale": scale, "seed": seed, "users": len(entering),
                       "conversations": len(index), **night_quality(report, planted),
                       "seconds": time.perf_counter() - started}
                rows.append(row)
                progress(f"{row['mode']:<15} scale {scale:>6} seed {seed}: {row['users']:>5} users, "
                         f"{row['recovered']:>2} recovered, {row['labelled_by_votes']:>2}/{row['released']:<2} labelled, "
                         f"NMI {row['nmi_kept'] or 0:.3f} ({row['seconds']:.1f} s)")
    return rows


# ---- tables ----

def noise_table(nights: Sequence[NightCalibration]) -> str:
    lines = ["| mode | users a night | nights composed / window | night ε (own δ) | window ε (window δ) | "
             "k-means z | votes z | user count z | sizes noise | night's Gaussians as one z | k-means z / rate |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for night in nights:
        noise = noise_figures(night)
        lines.append(f"| {night.mode.name} | {night.mode.rate:.3g} | {night.nights_counted} | {night.night_epsilon:.2f} | "
                     f"{night.window_epsilon:.2f} | {noise['clustering_z']:.3f} | {noise['votes_z']:.3f} | "
                     f"{cell(noise['user_count_z'], '.1f')} | {noise['sizes']} | {cell(noise['gaussians_z'], '.3f')} | "
                     f"{noise['clustering_z'] / night.mode.rate:.2f} |")
    return "\n".join(lines)


def _mean(rows: Sequence[dict], key: str) -> float | None:
    return mean(r[key] for r in rows)


def quality_table(rows: Sequence[dict]) -> str:
    """Mean over seeds per (scale, mode); the scale's best mean recovery in bold."""
    lines = ["| users / night | mode | users in the night | recovered (of 25) | NMI (kept) | NMI (released) | "
             "labelled by votes / released |", "|---|---|---|---|---|---|---|"]
    scales = list(dict.fromkeys(r["scale"] for r in rows))
    for scale in scales:
        modes = list(dict.fromkeys(r["mode"] for r in rows if r["scale"] == scale))
        groups = {m: [r for r in rows if r["scale"] == scale and r["mode"] == m] for m in modes}
        best = max(_mean(g, "recovered") for g in groups.values())
        for mode, group in groups.items():
            recovered = f"{_mean(group, 'recovered'):.1f}"
            spread = f" ({min(r['recovered'] for r in group)}-{max(r['recovered'] for r in group)})"
            if _mean(group, "recovered") == best:
                recovered = f"**{recovered}**"
            lines.append(f"| {scale:,} | {mode} | {_mean(group, 'users'):,.0f} | {recovered}{spread} | "
                         f"{cell(_mean(group, 'nmi_kept'), '.3f')} | {cell(_mean(group, 'nmi_released'), '.3f')} | "
                         f"{_mean(group, 'labelled_by_votes'):.1f} / {_mean(group, 'released'):.1f} |")
    return "\n".join(lines)


def _numbers(text: str, kind=float) -> list:
    return [kind(v) for v in text.split(",") if v.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max_epsilon_per_window", type=float, default=30.0)
    parser.add_argument("--window_delta", type=float, default=1e-5)
    parser.add_argument("--window_days", type=int, default=30)
    parser.add_argument("--cadence_days", type=int, default=1)
    parser.add_argument("--night_delta", type=float, default=PrivacyParams.delta,
                        help="a night's own delta (PipelineDP's knob; the night epsilon shown is read at it)")
    parser.add_argument("--sampling_rates", default="0.1,0.25,0.5,1",
                        help="q values for the sampled mode; q = 1 is every user with the sampled mode's Gaussian "
                             "sizes, the control that separates amplification from the change of size noise")
    parser.add_argument("--cohorts", default="2,3,7", help="m values for the cohort mode")
    parser.add_argument("--scales", default="600,2000,6000", help="users per night (before sampling or cohorts)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data", help="a generated JSON Lines file (with planted_topic); default: generate one")
    parser.add_argument("--generate", default="18000,12000,7",
                        help="conversations,user ids,seed for beam_jobs.generate_sample when --data is not given "
                             "(the default gives ~6,050 active users)")
    add_config_flags(parser, num_clusters=JOB_DEFAULT)
    parser.add_argument("--output", default=OUTPUT_DIR, help="folder for the data, the CSV and the markdown")
    parser.add_argument("--noise_only", action="store_true", help="print the noise table and stop")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    config = config_from(args)
    requests = stage_requests(config)
    window = dict(cap=args.max_epsilon_per_window, window_delta=args.window_delta, window_days=args.window_days,
                  cadence_days=args.cadence_days, night_delta=args.night_delta)
    modes = ([Mode("plain")] + [Mode("sampled", q=q) for q in _numbers(args.sampling_rates)]
             + [Mode("cohorts", cohorts=m) for m in _numbers(args.cohorts, int)])
    nights = [mode_calibration(mode, requests, config.max_conversations_per_user, **window) for mode in modes]
    header = (f"window cap ε = {args.max_epsilon_per_window:g} at δ = {args.window_delta:g} over {args.window_days} "
              f"days, a night every {args.cadence_days} day(s) "
              f"({nights_per_window(args.window_days, args.cadence_days)} nights a window); night δ = "
              f"{args.night_delta:g}; k = {config.num_clusters}, C = {config.max_conversations_per_user}")
    print(f"{header}\n\nPer-night noise (z: noise multiplier, sigma / L2 sensitivity)\n\n{noise_table(nights)}\n",
          flush=True)
    if args.noise_only:
        return
    path = args.data
    if path is None:
        conversations, user_ids, data_seed = _numbers(args.generate, int)
        path = os.path.join(args.output, f"generated_{conversations}_{user_ids}_{data_seed}.jsonl")
        if not os.path.exists(path):
            os.makedirs(args.output, exist_ok=True)
            write_sample(path, conversations, user_ids, data_seed)
    dataset = load_dataset(path)
    planted = planted_topics(path)
    if not planted or not all(c in planted for c in dataset.conversation_ids):
        raise SystemExit(f"{path}: every record needs planted_topic (beam_jobs.generate_sample writes it)")
    embeddings = embed_cached(dataset.facets, config.embedding_model)
    print(f"{path}: {len(dataset):,} conversations, {len(set(dataset.user_ids)):,} users "
          f"(embedded or cached in {time.perf_counter() - started:.0f} s)", flush=True)
    rows = measure(dataset, embeddings, planted, nights, _numbers(args.scales, int), range(args.seeds), config)
    table = quality_table(rows)
    print(f"\nPer-night topic quality, mean over seeds 0-{args.seeds - 1} (min-max of recovered)\n\n{table}\n")
    write_csv(rows, os.path.join(args.output, "nightly_modes.csv"))
    with open(os.path.join(args.output, "nightly_modes.md"), "w") as handle:
        handle.write(f"{header}\n\n{noise_table(nights)}\n\n{table}\n")
    print(f"wrote {args.output}/nightly_modes.csv and .md ({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
