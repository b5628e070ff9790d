"""Projects a nightly run of N conversations on Dataflow from measured runs, and counts its LLM calls.

    .venv/bin/python bench/project_dataflow.py --run_stats OUT/private/run_stats.json [...more runs]
    .venv/bin/python bench/project_dataflow.py --run_stats ... --embed_speedup 1.9   # e.g. --embedding_backend=onnx

Input: the private/run_stats.json of runs measured here (bench/bench_pipeline.py leaves them in its
workdir): conversations read and kept, the job's wall time inside run() and the processing time per
stage. Model (stated in the output; every figure is a projection, not a Dataflow measurement):
 - cost per conversation = the measured wall time x the vCPUs of the measuring machine / conversations
   read (conservative: it counts idle and contended time, and start-up, as work);
 - Dataflow workers do that work at the same speed per vCPU (CPU only, no GPU), at --utilisation of
   their vCPUs (shuffle, stragglers, start-up), and the night has --night_hours;
 - --embed_speedup divides the embedding share only (e.g. the measured ONNX speed-up);
 - the kept fraction (contribution bounding, C conversations per user) and the keyword sample
   (~m per kept cluster, Poisson) are taken from the measured run's ratios and parameters.
"""

from __future__ import annotations

import argparse
import json
import math
import os

from config.clustering import ClusteringParams

# (vCPUs, GB of memory) of the machine types in the table.
MACHINES = {"n1-standard-4": (4, 15.0), "n2-standard-8": (8, 32.0)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run_stats", nargs="+", required=True, help="private/run_stats.json of measured runs")
    parser.add_argument("--given_rate", nargs="*", default=[], metavar="LABEL=CONV_PER_S",
                        help="extra rows from an end-to-end rate (read conversations/s on --measured_vcpus) "
                             "measured elsewhere, e.g. quiet=189 from the README's earlier quiet-machine run")
    parser.add_argument("--measured_vcpus", type=int, default=2, help="vCPUs of the machine the runs were measured on")
    parser.add_argument("--conversations", type=float, default=10_000_000, help="conversations read per night")
    parser.add_argument("--night_hours", type=float, default=4.0, help="the run must finish within this")
    parser.add_argument("--utilisation", type=float, default=0.7, help="share of worker vCPU time doing work")
    parser.add_argument("--embed_speedup", type=float, default=1.0, help="divides the embedding share of the cost")
    parser.add_argument("--num_clusters", type=int, default=ClusteringParams.num_clusters,
                        help="k (the job's --num_clusters)")
    parser.add_argument("--samples_per_cluster", type=int, default=200, help="m (the job's --samples_per_cluster)")
    parser.add_argument("--usd_per_vcpu_hour", type=float, default=0.056,
                        help="assumed Dataflow batch vCPU price; check the current price list")
    parser.add_argument("--usd_per_gb_hour", type=float, default=0.003557,
                        help="assumed Dataflow batch memory price; check the current price list")
    args = parser.parse_args(argv)

    n = args.conversations
    print(f"Projection for {n:,.0f} conversations read per night, {args.night_hours:g} h window, "
          f"{args.utilisation:.0%} utilisation, embedding speed-up {args.embed_speedup:g}x, CPU only")
    rows = []
    for path in args.run_stats:
        stats = json.load(open(path))
        read, kept = stats["read"], stats["conversations_after_bounding"]
        stage = stats["stage_seconds"]
        # Share of the stages' processing time (summed over workers) that is embedding.
        embed_share = stage.get("embed", 0.0) / (sum(stage.values()) or 1.0)
        workdir = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path)))))
        rows.append((f"{workdir}: {read:,} read, {stats['wall_seconds']:.0f} s",
                     stats["wall_seconds"] * args.measured_vcpus / read, embed_share))
    for given in args.given_rate:
        label, rate = given.split("=")
        rows.append((f"{label}: {float(rate):g} read conv/s", args.measured_vcpus / float(rate), rows[-1][2]))
    width = max(46, *(len(label) + 2 for label, _, _ in rows))
    print(f"{'measured run':<{width}}{'vCPU-s/conv':>12}{'embed share':>12}{'vCPU-hours':>11}  "
          + "  ".join(f"{name + ' workers x h (USD)':<34}" for name in MACHINES))
    for label, per_conversation, embed_share in rows:
        per_conversation *= (1 - embed_share) + embed_share / args.embed_speedup
        vcpu_hours = n * per_conversation / 3600 / args.utilisation
        cells = []
        for name, (vcpus, memory_gb) in MACHINES.items():
            workers = max(1, math.ceil(vcpu_hours / vcpus / args.night_hours))
            hours = vcpu_hours / vcpus / workers
            usd = workers * hours * (vcpus * args.usd_per_vcpu_hour + memory_gb * args.usd_per_gb_hour)
            cells.append(f"{workers:>4} x {hours:4.1f} h = {workers * hours:6.1f} ({usd:,.0f} USD)".ljust(34))
        print(f"{label:<{width}}{per_conversation:>12.4f}{embed_share:>12.0%}{vcpu_hours:>11,.0f}  " + "  ".join(cells))

    # LLM calls: from the last run's ratios (contribution bounding depends on how many users there are).
    kept_fraction = kept / read
    kept_clusters = min(args.num_clusters, stats.get("clusters_kept", args.num_clusters))
    facet_calls = n * kept_fraction
    keyword_calls = args.samples_per_cluster * kept_clusters  # Poisson: ~m per kept cluster at this scale
    naming_calls = kept_clusters
    print()
    print(f"LLM calls per night with LLM backends (kept fraction {kept_fraction:.2f} after bounding, "
          f"{kept_clusters} clusters released, m = {args.samples_per_cluster}); the offline backends make none:")
    print(f"{'keyword mode':<12}{'facet extraction':>18}{'keyword selection':>19}{'naming':>8}{'total':>14}")
    for mode, keywords in (("histogram", keyword_calls), ("centroid", 0)):
        total = facet_calls + keywords + naming_calls
        print(f"{mode:<12}{facet_calls:>18,.0f}{keywords:>19,.0f}{naming_calls:>8,}{total:>14,.0f}")


if __name__ == "__main__":
    main()
