"""Progress on stderr for local runs: when it is on, what a line says, and a real run printing it."""

import io
import json
import os
import re
from pathlib import Path

import pytest

from beam_jobs.progress import ProgressReporter, format_duration, progress_enabled
from tests.support.small_run import CONVERSATIONS
from transforms import progress as registry


@pytest.mark.parametrize("mode, runner, running_mode, remote, expected", [
    ("auto", "FnApiRunner", "in_memory", False, True),
    ("auto", None, None, False, True),
    ("on", "FnApiRunner", "multi_threading", False, True),
    ("auto", "FnApiRunner", "multi_processing", False, False),
    ("on", "FnApiRunner", "multi_processing", False, False),
    ("on", "beam_jobs.dask_runner.PersistingDaskRunner", None, False, False),
    ("on", "DataflowRunner", None, True, False),
    ("auto", "DataflowRunner", None, True, False),
    ("off", "FnApiRunner", "in_memory", False, False),
])
def test_progress_is_on_only_where_stages_run_in_this_process(mode, runner, running_mode, remote, expected):
    enabled, why = progress_enabled(mode, runner, running_mode, remote)
    assert enabled is expected and why


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_lines_show_the_busiest_stage_its_share_of_the_expected_count_and_an_eta():
    clock, stream = FakeClock(), io.StringIO()
    reporter = ProgressReporter(max_conversations_per_user=5, block_size=4, kmeans_iterations=3, interval=3600,
                                stream=stream, clock=clock)
    reporter.start()
    try:
        assert reporter.line().startswith("starting")
        for user, records in (("u1", 7), ("u2", 2), ("u3", 3)):
            for _ in range(records):
                registry.note_valid_record(user)
                registry.advance("read")
        clock.now += 10
        assert reporter.line() == "reading and validating: 12 records, 1.2/s"
        # Bounding keeps min(n, 5) per user: 5 + 2 + 3 = 10 conversations of 3 users.
        registry.advance("bound_contributions", 3, 0.01)
        registry.advance("extract_facets", 10, 0.02)
        registry.advance("embed", 4, 8.0)
        clock.now += 8
        assert reporter.line() == "embedding: 4/10 conversations (40%), 0.5/s, ETA 12s"
        clock.now += 10
        assert reporter.line().endswith("(no change since the last line)")
        registry.advance("embed", 6, 12.0)
        registry.advance("dp_kmeans", 6, 0.5)  # 3 blocks of 4: projection and seeding so far, 3 x 5 passes
        clock.now += 2
        assert reporter.line().startswith("embedding: 10/10 conversations (100%)")
        registry.advance("dp_kmeans", 3, 0.9)
        clock.now += 2
        assert reporter.line().startswith("DP k-means: 9/15 block passes (60%)")
    finally:
        reporter.stop()
    assert stream.getvalue().strip() == "[progress 32s] done: 100% in 32s (12 records read, 10 of 10 conversations embedded)"
    before = registry.snapshot(5)[0]
    registry.advance("embed", 5)  # disabled after stop(): counts nothing
    assert registry.snapshot(5)[0] == before and before["embed"] == 10


def test_llm_calls_in_flight_take_the_line_with_calls_per_second_and_an_eta():
    from backends.llm.metrics import LiveCalls
    clock, stream = FakeClock(), io.StringIO()
    calls = LiveCalls(clock=clock)
    reporter = ProgressReporter(max_conversations_per_user=5, block_size=4, kmeans_iterations=3, interval=3600,
                                stream=stream, clock=clock, llm_calls=calls)
    reporter.start()
    try:
        for user in ("u1", "u2", "u3"):
            for _ in range(4):
                registry.note_valid_record(user)  # 12 kept conversations: 3 blocks of 4
        registry.advance("read", 12)
        calls.submitted("facets", 4)  # the first batch of facet calls
        clock.now += 10
        assert reporter.line() == "LLM facets: 0/12 calls (0%)"
        for _ in range(3):
            calls.done("facets")
        clock.now += 10
        assert reporter.line() == "LLM facets: 3/12 calls (25%), 0.15 calls/s, ETA 1m00s"
        calls.done("facets")
        registry.advance("extract_facets", 4, 0.1)
        assert reporter.line().startswith("extracting facets: 4/12")  # nothing in flight: the stage again
        registry.advance("sample_for_keywords", 1, 0.01)  # one block of three sampled: its calls go out
        calls.submitted("keywords", 3)
        calls.done("keywords")
        clock.now += 5
        assert reporter.line() == "LLM keywords: 1/~9 calls (11%), 0.20 calls/s, ETA 40s"
    finally:
        reporter.stop()


def test_durations_read_like_a_clock():
    assert [format_duration(s) for s in (0, 9.6, 65, 3725)] == ["0s", "10s", "1m05s", "1h02m"]


@pytest.mark.e2e
def test_a_local_run_prints_progress_and_writes_the_report_page(small_run):
    lines = [line for line in small_run.stderr.splitlines() if line.startswith("[progress")]
    print("\n".join(lines))
    assert any(re.search(r"\] embedding: [\d,]+/[\d,]+ conversations \(\d+%\)", line) for line in lines)
    assert re.search(rf"\] done: 100% in \w+ \({CONVERSATIONS} records read, ([\d,]+) of \1 conversations embedded\)$",
                     lines[-1])
    assert all(re.fullmatch(r"\[progress \w+\] [\w ,:/()%.\-]+", line) for line in lines)  # counts, never text

    output = Path(small_run.output)
    release = os.listdir(output / "release")
    assert sorted(release) == ["report.html", "report.json"]
    report = json.load(open(output / "release" / "report.json"))
    grouped = sorted(i for g in report["hierarchy"]["groups"] for i in g["topic_ids"])
    assert grouped == sorted(t["id"] for t in report["topics"]) and report["topics"]
    page = (output / "release" / "report.html").read_text()
    assert all(t["name"].replace("'", "&#39;") in page for t in report["topics"])


def test_the_job_builds_a_reporter_only_when_progress_is_on(capsys):
    import contextlib

    from apache_beam.options.pipeline_options import PipelineOptions

    from beam_jobs.insights import _progress
    from beam_jobs.job_runtime import use_local_engine
    from config.insights import InsightsOptions, insights_params

    def reporter_for(*flags):
        pipeline_options = PipelineOptions(["--input", "x", "--output", "y", *flags])
        use_local_engine(pipeline_options)
        return _progress(insights_params(pipeline_options.view_as(InsightsOptions)), pipeline_options)

    assert isinstance(reporter_for(), ProgressReporter)
    assert isinstance(reporter_for("--progress", "off"), contextlib.nullcontext)
    assert capsys.readouterr().err == ""
    assert isinstance(reporter_for("--progress", "on", "--direct_running_mode", "multi_processing"),
                      contextlib.nullcontext)
    assert "progress: off (--direct_running_mode=multi_processing" in capsys.readouterr().err
