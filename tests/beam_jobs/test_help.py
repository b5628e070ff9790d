"""`--help` (and `-h`) of both jobs: every flag of the job's params groups, in the groups of
docs/options.md (heading and intro from beam_jobs/option_docs.py), the flags a user sets first and the
advanced ones in one last group, each with the first sentence of its help, its default, its choices and
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

from backends.llm import config as llm_config
from beam_jobs import build_keywords, insights, job_help, option_docs
from config import keyword_set
from config.insights import REQUIRED_FLAGS, InsightsParams
from config.keyword_set import BuildKeywordsParams, build_keywords_params
from config.privacy import RETIRED_FLAGS
from core.params import is_advanced

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
        return dict(REQUIRED_FLAGS)
    return {**keyword_set.REQUIRED_FLAGS, **keyword_set.DP_REQUIRED_FLAGS}


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
        assert job_help.summary(field.metadata["help"]) in entry
        for choice in field.metadata["argparse"].get("choices") or ():
            assert str(choice) in entry
        if field.name in required:
            assert "(required" in entry, entry
        elif field.default in (None, ""):
            # nothing appended: "unset" says nothing, and the help says what leaving it out does
            assert f"{job_help.summary(field.metadata['help'])} (default" not in entry, entry
        else:
            assert f"(default: {option_docs.default_text(field)})" in entry, entry
    assert entries["help"]  # -h, --help itself
    assert "(default: 30)" in entries["window_days"]
    assert "(default: false)" in entries["allow_rerun"] and "(default: unset)" not in text
    assert "--runner" in text and "--project" in text  # Beam's own options are accepted too


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """The help's argument groups in order (the first, argparse's own "options", left out), each as its
    heading and the flags it lists, in order."""
    parts = re.split(r"^(\S[^\n]*):\n", text, flags=re.M)
    return [(heading, list(_entries(body))) for heading, body in zip(parts[1::2], parts[2::2])
            if heading != "options"]


@pytest.mark.parametrize("job", JOBS)
def test_help_groups_the_flags_as_docs_options_md_does(job):
    _, text = _help(job, "--help")
    flat = " ".join(text.split())
    groups = option_docs.groups(JOBS[job][1])
    user_groups = [group for group in groups if group.user_fields]
    expected = [(group.heading, [field.name for field in group.user_fields]) for group in user_groups]
    expected.append((option_docs.ADVANCED_HEADING, [field.name for group in groups for field in group.advanced_fields]))
    assert _sections(text) == expected
    for group in user_groups:
        assert " ".join(group.summary.split()) in flat, group.heading
    assert " ".join(option_docs.ADVANCED_INTRO.split()) in flat


@pytest.mark.parametrize("job", JOBS)
def test_help_leads_with_the_flags_a_user_sets_and_ends_with_the_advanced_ones(job):
    _, text = _help(job, "--help")
    sections = _sections(text)
    declared = {field.name: field for group in option_docs.groups(JOBS[job][1]) for field in group.fields}
    *user, (last_heading, advanced) = sections
    assert last_heading == option_docs.ADVANCED_HEADING and advanced
    assert all(flags for _, flags in user), f"a user group lists no flag: {[h for h, flags in user if not flags]}"
    shown_first = [name for _, flags in user for name in flags]
    assert shown_first and not [name for name in shown_first if is_advanced(declared[name])], "an advanced flag leads"
    assert [name for name in advanced if not is_advanced(declared[name])] == [], "a user flag is under Advanced"
    # every flag once: the user part and Advanced hold every declared flag between them
    assert sorted(shown_first + advanced) == sorted(declared)


# The user part of `python -m beam_jobs.insights --help` (up to the Advanced heading) at 80 columns: 159
# lines when this was written (the whole help was 507 before the advanced flags had a group of their own).
USER_PART_MAX_LINES = 170


def test_the_user_part_of_the_help_stays_short(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for job in JOBS:
        _, text = _help(job, "--help")
        lines = text.splitlines()
        user_part = lines[:lines.index(f"{option_docs.ADVANCED_HEADING}:")]
        assert len(user_part) <= USER_PART_MAX_LINES, (
            f"`{job} --help` shows {len(user_part)} lines before the advanced flags: keep each flag's first "
            f"sentence short, or declare a flag a user rarely sets with advanced_flag")


# At most about three lines of help at 80 columns.
SUMMARY_MAX_CHARS = 200


def test_each_flag_shows_one_short_sentence():
    for job in JOBS.values():
        for group in option_docs.groups(job[1]):
            for field in group.fields:
                shown = job_help.summary(field.metadata["help"])
                assert len(shown) <= SUMMARY_MAX_CHARS, (
                    f"--{field.name}: --help shows {len(shown)} characters; end the help's first sentence sooner")


@pytest.mark.parametrize("text,first", [
    ("k for DP k-means. Fixed by the operator.", "k for DP k-means."),
    ("One sentence only", "One sentence only"),
    ("Server URL, e.g. http://host:8000/v1 (key from $KEY). More.", "Server URL, e.g. http://host:8000/v1 (key from $KEY)."),
    ("How votes count. weighted: per user; count: per pair. Then more.", "How votes count. weighted: per user; count: per pair."),
    ("Seeds (not the noise. Really) and more. Next.", "Seeds (not the noise. Really) and more."),
    ("Threads; 0 is auto. 0 (default) = auto. More", "Threads; 0 is auto. 0 (default) = auto."),
    ("A flag\n   whose help wraps. Second.", "A flag whose help wraps."),
])
def test_the_help_of_a_flag_is_its_first_sentence(text, first):
    assert job_help.summary(text) == first


# The flags the README's quick start and the documented nightly command (docs/production.md) pass, and
# those only an evaluation or a test sets.
SET_BY_USERS = ("input", "output", "epsilon", "delta", "num_clusters", "kmeans_iterations", "date",
                "private_output", "privacy_ledger", "max_epsilon_per_window", "window_days", "cadence_days",
                "llm_backend", "llm_steps", "embedding_model", "keyword_set", "themes", "facets", "centre_decoder")
ADVANCED = ("noise_seed", "seed", "epsilon_weights", "keyword_votes", "token_decoding_steps", "projection_dim",
            "warm_prior", "category_vote_share", "false_keywords_per_topic", "keyword_mode", "epsilon_clustering")


def test_the_flags_a_user_sets_lead_and_the_evaluation_ones_are_advanced():
    _, text = _help("insights", "--help")
    *user, (_, advanced) = _sections(text)
    shown_first = {name for _, flags in user for name in flags}
    assert set(SET_BY_USERS) <= shown_first, set(SET_BY_USERS) - shown_first
    assert set(ADVANCED) <= set(advanced), set(ADVANCED) - set(advanced)


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
    def no_preflight(params):
        raise AssertionError("--help ran the preflight")

    monkeypatch.setattr(llm_config, "preflight", no_preflight)
    ledger = tmp_path / "ledger.json"
    for job in JOBS:
        code, text = _help(job, "--input", str(tmp_path / "none-*.jsonl"), "--output", str(tmp_path / "out"),
                           "--privacy_ledger", str(ledger), "--llm_backend", "local", "--help")
        assert code == 0 and "--input" in text
    assert not ledger.exists() and not (tmp_path / "out").exists()


def test_build_keywords_checks_the_requirements_its_help_shows(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from config.keyword_set import BuildKeywordsOptions

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
