"""The canary generator, the leak scanner and the release gate on the generator's canaries."""

import collections
import json
import os
import re

import pytest

from core.pii_patterns import PII_PATTERNS
from core.records import Conversation
from core.run_context import make_run_context
from eval.audit import canaries as bench
from eval.audit.canary_generator import CANARY_KINDS, generate_canary_records, write_canary_sample
from publishing.release_gate import load_canaries, scan
from transforms.finalize_run import ReleaseGateFailed, finalize
from transforms.validation import parse_record


@pytest.fixture(scope="module")
def sample():
    return generate_canary_records(2000, 700, seed=5, fraction=0.6)


def test_about_the_requested_fraction_carries_a_canary(sample):
    records, canaries = sample
    assert len(records) == 2000
    assert abs(len(canaries) / 2000 - 0.6) < 0.04  # binomial sd ~0.011
    assert generate_canary_records(300, 100, seed=5, fraction=0.0)[1] == []


def test_canaries_are_unique_and_each_in_its_own_conversations_first_user_turn(sample):
    records, canaries = sample
    assert len({c["canary"].lower() for c in canaries}) == len(canaries)
    by_id = {r["conversation_id"]: r for r in records}
    everything = "\n".join(m["content"] for r in records for m in r["messages"]).lower()
    for canary in canaries[:300]:
        record = by_id[canary["conversation_id"]]
        first_user = next(m["content"] for m in record["messages"] if m["role"] == "user")
        assert canary["canary"] in first_user
        assert canary["user_id"] == record["user_id"]
        assert everything.count(canary["canary"].lower()) == 1


def test_every_kind_is_planted_and_pii_kinds_match_the_gates_patterns(sample):
    _, canaries = sample
    assert set(collections.Counter(c["kind"] for c in canaries)) == set(CANARY_KINDS)
    for canary in canaries:
        if canary["kind"] == "email":
            assert re.fullmatch(r"[a-z]+\.[a-z]+\.\d{5}@example\.com", canary["canary"])
        if canary["kind"] in ("email", "phone", "street_address"):
            assert PII_PATTERNS[canary["kind"]].search(canary["canary"]), canary
        assert [f.kind for f in scan("r.txt", canary["canary"].encode(), (canary["canary"],))].count("canary") == 1


def test_records_are_valid_input(sample):
    records, _ = sample
    for record in records[:200]:
        assert isinstance(parse_record(json.dumps(record).encode(), "x", 1), Conversation)


def _fake_run(tmp_path, canaries):
    """A run folder whose release leaks canaries[0] in topic 3 and canaries[1] in an HTML file."""
    run_dir = tmp_path / "run"
    (run_dir / "release" / "html").mkdir(parents=True)
    (run_dir / "private").mkdir()
    report = {"topics": [
        {"id": 3, "name": "Home repair", "description": f"e.g. {canaries[0]['canary']}", "keywords": [], "size": 9},
        {"id": 4, "name": "Cooking", "description": "Conversations about cooking.", "keywords": [], "size": 9}]}
    (run_dir / "release" / "report.json").write_text(json.dumps(report))
    (run_dir / "release" / "html" / "index.html").write_text(f"<p>{canaries[1]['canary'].upper()}</p>")
    assignments = {canaries[0]["conversation_id"]: 3, canaries[1]["conversation_id"]: 4,
                   canaries[2]["conversation_id"]: 4, canaries[3]["conversation_id"]: 5}
    with open(run_dir / "private" / "assignments.jsonl", "w") as handle:
        for conversation_id, cluster in assignments.items():
            handle.write(json.dumps({"conversation_id": conversation_id, "cluster_id": cluster}) + "\n")
    return str(run_dir)


