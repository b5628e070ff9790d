"""Empirical membership inference (URANIA §F): can an attacker tell from the release whether one
sensitive conversation was in the input?

R runs on n conversations drawn from a data set; in a random half (the "in" runs) one of them is a
fixed sensitive conversation (its own user). The attacker's score for a run is the largest cosine
between the sensitive conversation's embedding and the embeddings of the released texts: each topic's
summary (name, description and keywords) and, with --set exemplars_per_topic=N, its synthetic
exemplars. ROC AUC of the scores separating "in" from "out" runs, with a
stratified bootstrap 95% confidence interval, for the DP pipeline and for SIMPLE-CLIO; AUC 0.5 means
the attacker learns nothing. The data set is embedded once (eval/data.py cache) and every run reuses
those vectors; the DP runs go through eval/urania_inprocess.py (the job's own mechanism code; what is
shared and what differs is listed there).

    python -m eval.audit.membership_inference --data ../shared/data/hh_rlhf_harmless_test.jsonl --runs 400 --n 100
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

import numpy as np

from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import RESULTS_DIR, TextEmbedder, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, run_urania
from eval.utility.simple_clio import SimpleClioParams, run_simple_clio
from eval.utility.utility_metrics import released_texts, report_summaries

# Invented for this benchmark: a rare, identifying, sensitive request.
SENSITIVE_CONVERSATION = (
    "My name is Harriet Quillfeather and three weeks ago I was diagnosed with early-onset Huntington's "
    "disease at 34. My employer, a small bakery on 14 Larkspur Lane, does not know yet. How do I tell my "
    "two daughters, and can the bakery fire me if I ask for shorter shifts?")
SENSITIVE_ID = "mi-sensitive-conversation"
SENSITIVE_USER = "mi-sensitive-user"
# With exemplars on: the same DP release scored without its exemplars, so that what the exemplars add
# to the attack is measured on the same runs and the same noise.
SUMMARIES_ONLY = "urania_summaries_only"


def roc_auc(scores_in, scores_out) -> float:
    """P(score_in > score_out) + 0.5 P(tie): the Mann-Whitney form of the ROC AUC."""
    from scipy.stats import rankdata
    a, b = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("need scores for both classes")
    ranks = rankdata(np.concatenate([a, b]))  # average ranks: a tie counts one half
    return float((ranks[: len(a)].sum() - len(a) * (len(a) + 1) / 2) / (len(a) * len(b)))


def bootstrap_auc_ci(scores_in, scores_out, resamples: int = 2000, level: float = 0.95,
                     seed: int = 0) -> tuple[float, float]:
    """Percentile interval of the AUC over stratified bootstrap resamples of both classes."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    values = [roc_auc(rng.choice(a, len(a)), rng.choice(b, len(b))) for _ in range(resamples)]
    tail = (1 - level) / 2
    return float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))


def roc_curve(scores_in, scores_out) -> tuple[np.ndarray, np.ndarray]:
    """(false positive rates, true positive rates) over every threshold, from (0,0) to (1,1)."""
    a, b = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    thresholds = np.unique(np.concatenate([a, b]))[::-1]
    tpr = [0.0] + [float((a >= t).mean()) for t in thresholds]
    fpr = [0.0] + [float((b >= t).mean()) for t in thresholds]
    return np.array(fpr), np.array(tpr)


def attack_score(target: np.ndarray, summaries: list[str], embed) -> float:
    """Max cosine between the target and the released summaries; -1 when nothing is released."""
    if not summaries:
        return -1.0
    return float((embed(summaries) @ target).max())


@dataclasses.dataclass(frozen=True)
class Pool:
    """The conversations the runs are drawn from: their ids, users and facets, and the facets' embeddings."""

    ids: list[str]
    users: list[str]
    facets: list[str]
    vectors: np.ndarray


def run_attack(pool: Pool, target_vector: np.ndarray, runs: int, n: int, config: UraniaConfig, clio_clusters: int,
               seed: int = 0, progress=None) -> dict:
    """Scores per pipeline and membership over `runs` runs."""
    rng = np.random.default_rng(seed)
    embed = TextEmbedder(config.embedding_model)
    membership = rng.permutation(np.arange(runs) % 2 == 0)  # exactly half "in"
    scores = {"urania": [], "simple_clio": []}
    if config.exemplars_per_topic:
        scores[SUMMARIES_ONLY] = []
    for run in range(runs):
        chosen = rng.choice(len(pool.ids), size=n - 1 if membership[run] else n, replace=False)
        ids = [pool.ids[i] for i in chosen]
        users = [pool.users[i] for i in chosen]
        facets = [pool.facets[i] for i in chosen]
        vectors = pool.vectors[chosen]
        if membership[run]:
            ids, users, facets = ids + [SENSITIVE_ID], users + [SENSITIVE_USER], facets + [SENSITIVE_CONVERSATION]
            vectors = np.vstack([vectors, target_vector[None, :]])
        dp = run_urania(ids, users, facets, vectors, config, seed=seed * 100_003 + run, noise_seed=None)
        clio = run_simple_clio(ids, users, facets, vectors, SimpleClioParams(num_clusters=clio_clusters, seed=run))
        scores["urania"].append(attack_score(target_vector, released_texts(dp), embed))
        scores["simple_clio"].append(attack_score(target_vector, report_summaries(clio), embed))
        if config.exemplars_per_topic:
            scores[SUMMARIES_ONLY].append(attack_score(target_vector, report_summaries(dp), embed))
        if progress and (run + 1) % 50 == 0:
            progress(run + 1)
    return {"membership": membership.tolist(), "scores": scores}


