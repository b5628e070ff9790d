"""The facet's truncation length (--facet_max_chars) chosen by the encoder rule (issue 58): the run's encoder at
each candidate length, speed and quality side by side.

    .venv/bin/python bench/bench_truncation.py
    .venv/bin/python bench/bench_truncation.py --chars 250 500 1000 2000 --rounds 3

For each length L, on the default encoder (config.embedding.DEFAULT_EMBEDDING_MODEL), one process, one BLAS thread:
  conv/s, x default   the real mix's user turns (../shared/data, joined as the job's facet extractor joins them)
                      cut at L, embedded in `--rounds` interleaved rounds (median); the ratio to the job's
                      default length (config.reading.ReadingParams.facet_max_chars)
  cut                 the share of those conversations longer than L
  en NMI              spherical k-means (k = planted topics) on generated conversations cut at L, against their
                      planted topics
  real NMI            the real mix's k-means (k = `--real_k`) on the texts cut at L against the k-means of other
                      seeds on the longest candidate's texts: how much of the clustering the cut keeps (the
                      longest length's own row is the k-means' seed-to-seed agreement)
  ml NMI subj         the multilingual set's (synthetic.multilingual) k-means against its subjects

Label fit on the real mix needs the whole in-process run, the judge reading every conversation at one length:
  .venv/bin/python -m eval.utility.label_fit --seeds 0 1 --data real=$R:20 --facet_max_chars L --judge_chars 2000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_encoders import REAL_FILES, SHARED, kmeans_nmi  # noqa: E402

from backends import embedding  # noqa: E402
from backends.offline import UserTurnsFacetExtractor  # noqa: E402
from config.embedding import Encoder  # noqa: E402
from config.reading import ReadingParams  # noqa: E402
from synthetic.multilingual import multilingual_conversations  # noqa: E402
from synthetic.sample import generate_records  # noqa: E402
from transforms.validation import parse_record  # noqa: E402

NO_CUT = 1 << 30


def user_turns(record: dict, chars: int) -> str:
    """The job's facet text of a raw record: its user turns, joined and cut at `chars` (backends.offline)."""
    return UserTurnsFacetExtractor(max_chars=chars).extract(parse_record(record, "bench", None))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--speed_texts", type=int, default=600)
    parser.add_argument("--english", type=int, default=1500)
    parser.add_argument("--real_k", type=int, default=20)
    parser.add_argument("--kmeans_seeds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    embedding.set_threads(1)
    encoder = Encoder(embedding.DEFAULT_EMBEDDING_MODEL)
    default = ReadingParams().facet_max_chars
    real = []
    for name in REAL_FILES:
        with open(os.path.join(SHARED, name)) as handle:
            real.extend(json.loads(line) for line in handle)
    full = [user_turns(r, NO_CUT) for r in real]
    english = list(generate_records(args.english, max(1, args.english // 3), args.seed))
    multilingual = multilingual_conversations(30, args.seed)
    rng = np.random.default_rng(args.seed)
    speed = [full[i] for i in rng.permutation(len(full))[:args.speed_texts]]

    seconds = {chars: [] for chars in args.chars}
    for _ in range(args.rounds):  # interleaved: every length once a round
        for chars in args.chars:
            texts = [text[:chars] for text in speed]
            started = time.perf_counter()
            embedding.encode(encoder, texts)
            seconds[chars].append(time.perf_counter() - started)
    rate = {chars: len(speed) / statistics.median(s) for chars, s in seconds.items()}

    longest = max(args.chars)
    real_labels = {}
    from sklearn.cluster import KMeans
    for chars in sorted(args.chars, reverse=True):
        vectors = embedding.encode(encoder, [text[:chars] for text in full])
        real_labels[chars] = [KMeans(n_clusters=args.real_k, n_init=4, random_state=s).fit_predict(vectors)
                              for s in range(args.kmeans_seeds)]
    print(f"{embedding.DEFAULT_EMBEDDING_MODEL}; {len(speed)} real texts timed (median of {args.rounds} interleaved "
          f"rounds, 1 thread); {len(full)} real conversations (k = {args.real_k}); {len(english)} generated; "
          f"{len(multilingual)} multilingual\n")
    print(" | ".join(("chars", "conv/s", f"x {default}", "cut", "en NMI", "real NMI vs " + str(longest), "ml NMI subj")))
    from sklearn.metrics import normalized_mutual_info_score
    for chars in args.chars:
        en_texts = [user_turns(r, chars) for r in english]
        topics = [r["planted_topic"] for r in english]
        (en_nmi,) = kmeans_nmi(embedding.encode(encoder, en_texts), [topics], len(set(topics)), args.kmeans_seeds)
        ml_vectors = embedding.encode(encoder, [user_turns(r, chars) for r in multilingual])
        (ml_nmi,) = kmeans_nmi(ml_vectors, [[r["subject"] for r in multilingual]], 20, args.kmeans_seeds)
        # Other seeds only: the longest length's own row is then the k-means' seed-to-seed agreement.
        real_nmi = statistics.fmean(normalized_mutual_info_score(a, b)
                                    for s, a in enumerate(real_labels[chars])
                                    for t, b in enumerate(real_labels[longest]) if s != t)
        cut = sum(len(text) > chars for text in full) / len(full)
        ratio = rate[chars] / rate[default] if default in rate else float("nan")
        print(f"{chars} | {rate[chars]:.1f} | {ratio:.2f}x | {cut:.2f} | {en_nmi:.3f} | {real_nmi:.3f} | {ml_nmi:.3f}")


if __name__ == "__main__":
    main()
