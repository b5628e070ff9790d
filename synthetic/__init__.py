"""Synthetic chatbot logs with known truth, for tests, evaluations and benchmarks: never read by the job.

- `synthetic.sample`: a set of conversations drawn from the planted topics (`python -m beam_jobs.generate_sample`);
- `synthetic.stream`: nights of such conversations with planted trends (`python -m beam_jobs.generate_stream`);
- `synthetic.multilingual`: one-turn requests on eight subjects in twelve languages
  (`python -m beam_jobs.sample_multilingual`);
- `synthetic.topics` and `synthetic.facets`: the planted topics, and the languages and kinds of request
  planted on ten of them.

What they draw from is data, in synthetic/data/ (JSON, written for this project, no user data); the
modules hold only the drawing.
"""

from __future__ import annotations

import json
import os

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def load_data(name: str):
    """The parsed content of synthetic/data/`name` (shipped as package data, like beam_jobs/resources/)."""
    with open(os.path.join(DATA_DIR, name), encoding="utf-8") as handle:
        return json.load(handle)
