"""Pseudonymization on real prompts (eval/pii/pii_real.py): the hand labels over the shared hh-rlhf and
arena-hard data reference spans without holding their text, and the shipped pseudonymizer meets the
bars on both halves of them (skipped where the shared data is not there). The second set (labelled
later, in other conversations) is checked for its references and hashes and scored alone with
--splits second; it holds no bar (docs/evaluation.md, "The second set")."""

import collections
import json
import os
import re

import pytest

from eval.pii import pii_real

HAVE_DATA = all(os.path.isfile(os.path.join(pii_real.DATA_DIR, name)) for name in pii_real.SOURCES.values())


def test_the_labels_hold_references_and_hashes_not_text():
    rows = pii_real.load_labels()
    assert len(rows) >= 600
    for row in rows:
        assert set(row) <= {"conversation_id", "message", "start", "end", "label", "sha256", "split", "invented"}, row
        assert row["label"] in pii_real.LABEL_KINDS and row["split"] in pii_real.ALL_SPLITS
        assert re.fullmatch(r"[0-9a-f]{12}", row["sha256"]) and 0 <= row["start"] < row["end"]
        assert any(row["conversation_id"].startswith(prefix) for prefix in pii_real.SOURCES)
    counts = collections.Counter((row["split"], row["label"]) for row in rows)
    # each half has people to replace and entities to keep
    for split in pii_real.SPLITS:
        assert counts[split, "private_person"] >= 50 and counts[split, "public_figure"] >= 90
        assert counts[split, "place"] >= 90
    # the second set has people of both kinds, in conversations of neither half
    assert counts[pii_real.SECOND, "private_person"] >= 15 and counts[pii_real.SECOND, "public_figure"] >= 15
    halves = {row["conversation_id"] for row in rows if row["split"] in pii_real.SPLITS}
    second = {row["conversation_id"] for row in rows if row["split"] == pii_real.SECOND}
    assert second and not second & halves


def test_an_unknown_split_is_refused(capsys):
    with pytest.raises(SystemExit):
        pii_real.main(["--splits", "dev,secnd"])
    assert "unknown split(s) ['secnd']" in capsys.readouterr().err


def test_without_the_shared_data_the_script_says_so_and_stops(tmp_path, capsys):
    pii_real.main(["--data_dir", str(tmp_path)])
    assert capsys.readouterr().out.startswith("skipped: ")


@pytest.mark.skipif(not HAVE_DATA, reason="the shared data sets (../shared/data) are not there")
def test_a_changed_data_set_is_caught_by_the_hashes(tmp_path):
    rows = pii_real.load_labels()[:3]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({**row, "sha256": "0" * 12}) + "\n" for row in rows))
    with pytest.raises(ValueError, match="do not match their hash"):
        pii_real.load(str(labels))


@pytest.mark.skipif(not HAVE_DATA, reason="the shared data sets (../shared/data) are not there")
def test_a_changed_data_set_is_caught_in_the_second_set_too(tmp_path):
    rows = [row for row in pii_real.load_labels() if row["split"] == pii_real.SECOND]
    conversations, labels = pii_real.load(str(_labels(tmp_path, rows)))
    assert {row["conversation_id"] for row in labels} == set(conversations)
    text = conversations[rows[0]["conversation_id"]][rows[0]["message"]]
    assert pii_real.span_hash(text[rows[0]["start"]:rows[0]["end"]]) == rows[0]["sha256"]
    # a span one character off no longer matches its hash
    shifted = [{**rows[0], "start": rows[0]["start"] + 1}]
    with pytest.raises(ValueError, match="1 labelled spans do not match their hash"):
        pii_real.load(str(_labels(tmp_path, shifted)))


@pytest.mark.skipif(not HAVE_DATA, reason="the shared data sets (../shared/data) are not there")
def test_splits_second_scores_the_second_set_alone(tmp_path, capsys, monkeypatch):
    labels = pii_real.load_labels()
    second = [row for row in labels if row["split"] == pii_real.SECOND and row["label"] == "private_person"][:4]
    rows = second + [row for row in labels if row["split"] == "dev"][:3]
    detected = []

    class Detector:  # detects nothing: every private name is missed, every kept entity intact
        def detect(self, text):
            return []

        def detect_texts(self, texts):
            detected.append(texts)
            return [[] for _ in texts]

    monkeypatch.setattr(pii_real, "configurations", lambda args: {"none": lambda: (Detector(), "no detector")})
    pii_real.main(["--labels", str(_labels(tmp_path, rows)), "--configs", "none", "--splits", "second"])
    out = capsys.readouterr().out
    assert f"  second: private names replaced 0/{len(second)} = 0.0%" in out and "  dev: " not in out
    assert len(detected) == len({row["conversation_id"] for row in second})


def _labels(tmp_path, rows):
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.real_model
@pytest.mark.skipif(not HAVE_DATA, reason="the shared data sets (../shared/data) are not there")
def test_the_shipped_pseudonymizer_on_real_prompts():
    """Figures in docs/evaluation.md. Private names (people of the user's life and characters the user
    invents) and places meet the 90% bars on both halves; public figures do not (the detector has no
    list of who is famous: a name without a public role or frame is replaced), so a floor guards the
    figure measured when the rules were written."""
    from backends.pii.pseudonymize import shared_pseudonymizer
    conversations, labels = pii_real.load()
    result = pii_real.evaluate(shared_pseudonymizer().detect_texts, conversations, labels)
    for split in pii_real.SPLITS:
        figures = result["splits"][split]
        per_kind = figures["per_kind"]
        assert pii_real.share(figures["private"]) >= pii_real.PRIVATE_BAR, (split, figures)
        assert pii_real.share(per_kind["private_person"]) >= pii_real.PRIVATE_BAR, (split, per_kind)
        assert pii_real.share(per_kind["place"]) >= pii_real.KEEP_BAR, (split, per_kind)
        assert pii_real.share(per_kind["public_figure"]) >= 0.40, (split, per_kind)
