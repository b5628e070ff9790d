"""The versioned keyword-set file: round trip, backward compatibility, refusal of newer versions."""

import json

import pytest

from backends.interfaces import KeywordSetRefiner
from backends.keyword_set import FORMAT_VERSION, ONE_DAY_FORMAT_VERSION, keyword_set_document, load_keyword_set, write_keyword_set
from backends.offline_keywords import refine_until_stable
from beam_jobs.build_keywords import ranked_selection
from core.spend import MechanismSpend

SPEND = MechanismSpend(stage="keyword_set", mechanism="PipelineDP partition selection per term", epsilon=0.8,
                       delta=1e-6, sensitivity=10.0, noise={"kind": "partition_selection"})


def test_round_trip_keeps_keywords_method_params_source_and_spend(tmp_path):
    path = str(tmp_path / "kw.json")
    document = keyword_set_document(["Python", "  unit   test ", "python", "sql"], "tfidf", {"epsilon": 0.8},
                                    {"private_input": "logs/*.jsonl"}, [SPEND], ledger_run_id="keyword-set-ab12",
                                    ledger_date="2026-11-20")
    write_keyword_set(path, document)
    loaded = load_keyword_set(path)
    assert loaded.keywords == ("python", "unit test", "sql")
    assert loaded.method == "tfidf" and loaded.version == ONE_DAY_FORMAT_VERSION == json.load(open(path))["version"]
    assert loaded.params == {"epsilon": 0.8} and loaded.origin == {"private_input": "logs/*.jsonl"}
    assert loaded.spend == (SPEND,) and loaded.created_at.endswith("+00:00")
    assert (loaded.ledger_run_id, loaded.ledger_date) == ("keyword-set-ab12", "2026-11-20")
    assert document["privacy"]["epsilon"] == 0.8 and document["privacy"]["delta"] == 1e-6


def test_a_set_that_spent_privacy_must_say_where_a_ledger_charges_it(tmp_path):
    with pytest.raises(ValueError, match="ledger run id and date"):
        keyword_set_document(["python"], "llm", {}, {}, [SPEND])
    document = keyword_set_document(["python"], "llm", {}, {}, [SPEND], ledger_run_id="keyword-set-ab12",
                                    ledger_date="2026-11-20")
    del document["privacy"]["ledger"]
    path = tmp_path / "no-ledger.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="privacy.ledger"):
        load_keyword_set(str(path))
    document["privacy"]["ledger"] = {"run_id": "nightly-1", "date": "2026-11-20"}
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="must start with 'keyword-set-'"):
        load_keyword_set(str(path))


def test_a_set_names_the_days_of_its_data_and_a_version_2_file_is_one_day(tmp_path):
    path = str(tmp_path / "month.json")
    write_keyword_set(path, keyword_set_document(["python"], "llm", {}, {}, [SPEND], ledger_run_id="keyword-set-ab12",
                                                 ledger_date="2026-10-31", ledger_days=31))
    assert json.load(open(path))["privacy"]["ledger"] == {"run_id": "keyword-set-ab12", "date": "2026-10-31",
                                                          "days": 31}
    assert json.load(open(path))["version"] == FORMAT_VERSION == 3
    assert (load_keyword_set(path).ledger_date, load_keyword_set(path).ledger_days) == ("2026-10-31", 31)
    document = json.load(open(path))
    document["version"], document["privacy"]["ledger"] = 2, {"run_id": "keyword-set-ab12", "date": "2026-10-31"}
    (tmp_path / "v2.json").write_text(json.dumps(document))
    assert load_keyword_set(str(tmp_path / "v2.json")).ledger_days == 1
    for bad in (0, "31", True):
        document["privacy"]["ledger"]["days"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(document))
        with pytest.raises(ValueError, match="privacy.ledger.days"):
            load_keyword_set(str(tmp_path / "bad.json"))


def test_only_a_charge_of_several_days_is_written_as_version_3_so_older_jobs_read_the_rest(tmp_path):
    """A version-2 job refuses version 3, which it would charge on the last day only; a set of one
    day (or without spend) is written as that job wrote it: version 2, no `days`."""
    for days, version in ((1, 2), (2, 3), (31, 3)):
        document = keyword_set_document(["python"], "llm", {}, {}, [SPEND], ledger_run_id="keyword-set-ab12",
                                        ledger_date="2026-10-31", ledger_days=days)
        assert document["version"] == version
        assert ("days" in document["privacy"]["ledger"]) == (days > 1)
        path = str(tmp_path / f"days-{days}.json")
        write_keyword_set(path, document)
        assert (load_keyword_set(path).version, load_keyword_set(path).ledger_days) == (version, days)
    public = keyword_set_document(["python"], "public", {}, {}, [], ledger_days=31)
    assert public["version"] == ONE_DAY_FORMAT_VERSION and "ledger" not in public["privacy"]


def test_a_set_without_spend_has_nothing_to_charge(tmp_path):
    path = str(tmp_path / "public.json")
    write_keyword_set(path, keyword_set_document(["python"], "public", {}, {}, [], ledger_run_id="keyword-set-ab12",
                                                 ledger_date="2026-11-20"))
    loaded = load_keyword_set(path)
    assert "ledger" not in json.load(open(path))["privacy"]
    assert (loaded.spend, loaded.ledger_run_id, loaded.ledger_date) == ((), None, None)


