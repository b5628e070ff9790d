#!/usr/bin/env bash
# Infrastructure checked like code (run by .ci/run): hadolint over templates/Dockerfile, checkov over
# terraform/ and templates/Dockerfile. Exits non-zero on any finding. A finding is fixed, or skipped
# in the file itself with its reason: `#checkov:skip=CKV_ID:reason` inside the resource (the
# Dockerfile: a comment at its top), `# hadolint ignore=DLxxxx` above the instruction.
# Both tools come from PyPI (requirements-iac.txt) into their own venv, .venv-iac, apart from .venv:
# checkov's dependencies conflict with the job's pins.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-iac
.venv-iac/bin/pip install --quiet --upgrade pip
.venv-iac/bin/pip install --quiet -r requirements-iac.txt
# Any finding fails, down to hadolint's "info" level.
.venv-iac/bin/hadolint --no-color --failure-threshold info templates/Dockerfile
# --skip-download: checks ship with checkov; nothing is fetched from Prisma Cloud (no network needed).
# One call each: given -d and -f together, checkov scans only the directory.
.venv-iac/bin/checkov --quiet --compact --skip-download -d terraform
.venv-iac/bin/checkov --quiet --compact --skip-download --framework dockerfile -f templates/Dockerfile
echo "iac checks: hadolint and checkov found nothing"
