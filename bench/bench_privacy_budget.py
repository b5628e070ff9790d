"""What PLD composition buys: a run's real total, the noise joint calibration saves, and the nights a
ledger window admits.

    python -m bench.bench_privacy_budget [--total_epsilon 7] [--delta 1e-6] [--window_epsilon 30]

1. The default per-stage noise (clustering 4, cluster sizes 1, keyword histograms 2, delta split in
   half between k-means and the histograms) composed with PLD, against the 7.0 basic composition reports.
2. Each stage's noise at the same total when all stages are calibrated jointly (dp_ops.joint_calibration).
3. How many nightly runs a window capped at --window_epsilon admits when the ledger composes nights
   with PLD (dp_ops.budget_ledger) at its fixed window delta (--window_delta, the job's default), at
   the old and at the jointly calibrated noise, against basic composition; and the nightly plan
   (dp_ops.nightly_plan): the per-night epsilon that lets a run every night fit every window.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import time

from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, BudgetRefused, Ledger, LedgerEntry
from dp_ops.dp_events import composed_epsilon, event_to_json
from dp_ops.joint_calibration import calibrate_jointly, calibrate_separately, clustering_request, count_request
from dp_ops.nightly_plan import plan_nights

MAX_CONVERSATIONS_PER_USER = 5
KMEANS_ITERATIONS = 3
KEYWORD_PARTITIONS_PER_USER = 10
WEIGHTS = {"clustering": 4.0, "cluster_sizes": 1.0, "keyword_histograms": 2.0}


def default_requests():
    return [clustering_request(WEIGHTS["clustering"], KMEANS_ITERATIONS),
            count_request("cluster_sizes", WEIGHTS["cluster_sizes"], "laplace", l0=1, linf=MAX_CONVERSATIONS_PER_USER),
            count_request("keyword_histograms", WEIGHTS["keyword_histograms"], "gaussian",
                          l0=KEYWORD_PARTITIONS_PER_USER)]


def nights_admitted(events: list, run_epsilon: float, run_delta: float, window_epsilon: float,
                    max_delta_per_window: float, limit: int = 60) -> int:
    """Nights the ledger admits in a row, one a day, within one 30-day window."""
    ledger = Ledger()
    start = dt.date(2026, 11, 1)
    for night in range(limit):
        date = (start + dt.timedelta(days=night)).isoformat()
        try:
            ledger.check(date, run_epsilon, window_epsilon, 30, allow_rerun=False, delta=run_delta, events=events,
                         max_delta_per_window=max_delta_per_window)
        except BudgetRefused:
            return night
        ledger = ledger.with_entry(LedgerEntry(run_id=f"night-{night}", date=date, epsilon=run_epsilon,
                                               delta=run_delta, status="committed", recorded_at="", output="",
                                               events=tuple(event_to_json(e) for e in events)))
    return limit


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total_epsilon", type=float, default=7.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--window_epsilon", type=float, default=30.0)
    parser.add_argument("--window_delta", type=float, default=DEFAULT_WINDOW_DELTA)
    args = parser.parse_args(argv)
    started = time.time()
    requests = default_requests()
    weights = sum(WEIGHTS.values())
    shares = {stage: args.total_epsilon * weight / weights for stage, weight in WEIGHTS.items()}
    # The old calibration: each stage alone at its share; delta in half to k-means and the histograms.
    separate = calibrate_separately(requests, {"clustering": (shares["clustering"], args.delta / 2),
                                               "cluster_sizes": (shares["cluster_sizes"], 0.0),
                                               "keyword_histograms": (shares["keyword_histograms"], args.delta / 2)})
    separate_events = [stage.event() for stage in separate.values()]
    separate_total = composed_epsilon(separate_events, args.delta)
    print(f"1. Default noise, each stage calibrated alone to epsilon {shares['clustering']:g} / "
          f"{shares['cluster_sizes']:g} / {shares['keyword_histograms']:g}:")
    print(f"   basic composition reports epsilon {sum(shares.values()):.3f}; PLD composition at delta "
          f"{args.delta:g}: epsilon {separate_total:.3f}")

    joint = calibrate_jointly(args.total_epsilon, args.delta, requests)
    print(f"\n2. Joint calibration to epsilon {args.total_epsilon:g} at delta {args.delta:g} (weights "
          f"{' / '.join(f'{w:g}' for w in WEIGHTS.values())}): PLD composition {joint.epsilon_spent:.4f}, "
          f"noise scale factor {joint.noise_scale:.4f}")
    print(f"   {'stage':<20}{'noise':<26}{'separately':>12}{'jointly':>12}{'ratio':>8}   PipelineDP budget (jointly)")
    for stage, old in separate.items():
        new = joint.stages[stage]
        what = "Laplace scale" if old.request.noise == "laplace" else "Gaussian sigma"
        what += f" (x{old.request.releases})" if old.request.releases > 1 else ""
        budget = ("-" if new.pipeline_dp_budget is None
                  else f"epsilon {new.pipeline_dp_budget[0]:.4f}, delta {new.pipeline_dp_budget[1]:g}")
        print(f"   {stage:<20}{what:<26}{old.noise_std_parameter:>12.4f}{new.noise_std_parameter:>12.4f}"
              f"{new.noise_std_parameter / old.noise_std_parameter:>8.3f}   {budget}")

    print(f"\n3. Nights a window capped at epsilon {args.window_epsilon:g} admits (one run a night, 30-day window):")
    print(f"   basic composition, {sum(shares.values()):g} a night: "
          f"{math.floor(args.window_epsilon / sum(shares.values()) + 1e-9)}")
    runs = {"old noise (PLD total %.3f)" % separate_total: (separate_events, separate_total),
            "joint noise (PLD total %.3f)" % joint.epsilon_spent: (joint.events(), joint.epsilon_spent)}
    for name, (events, run_epsilon) in runs.items():
        admitted = nights_admitted(events, run_epsilon, args.delta, args.window_epsilon, args.window_delta)
        print(f"   PLD across nights, {name}: {admitted} at window delta {args.window_delta:g}")
    plan = plan_nights(requests, max_epsilon_per_window=args.window_epsilon, window_delta=args.window_delta,
                       window_days=30, night_delta=args.delta)
    admitted = nights_admitted(plan.calibration.events(), plan.night_epsilon, args.delta, args.window_epsilon,
                               args.window_delta)
    ratio = plan.calibration.stages["clustering"].noise_multiplier / joint.stages["clustering"].noise_multiplier
    print(f"   the nightly plan: epsilon {plan.night_epsilon:.3f} a night (k-means noise x{ratio:.2f} of the joint run's), "
          f"{admitted} nights admitted (the bench stops at 60), a full window composes to "
          f"{plan.window_epsilon:.3f}")
    print(f"\n({time.time() - started:.1f} s)")


if __name__ == "__main__":
    main()
