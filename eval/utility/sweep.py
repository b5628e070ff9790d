"""Privacy-utility sweep: the paper's configurations on one data set, against SIMPLE-CLIO.

For each (epsilon_clustering, epsilon_keywords) in 10/5, 8/4, 4/2, 2/1 and inf (every mechanism off),
runs URANIA in-process (eval/urania_inprocess.py: the job's mechanisms on cached embeddings;
epsilon_size stays at the job's default 1.0 in the private configurations) and compares its labelled
topics with SIMPLE-CLIO's on the same data (eval/utility/utility_metrics.py). Writes a markdown and a CSV
table and a plot of the metrics and of the number of released clusters against epsilon. With
--llm_backend openai|vertex|local, the LLM judge's mean ratings and preference are extra columns.

    python -m eval.utility.sweep --data ../shared/data/hh_rlhf_harmless_test.jsonl --num_clusters 30
"""

from __future__ import annotations

import argparse
import math
import os
import time

from config.privacy import PrivacyParams
from eval.config_flags import JOB_DEFAULT, add_config_flags
from eval.data import RESULTS_DIR, TextEmbedder, embed_cached, load_dataset
from eval.tables import cell, write_csv
from eval.urania_inprocess import UraniaConfig, run_urania
from eval.utility.simple_clio import SimpleClioParams, run_simple_clio
from eval.utility.utility_metrics import report_summaries, utility_metrics

PAPER_CONFIGS = ((10.0, 5.0), (8.0, 4.0), (4.0, 2.0), (2.0, 1.0), (math.inf, math.inf))
COLUMNS = ("eps_c/eps_hist", "epsilon_total", "released", "labelled", "jaccard_key_phrases", "jaccard_noun_chunks",
           "jaccard_tfidf", "jaccard_tokens", "jaccard_bigrams", "topic_overlap", "baseline_covered",
           "proximity_mean", "proximity_median")
# Only with an LLM judge (--llm_backend openai|vertex|local).
JUDGE_COLUMNS = ("judge_rating_private", "judge_rating_baseline", "private_preferred", "judge_judged",
                 "judge_failed")


def _label(eps_c: float, eps_hist: float) -> str:
    return "inf" if math.isinf(eps_c) else f"{eps_c:g}/{eps_hist:g}"


def sweep(dataset, embeddings, num_clusters: int, min_cluster_size: float, seed: int,
          configs=PAPER_CONFIGS, embed=None, progress=print, judge=None) -> list[dict]:
    embed = embed or TextEmbedder()
    baseline = run_simple_clio(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                               SimpleClioParams(num_clusters=num_clusters, seed=seed))
    baseline_summaries = report_summaries(baseline)
    rows = []
    for eps_c, eps_hist in configs:
        # The paper's per-stage epsilons, as the job takes them: their sum as the run's total (composed
        # with PLD, so each stage gets less noise than the sum promised) and their ratio as weights.
        config = UraniaConfig(num_clusters=num_clusters, min_cluster_size=min_cluster_size,
                              epsilon=eps_c + 1.0 + eps_hist,
                              epsilon_weights=(f"clustering:{eps_c},cluster_sizes:1,keyword_histograms:{eps_hist}"
                                               if math.isfinite(eps_c) else PrivacyParams.epsilon_weights))
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config, seed=seed)
        labelled = {"topics": [t for t in report["topics"] if t["keywords"]]}
        metrics = utility_metrics(report_summaries(labelled), baseline_summaries, embed=embed, judge=judge,
                                  seed=seed)
        jac, overlap, proximity = metrics["jaccard"], metrics["topic_overlap"], metrics["embedding_proximity"]
        rows.append({
            "eps_c/eps_hist": _label(eps_c, eps_hist),
            "epsilon_total": report["privacy"].get("epsilon") if report["privacy"].get("differentially_private")
            else math.inf,
            "released": len(report["topics"]), "labelled": len(labelled["topics"]),
            "jaccard_key_phrases": jac["key_phrases"], "jaccard_noun_chunks": jac["noun_chunks"],
            "jaccard_tfidf": jac["tfidf_terms"], "jaccard_tokens": jac["tokens"], "jaccard_bigrams": jac["bigrams"],
            "topic_overlap": overlap["private_matched"], "baseline_covered": overlap["baseline_covered"],
            "proximity_mean": proximity["mean"], "proximity_median": proximity["median"],
        })
        if judge is not None:
            verdicts = metrics["llm_judge"]
            rows[-1].update({"judge_rating_private": verdicts.get("mean_rating_private"),
                             "judge_rating_baseline": verdicts.get("mean_rating_baseline"),
                             "private_preferred": verdicts.get("private_preferred"),
                             "judge_judged": verdicts["judged"], "judge_failed": verdicts["failed"]})
        progress(f"  {rows[-1]['eps_c/eps_hist']}: {rows[-1]['released']} released, {rows[-1]['labelled']} labelled")
    return rows


def _columns(rows: list[dict]) -> tuple[str, ...]:
    return COLUMNS + JUDGE_COLUMNS if rows and "private_preferred" in rows[0] else COLUMNS


def markdown_table(rows: list[dict]) -> str:
    columns = _columns(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def write_outputs(rows: list[dict], folder: str, name: str, title: str) -> dict[str, str]:
    os.makedirs(folder, exist_ok=True)
    paths = {ext: os.path.join(folder, f"sweep_{name}.{ext}") for ext in ("md", "csv", "png")}
    with open(paths["md"], "w") as handle:
        handle.write(f"{title}\n\n{markdown_table(rows)}\n")
    write_csv(rows, paths["csv"], _columns(rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [row["eps_c/eps_hist"] for row in rows]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for column in ("jaccard_key_phrases", "jaccard_noun_chunks", "jaccard_tfidf", "jaccard_tokens",
                   "jaccard_bigrams", "topic_overlap", "proximity_mean"):
        left.plot(labels, [row[column] if row[column] is not None else float("nan") for row in rows],
                  marker="o", label=column)
    left.set(xlabel="ε_c / ε_hist", ylabel="metric vs SIMPLE-CLIO", title=title)
    left.legend(fontsize=7)
    right.plot(labels, [row["released"] for row in rows], marker="o", label="released")
    right.plot(labels, [row["labelled"] for row in rows], marker="s", label="labelled (≥1 keyword)")
    right.set(xlabel="ε_c / ε_hist", ylabel="clusters", title="clusters released")
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(paths["png"], dpi=110)
    plt.close(figure)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Privacy-utility sweep over the paper's epsilon configurations.")
    parser.add_argument("--data", required=True)
    add_config_flags(parser, overridable=False, num_clusters=30, min_cluster_size=JOB_DEFAULT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=os.path.join(RESULTS_DIR, "sweep"))
    from eval.utility.llm_judge import add_llm_arguments, judge_from_args
    add_llm_arguments(parser)
    args = parser.parse_args(argv)
    judge = judge_from_args(args, parser)
    started = time.time()
    dataset = load_dataset(args.data)
    embeddings = embed_cached(dataset.facets)
    name = os.path.splitext(os.path.basename(args.data))[0]
    rows = sweep(dataset, embeddings, args.num_clusters, args.min_cluster_size, args.seed, judge=judge)
    title = f"{name}: {len(dataset)} conversations, k={args.num_clusters}, tau={args.min_cluster_size:g}, seed {args.seed}"
    paths = write_outputs(rows, args.output, name, title)
    print(title)
    print(markdown_table(rows))
    print(f"wrote {paths['md']}, {paths['csv']}, {paths['png']} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