def test_leak_scanner_finds_planted_canaries_in_a_fake_release(tmp_path, sample):
    _, canaries = sample
    planted = canaries[:4]
    run_dir = _fake_run(tmp_path, planted)
    files = bench.released_files(run_dir)
    assert len(files) == 2  # report.json and html/index.html, at any depth
    table = bench.leak_table(files, planted, bench.read_assignments(run_dir))
    assert table["canaries_leaked"] == 2 and table["canary_leak_rate"] == 0.5
    # clusters 3, 4, 5 hold canaries; 3's topic text leaks one; 4's canary leaked only via the HTML
    # file, not its topic text; 5 was not released
    assert table["canary_bearing_clusters"] == 3 and table["canary_bearing_clusters_released"] == 2
    assert table["clusters_leaking"] == 1 and table["cluster_leak_rate"] == pytest.approx(1 / 3)
    verdict = bench.gate_verdict(files, [c["canary"] for c in planted])
    assert verdict["status"] == "rejected" and verdict["kinds"]["canary"] == 2
    assert "canaries leaked" in bench.format_table("test", table, verdict, None)


def test_a_clean_release_leaks_nothing(tmp_path, sample):
    _, canaries = sample
    run_dir = tmp_path / "clean"
    (run_dir / "release").mkdir(parents=True)
    (run_dir / "release" / "report.json").write_text(json.dumps(
        {"topics": [{"id": 1, "name": "Cooking", "description": "About cooking.", "keywords": ["cooking"],
                     "size": 5551234}], "privacy": {"epsilon": 6.9999987443256}}))
    files = bench.released_files(str(run_dir))
    table = bench.leak_table(files, canaries, {})
    assert table["canaries_leaked"] == 0 and table["pii_regex_hits"] == {}
    assert bench.gate_verdict(files, [c["canary"] for c in canaries])["status"] == "passed"


def test_release_gate_reads_the_generators_canary_files(tmp_path):
    paths = write_canary_sample(str(tmp_path), 200, 80, seed=2)
    from_text = load_canaries(paths["canaries.txt"])
    from_jsonl = load_canaries(paths["canaries.jsonl"])
    assert from_text == from_jsonl and len(from_text) > 80
    with open(paths["canaries.jsonl"]) as handle:
        assert from_text == tuple(json.loads(line)["canary"] for line in handle)


def _pending_run(tmp_path, extra_html: str):
    context = make_run_context(str(tmp_path / "in.jsonl"), str(tmp_path / "out"), None)
    pending_dir = os.path.dirname(context.report_pending)
    os.makedirs(os.path.join(pending_dir, "html"))
    with open(context.report_pending, "w") as handle:
        json.dump({"topics": [], "privacy": {"epsilon": 7.0, "delta": 1e-6}}, handle)
    with open(os.path.join(pending_dir, "html", "index.html"), "w") as handle:
        handle.write(extra_html)
    return context


def test_release_gate_scans_and_rejects_files_in_subfolders(tmp_path):
    paths = write_canary_sample(str(tmp_path / "canaries"), 100, 40, seed=3)
    canaries = load_canaries(paths["canaries.jsonl"])
    context = _pending_run(tmp_path, f"<p>{canaries[0]}</p>")
    with pytest.raises(ReleaseGateFailed):
        finalize(context.report_pending, context, canaries, None)
    assert os.path.exists(os.path.join(context.rejected_dir, "html", "index.html"))
    assert not os.path.exists(context.path("release"))
    with open(context.private("release_gate.json")) as handle:
        gate = json.load(handle)
    assert gate["status"] == "rejected" and {f["kind"] for f in gate["findings"]} >= {"canary"}


def test_release_gate_publishes_a_clean_release_with_its_subfolders(tmp_path):
    context = _pending_run(tmp_path, "<p>Cooking and baking</p>")
    assert finalize(context.report_pending, context, ("never released",), None) == context.path("release", "report.json")
    assert os.path.exists(context.path("release", "html", "index.html"))
    assert os.path.exists(context.path("release", "report.json"))


