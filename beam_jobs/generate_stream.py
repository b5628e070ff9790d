"""Generates a stream of nightly chatbot logs with planted trends, for evaluating nightly runs.

    python -m beam_jobs.generate_stream --output stream --start 2026-10-01 --nights 60 \
        --conversations_per_night 1000 --users 3000 --seed 7

writes stream/dt=YYYY-MM-DD/conversations.jsonl for each night and stream/planted.json, the private
ground truth; the generator, its layout and its trends are synthetic/stream.py.
"""

from __future__ import annotations

import argparse
import json
import os

from synthetic.stream import PLANTED_FILE, add_stream_arguments, spec_from_args, write_stream


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="folder to write dt=YYYY-MM-DD/ folders and planted.json into")
    add_stream_arguments(parser)
    args = parser.parse_args(argv)
    spec = spec_from_args(args)
    planted = write_stream(args.output, spec)
    total = sum(n["conversations"] for n in planted["nights"])
    print(f"wrote {spec.nights} nights ({planted['dates'][0]} .. {planted['dates'][-1]}), {total} conversations, "
          f"to {args.output}; ground truth in {os.path.join(args.output, PLANTED_FILE)}")
    for trend in planted["trends"]:
        if trend["kind"] != "steady":
            print(f"  {trend['kind']}: {trend['topic']} " + json.dumps({k: v for k, v in trend.items()
                                                                      if k not in ("topic", "kind")}))


if __name__ == "__main__":
    main()