def test_old_json_and_text_files_still_load(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"keywords": ["a b", "c"], "method": "manual",
                               "privacy": {"mechanisms": [SPEND.to_json()]}}))
    loaded = load_keyword_set(str(old))
    assert loaded.keywords == ("a b", "c") and loaded.version is None and loaded.spend == (SPEND,)
    # No creation time: charged on the night that first uses it (see test_keyword_set_ledger.py).
    assert loaded.ledger_run_id.startswith("keyword-set-legacy-") and loaded.ledger_date is None
    version_1 = tmp_path / "v1.json"
    version_1.write_text(json.dumps({"version": 1, "created_at": "2026-11-22T03:00:00+00:00", "keywords": ["c"],
                                     "method": "tfidf", "privacy": {"mechanisms": [SPEND.to_json()]}}))
    assert load_keyword_set(str(version_1)).ledger_date == "2026-11-22"
    text = tmp_path / "k.txt"
    text.write_text("# comment\npython\n\nsql # trailing\n")
    assert load_keyword_set(str(text)).keywords == ("python", "sql")


def test_a_newer_format_version_is_refused(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"version": FORMAT_VERSION + 1, "keywords": ["a"]}))
    with pytest.raises(ValueError, match="newer"):
        load_keyword_set(str(path))


def test_ranked_selection_orders_by_noisy_count_and_caps():
    assert ranked_selection([("b", 3.0), ("a", 9.0), ("c", 3.0)], 2) == ["a", "b"]
    assert ranked_selection([("b", None), ("a", None)], None) == ["a", "b"]


class _DropLastUntil(KeywordSetRefiner):
    """Removes the last keyword while the list is longer than the target; appends 'new' once."""

    def __init__(self):
        self.calls = 0

    def refine(self, keywords, target_size):
        self.calls += 1
        remove = [keywords[-1]] if len(keywords) > target_size else []
        return remove, (["New "] if self.calls == 1 else [])


def test_refinement_runs_until_stable_or_max_rounds():
    refined, rounds = refine_until_stable(_DropLastUntil(), ["a", "b", "c", "d"], 2, max_rounds=10)
    # round 1: -d +new; 2: -new; 3: -c; 4: stable.
    assert refined == ["a", "b"] and rounds == 4
    refined, rounds = refine_until_stable(_DropLastUntil(), ["a", "b", "c", "d"], 2, max_rounds=2)
    assert rounds == 2 and refined == ["a", "b", "c"]


def test_categories_come_from_section_lines_of_a_text_set_and_a_parallel_list_of_a_json_set(tmp_path):
    text = tmp_path / "k.txt"
    text.write_text("loose\n## Code and data\npython  # a comment\nSQL\n##   Health \nfever\npython\n")
    loaded = load_keyword_set(str(text))
    assert loaded.keywords == ("loose", "python", "sql", "fever")
    assert loaded.categories == (None, "Code and data", "Code and data", "Health")
    as_json = tmp_path / "k.json"
    as_json.write_text(json.dumps({"keywords": ["a b", "c"], "categories": ["Cat", None]}))
    assert load_keyword_set(str(as_json)).category_of() == {"a b": "Cat", "c": None}
    as_json.write_text(json.dumps({"keywords": ["a", "c"], "categories": ["Cat"]}))
    with pytest.raises(ValueError, match="as long as"):
        load_keyword_set(str(as_json))


def test_the_bundled_set_gives_every_keyword_a_category():
    bundled = load_keyword_set()
    assert None not in bundled.categories and len(set(bundled.categories)) >= 10


def test_sensitive_categories_are_marked_in_the_file_and_the_bundled_marks_apply_to_any_set(tmp_path):
    from backends.keyword_categories import KeywordCategories
    text = tmp_path / "k.txt"
    text.write_text("## Scams (Sensitive)\nphishing\n## Cooking\nbread\n")
    loaded = load_keyword_set(str(text))
    assert loaded.category_of() == {"phishing": "Scams", "bread": "Cooking"}
    assert loaded.sensitive_categories == {"Scams"}
    as_json = tmp_path / "k.json"
    as_json.write_text(json.dumps({"keywords": ["a", "c"], "categories": ["Cat", "Dog"],
                                   "sensitive_categories": ["Dog"]}))
    assert load_keyword_set(str(as_json)).sensitive_categories == {"Dog"}
    as_json.write_text(json.dumps({"keywords": ["a"], "sensitive_categories": "Dog"}))
    with pytest.raises(ValueError, match="sensitive_categories"):
        load_keyword_set(str(as_json))
    as_json.write_text(json.dumps({"keywords": ["a"], "categories": ["Cat"], "sensitive_categories": ["Dgo"]}))
    with pytest.raises(ValueError, match="does not have.*Dgo"):
        load_keyword_set(str(as_json))
    bundled = load_keyword_set()
    assert bundled.sensitive_categories == {
        "Jailbreaks and AI misuse", "Violence and weapons", "Crime and fraud", "Drugs and alcohol",
        "Hate and harassment", "Self-harm and crisis", "Sexual content"}
    assert bundled.sensitive_categories <= set(bundled.categories)
    # A set of its own marks keeps the bundled set's: its keywords may take bundled categories.
    assert KeywordCategories.of_keyword_set(loaded).sensitive == {"Scams"} | bundled.sensitive_categories
