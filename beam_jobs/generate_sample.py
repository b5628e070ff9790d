"""Generates synthetic chatbot conversation logs in the pipeline's input schema.

    python -m beam_jobs.generate_sample --output sample/conversations.jsonl \
        --conversations 5000 --users 1800 --seed 7 --malformed 20

The generator, and what each flag plants, is synthetic/sample.py.
"""

from __future__ import annotations

import argparse
import os

from synthetic.sample import LENGTHS, write_sample
from synthetic.topics import PLANTED_TOPICS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="JSON Lines file to write (.jsonl or .jsonl.gz)")
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--users", type=int, default=1800)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--malformed", type=int, default=0, help="invalid lines to append")
    parser.add_argument("--days", type=int, default=1, help="spread timestamps over this many days")
    parser.add_argument("--topics", type=int, default=None,
                        help=f"draw from the first N planted topics (default: all {len(PLANTED_TOPICS)})")
    parser.add_argument("--lengths", choices=LENGTHS, default="planted",
                        help="planted: the planted conversations' lengths; real: a long-tailed spread like real logs")
    parser.add_argument("--facet_mix", action="store_true",
                        help="plant languages and kinds of request per topic (synthetic/data/facet_topics.json)")
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    lines = write_sample(args.output, args.conversations, args.users, args.seed, args.malformed, args.days,
                         args.topics, args.lengths, args.facet_mix)
    print(f"wrote {lines} lines ({args.conversations} conversations, {args.malformed} malformed) to {args.output}")


if __name__ == "__main__":
    main()