def test_exemplars_are_counted_once_and_scanned_as_topic_text(tmp_path, sample):
    _, canaries = sample
    run_dir = tmp_path / "run"
    report = {"topics": [
        {"id": 3, "name": "Home repair", "description": "About repairs.", "keywords": ["plumbing"], "size": 9,
         "exemplars": [{"text": "How do I fix a leaking tap?", "similarity_to_centre": 0.61},
                       {"text": f"Write to {canaries[0]['canary']} about my tap.", "similarity_to_centre": 0.5}]},
        {"id": 4, "name": "Cooking", "description": "About cooking.", "keywords": ["baking"], "size": 9,
         "exemplars": [{"text": "How do I fix a leaking tap?", "similarity_to_centre": 0.2}]}]}
    for folder in ("release", "private/release.pending"):  # the same report in two folders counts once
        (run_dir / folder).mkdir(parents=True)
        (run_dir / folder / "report.json").write_text(json.dumps(report))
    files = bench.released_files(str(run_dir))
    table = bench.leak_table(files, canaries[:2], {canaries[0]["conversation_id"]: 3,
                                                   canaries[1]["conversation_id"]: 4})
    assert table["exemplars_released"] == 3
    assert table["canaries_leaked"] == 1 and table["clusters_leaking"] == 1
    assert bench.gate_verdict(files, [canaries[0]["canary"]])["kinds"]["canary"] == 2
    assert bench.released_exemplars({"r.json": json.dumps({"topics": [{"id": 1}]}).encode()}) == 0


def test_unknown_flags_go_to_the_job_and_only_to_it(tmp_path, sample, monkeypatch, capsys):
    import subprocess
    paths = write_canary_sample(str(tmp_path / "data"), 60, 30, seed=4)
    commands = []

    def fake_job(command, **kwargs):
        commands.append(command)
        output = command[command.index("--output") + 1]
        os.makedirs(os.path.join(output, "release"))
        with open(os.path.join(output, "release", "report.json"), "w") as handle:
            json.dump({"topics": []}, handle)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(bench.subprocess, "run", fake_job)
    data = os.path.dirname(paths["canaries.jsonl"])
    assert bench.main(["--pipeline", "urania", "--data", data, "--output", str(tmp_path / "run"), "--gate",
                       "--", "--exemplars_per_topic", "3", "--exemplar_rounds", "1"]) == 0
    command = commands[0]
    start = command.index("--exemplars_per_topic")
    assert command[start:start + 4] == ["--exemplars_per_topic", "3", "--exemplar_rounds", "1"]
    assert "--" not in command and "--canary_file" in command
    assert "synthetic exemplars released" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--pipeline", "simple_clio", "--data", data, "--exemplars_per_topic", "3"])


def test_every_decoded_output_is_counted_and_checked_on_its_own(tmp_path, sample):
    _, canaries = sample
    phrase, email, other = (next(c for c in canaries if c["kind"] == kind) for kind in ("phrase", "email", "phone"))
    leaked_in_token, leaked_in_name = phrase["canary"], email["canary"]
    report = {"topics": [
        {"id": 1, "name": "Home repair", "description": "Fixing taps.", "keywords": ["plumbing"], "size": 9,
         "name_evidence": "dp_centre_decoded", "name_from_labels": "Plumbing",
         "token_decoded": {"description": f"Call {leaked_in_token} about it", "evidence": "dp_token_decoded"}},
        {"id": 2, "name": f"Mail {leaked_in_name.upper()}", "description": "Write to bob@example.org.",
         "keywords": [], "size": 9, "name_evidence": "dp_centre_decoded",
         "token_decoded": {"description": "How to cook rice", "evidence": "dp_token_decoded"}},
        # Named by its votes: not a decoded output, though it holds a canary.
        {"id": 3, "name": other["canary"], "description": "About it.", "keywords": [], "size": 9}]}
    for folder in ("release", "private/release.pending"):  # the same report in two folders counts once
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "report.json").write_text(json.dumps(report))
    table = bench.leak_table(bench.released_files(str(tmp_path)), [phrase, email, other], {})
    assert table["canaries_leaked"] == 3  # the whole-release check finds all three
    assert table["decoded"]["centre_decoded"] == {"released": 2, "with_canary": 1, "pii_regex_hits": {"email": 2}}
    assert table["decoded"]["token_decoded"]["released"] == 2
    assert table["decoded"]["token_decoded"]["with_canary"] == 1
    assert "centre-decoded outputs released (with a canary; PII hits)  2 (1; email: 2)" in bench.format_table(
        "test", table, {"status": "rejected", "findings": 3}, 0)
    clean = bench.leak_table({"r.json": json.dumps({"topics": [{"id": 1, "name": "Cooking"}]}).encode()}, canaries, {})
    assert clean["decoded"] == {kind: {"released": 0, "with_canary": 0, "pii_regex_hits": {}}
                                for kind in bench.DECODED_KINDS}
