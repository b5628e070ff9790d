"""A multilingual planted-subject set of chatbot requests: does an embedding model group requests by
subject rather than by language?

    python -m beam_jobs.sample_multilingual --output sample/multilingual.jsonl --per_cell 30 --seed 7

The set, its subjects and languages, is synthetic/multilingual.py.
"""

from __future__ import annotations

import argparse
import os

from synthetic.multilingual import LANGUAGES, SUBJECTS, cell_texts, write_multilingual


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="JSON Lines file to write (.jsonl or .jsonl.gz)")
    parser.add_argument("--per_cell", type=int, default=30,
                        help=f"conversations per (subject, language) cell; at most {len(cell_texts(SUBJECTS[0], 'en'))}")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    lines = write_multilingual(args.output, args.per_cell, args.seed)
    print(f"wrote {lines} conversations ({len(SUBJECTS)} subjects x {len(LANGUAGES)} languages x {args.per_cell}) "
          f"to {args.output}")


if __name__ == "__main__":
    main()
