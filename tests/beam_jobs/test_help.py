"""`--help` (and `-h`) of both jobs: every flag of the job's params groups, in the groups of
docs/options.md (heading and intro from beam_jobs/option_docs.py), with its default, its choices and
whether it is required, read from the flags' declarations; printed to stdout, exit 0, before any other
work (no preflight, no ledger, no data).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

from backends.llm.config import LLMParams
from beam_jobs import build_keywords, insights, keyword_options, option_docs, options
from beam_jobs.keyword_options import BuildKeywordsParams, build_keywords_params
from beam_jobs.options import InsightsParams
from config.privacy import RETIRED_FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

JOBS = {"insights": (insights.run, InsightsParams), "build_keywords": (build_keywords.run, BuildKeywordsParams)}


def _help(job: str, *argv: str) -> tuple[int, str]:
    """The job's run(argv) exit code and what it printed on stdout (a SystemExit counts as its code)."""
    run, _ = JOBS[job]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = run(list(argv))
        except SystemExit as exit_:
            code = exit_.code or 0
    return code, out.getvalue()


def _entries(text: str) -> dict[str, str]:
    """Each listed --flag's entry (its line and the help under it), whitespace collapsed."""
    entries: dict[str, str] = {}
    for chunk in re.split(r"\n(?=  -)", text):
        match = re.match(r"\s*(?:-\w, )?--(\w+)", chunk)
        if match:
            entries[match.group(1)] = " ".join(chunk.split())
    return entries


def _required(job: str) -> dict[str, str]:
    """The flags the job cannot run without (each job's own data, which its check reads too)."""
    if job == "insights":
        return dict(options.REQUIRED_FLAGS)
    return {**keyword_options.REQUIRED_FLAGS, **keyword_options.DP_REQUIRED_FLAGS}


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    # One line per flag: argparse wraps at $COLUMNS, and would break a long default in two.
    monkeypatch.setenv("COLUMNS", "2000")


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_declared_flag_with_its_default_and_choices(job, flag):
    code, text = _help(job, flag)
    assert code == 0
    entries = _entries(text)
    required = _required(job)
    declared = [field for group in option_docs.groups(JOBS[job][1]) for field in group.fields]
    assert declared
    for field in declared:
        entry = entries.get(field.name)
        if field.name in RETIRED_FLAGS:
            assert entry is None or "Retired" in entry, entry
            continue
        assert entry is not None, f"--{field.name} is not in `{job} --help`"
        assert " ".join(field.metadata["help"].split()) in entry
        for choice in field.metadata["argparse"].get("choices") or ():
            assert str(choice) in entry
        if field.name in required:
            assert "(required" in entry, entry
        else:
            assert f"(default: {option_docs.default_text(field)})" in entry, entry
    assert entries["help"]  # -h, --help itself
    assert "(default: 30)" in entries["window_days"]
    assert "(default: false)" in entries["allow_rerun"] and "(default: unset)" in entries["seed"]
    assert "--runner" in text and "--project" in text  # Beam's own options are accepted too


@pytest.mark.parametrize("job", JOBS)
def test_help_groups_the_flags_as_docs_options_md_does(job):
    _, text = _help(job, "--help")
    flat = " ".join(text.split())
    headings = [match.start() for group in option_docs.groups(JOBS[job][1])
                for match in [re.search(rf"^{re.escape(group.heading)}:$", text, re.M)] if match]
    assert len(headings) == len(option_docs.groups(JOBS[job][1])), "a group heading is missing"
    assert headings == sorted(headings)
    for group in option_docs.groups(JOBS[job][1]):
        assert " ".join(group.intro.split()) in flat, group.heading
        section = text[text.index(f"\n{group.heading}:\n"):]
        following = [f"\n{other.heading}:\n" for other in option_docs.groups(JOBS[job][1]) if other != group]
        end = min([section.index(heading) for heading in following if heading in section] or [len(section)])
        assert set(_entries(section[:end])) >= {field.name for field in group.fields}, group.heading


def test_required_flags_are_marked_as_such():
    _, text = _help("insights", "--help")
    entries = _entries(text)
    assert "(required" in entries["input"] and "(required" in entries["output"]
    assert "(required" not in entries["private_output"]
    _, text = _help("build_keywords", "--help")
    entries = _entries(text)
    assert "(required" in entries["output"] and "(required" in entries["method"]
    for name in ("input", "date", "private_output"):
        assert "(required with --method tfidf, llm or hybrid" in entries[name], entries[name]


def test_help_does_no_other_work(monkeypatch, tmp_path):
    def no_preflight(self):
        raise AssertionError("--help ran the preflight")

    monkeypatch.setattr(LLMParams, "preflight", no_preflight)
    ledger = tmp_path / "ledger.json"
    for job in JOBS:
        code, text = _help(job, "--input", str(tmp_path / "none-*.jsonl"), "--output", str(tmp_path / "out"),
                           "--privacy_ledger", str(ledger), "--llm_backend", "local", "--help")
        assert code == 0 and "--input" in text
    assert not ledger.exists() and not (tmp_path / "out").exists()


def test_build_keywords_checks_the_requirements_its_help_shows(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from beam_jobs.keyword_options import BuildKeywordsOptions

    flags = {"method": "tfidf", "input": "logs/*.jsonl", "output": str(tmp_path / "kw" / "set.json"),
             "date": "2026-10-31", "private_output": str(tmp_path / "private")}
    required = _required("build_keywords")
    assert set(required) == set(flags)
    for name in required:
        argv = [item for key, value in flags.items() if key != name for item in (f"--{key}", value)]
        with pytest.raises(ValueError, match=f"--{name}"):
            build_keywords_params(PipelineOptions(argv).view_as(BuildKeywordsOptions))


def test_python_dash_m_insights_help():
    result = subprocess.run([sys.executable, "-m", "beam_jobs.insights", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env={**os.environ, "COLUMNS": "2000"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m beam_jobs.insights")
    entries = _entries(result.stdout)
    assert {field.name for group in option_docs.groups() for field in group.fields
            if field.name not in RETIRED_FLAGS} <= set(entries)
    assert "\nReading:\n" in result.stdout and "Traceback" not in result.stderr