def summarise(result: dict, resamples: int = 2000) -> dict:
    member = np.array(result["membership"], dtype=bool)
    out = {}
    for pipeline, values in result["scores"].items():
        values = np.array(values)
        low, high = bootstrap_auc_ci(values[member], values[~member], resamples)
        out[pipeline] = {"auc": roc_auc(values[member], values[~member]), "ci95": [low, high],
                         "runs_in": int(member.sum()), "runs_out": int((~member).sum()),
                         "mean_score_in": float(values[member].mean()), "mean_score_out": float(values[~member].mean())}
    return out


def plot_roc(result: dict, summary: dict, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    member = np.array(result["membership"], dtype=bool)
    figure, axes = plt.subplots(figsize=(5, 5))
    for pipeline, label in (("urania", "URANIA (DP)"), ("simple_clio", "SIMPLE-CLIO (non-private)")):
        values = np.array(result["scores"][pipeline])
        fpr, tpr = roc_curve(values[member], values[~member])
        s = summary[pipeline]
        axes.plot(fpr, tpr, label=f"{label}: AUC {s['auc']:.2f} [{s['ci95'][0]:.2f}, {s['ci95'][1]:.2f}]")
    axes.plot([0, 1], [0, 1], linestyle=":", color="grey", label="chance")
    axes.set(xlabel="false positive rate", ylabel="true positive rate", title=title, xlim=(0, 1), ylim=(0, 1))
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def pool_results(results: list[dict]) -> dict:
    """Several run sets (e.g. one per --seed) as one: their runs are independent draws of the same
    experiment, so pooling them narrows the AUC's interval. Only the pipelines every set scored are
    pooled (a set run without exemplars has no urania_summaries_only)."""
    pipelines = [p for p in results[0]["scores"] if all(p in result["scores"] for result in results)]
    pooled = {"membership": [], "scores": {pipeline: [] for pipeline in pipelines}}
    for result in results:
        pooled["membership"] += result["membership"]
        for pipeline in pipelines:
            pooled["scores"][pipeline].extend(result["scores"][pipeline])
    return pooled


def print_summary(summary: dict) -> None:
    print("| pipeline | ROC AUC | 95% CI (bootstrap) | runs in / out |\n|---|---|---|---|")
    for pipeline, s in summary.items():
        print(f"| {pipeline} | {s['auc']:.3f} | [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] | {s['runs_in']} / {s['runs_out']} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Membership inference AUC: URANIA vs SIMPLE-CLIO.")
    parser.add_argument("--pool", nargs="+", metavar="RESULT_JSON",
                        help="instead of running: pool the runs of earlier result files (one per --seed) and "
                             "print their AUC and interval")
    parser.add_argument("--data", help="JSON Lines data set the runs are drawn from")
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--n", type=int, default=100, help="conversations per run")
    # k for both pipelines; URANIA's tau at this small n
    add_config_flags(parser, num_clusters=10, min_cluster_size=10, epsilon=JOB_DEFAULT, epsilon_weights=JOB_DEFAULT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=os.path.join(RESULTS_DIR, "membership_inference"))
    args = parser.parse_args(argv)
    if args.pool:
        results = []
        for path in args.pool:
            with open(path) as handle:
                results.append(json.load(handle))
        print(f"pooled {len(args.pool)} run sets, {sum(len(r['membership']) for r in results)} runs")
        print_summary(summarise(pool_results(results)))
        return
    if not args.data:
        parser.error("--data is required (or --pool)")
    started = time.time()
    dataset = load_dataset(args.data)
    vectors = embed_cached(dataset.facets)
    target = embed_cached([SENSITIVE_CONVERSATION])[0]
    config = config_from(args)
    pool = Pool(dataset.conversation_ids, dataset.user_ids, dataset.facets, vectors)
    result = run_attack(pool, target, args.runs, args.n, config, args.num_clusters, args.seed,
                        progress=lambda r: print(f"  {r}/{args.runs} runs, {time.time() - started:.0f} s", flush=True))
    summary = summarise(result)
    os.makedirs(args.output, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.data))[0]
    with open(os.path.join(args.output, f"{name}.json"), "w") as handle:
        json.dump({"args": vars(args), "summary": summary, **result}, handle)
    plot_roc(result, summary, os.path.join(args.output, f"{name}_roc.png"),
             f"Membership inference, {name}\nR={args.runs}, n={args.n}, k={args.num_clusters}")
    print_summary(summary)
    print(f"ROC curves: {os.path.join(args.output, name + '_roc.png')} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
