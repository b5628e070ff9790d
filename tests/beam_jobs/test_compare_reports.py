"""Comparing two releases: matching by embedding similarity, grew/shrank beyond the noise, appeared/vanished."""

import json
import math

import pytest

from beam_jobs import compare_reports
from beam_jobs.compare_reports import change_margin, compare, load_report, match_topics
from tests.support.report_fixtures import keyword_embed, sample_report, theme_embed, themed_topics


def _named(name, keywords, size, topic_id):
    return {"id": topic_id, "name": name, "description": "", "keywords": keywords, "size": size}


def test_matching_is_one_to_one_by_similarity_above_the_threshold():
    old = [_named("Fever", ["fever"], 100, 0), _named("Python", ["python"], 90, 1), _named("Recipes", ["recipes"], 80, 2)]
    new = [_named("Python and react", ["python", "react"], 95, 7), _named("Fever and sleep", ["fever", "sleep"], 60, 8)]
    matches = match_topics(old, new, theme_embed, threshold=0.9)
    assert [(i, j) for i, j, _ in matches] == [(0, 1), (1, 0)]
    assert all(similarity == pytest.approx(1.0) for _, _, similarity in matches)
    assert match_topics(old, new, theme_embed, threshold=1.01) == []
    assert match_topics([], new, theme_embed, 0.5) == []
    unlabelled = _named("Unlabelled topic", [], 50, 3)
    assert match_topics([unlabelled], [dict(unlabelled, id=9)], theme_embed, threshold=0.5) == []


def test_changes_within_the_noise_are_about_the_same():
    old_topics = themed_topics()
    margin = change_margin(sample_report(old_topics), sample_report(old_topics))
    # Laplace(5) on both sides: std of the difference = sqrt(2) * 7.07 = 10; twice that = 20.
    assert margin == pytest.approx(2 * math.sqrt(2 * 50.0))
    by_name = {t["name"]: t for t in old_topics}
    fever, python, recipes = (next(n for n in by_name if n.startswith(p)) for p in ("Fever", "Python", "Recipes"))
    new_topics = [dict(t) for t in old_topics if t["name"] != recipes]
    for topic in new_topics:
        if topic["name"] == python:
            topic["size"] += 50
        elif topic["name"] == fever:
            topic["size"] -= 30
        else:
            topic["size"] += 15  # inside the noise margin
    new_topics.append(_named("Pets", ["pets"], 40, 99))
    comparison = compare(sample_report(old_topics), sample_report(new_topics), keyword_embed, threshold=0.99)
    status = {(r["new"] or r["old"])["name"]: r["status"] for r in comparison["rows"]}
    assert status[python] == "grew" and status[fever] == "shrank"
    assert status[recipes] == "vanished" and status["Pets"] == "appeared"
    assert sum(s == "about the same" for s in status.values()) == len(old_topics) - 3
    assert comparison["counts"] == {"grew": 1, "shrank": 1, "appeared": 1, "vanished": 1,
                                    "about the same": len(old_topics) - 3}
    assert [r["status"] for r in comparison["rows"]][:4] == ["grew", "shrank", "appeared", "vanished"]


def test_cli_reads_report_files_and_run_folders_and_writes_the_page(tmp_path, monkeypatch, capsys):
    from backends import embedding
    monkeypatch.setattr(embedding, "embed_texts", lambda model, texts: keyword_embed(texts))
    old_run = tmp_path / "old"
    (old_run / "release").mkdir(parents=True)
    (old_run / "release" / "report.json").write_text(json.dumps(sample_report(themed_topics()[:4])))
    new_file = tmp_path / "new.json"
    new_file.write_text(json.dumps(sample_report(themed_topics()[2:])))
    output = tmp_path / "compare.html"
    assert compare_reports.main([str(old_run), str(new_file), "--output", str(output),
                                 "--json", str(tmp_path / "c.json"), "--threshold", "0.99"]) == 0
    page = output.read_text()
    assert page.startswith("<!DOCTYPE html>") and "How the topics changed" in page
    saved = json.load(open(tmp_path / "c.json"))
    assert saved["counts"]["vanished"] >= 1 and saved["counts"]["appeared"] >= 1
    assert "-> " + str(output) in capsys.readouterr().out
    assert load_report(str(old_run / "release"))["topics"] == load_report(str(old_run))["topics"]
    assert compare_reports.main([str(tmp_path / "missing"), str(new_file), "--output", str(output)]) == 2


@pytest.mark.real_model
def test_real_model_matches_renamed_topics_and_not_unrelated_ones():
    from backends.embedding import embed_texts

    def embed(texts):
        return embed_texts("all-MiniLM-L6-v2", texts)

    old = [_named("Python, unit testing and error message", ["python", "unit testing", "error message"], 100, 0),
           _named("Recipes, cooking and baking", ["recipes", "cooking", "baking"], 90, 1)]
    new = [_named("Cooking, baking and meal planning", ["cooking", "baking", "meal planning"], 80, 5),
           _named("Python, debugging and error message", ["python", "debugging", "error message"], 70, 6),
           _named("Insomnia and sleep", ["insomnia", "sleep"], 60, 7)]
    matches = match_topics(old, new, embed, compare_reports.DEFAULT_THRESHOLD)
    assert [(i, j) for i, j, _ in matches] == [(0, 1), (1, 0)]
