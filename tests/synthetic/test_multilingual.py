import collections
import json
import re

import pytest

from backends.facet_set import detect_language
from backends.keyword_set import load_keyword_set
from beam_jobs.sample_multilingual import main
from synthetic.multilingual import (
    LANGUAGES,
    SUBJECTS,
    cell_texts,
    multilingual_conversations,
    parallel_pairs,
    write_multilingual,
)
from transforms.validation import parse_record

# Each non-Latin language's script (Unicode ranges), and for Japanese the kana that set it apart from Chinese.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff"
_KANA = "\u3040-\u309f\u30a0-\u30ff"
_SCRIPTS = {
    "zh": re.compile(f"[{_CJK}]"),
    "ja": re.compile(f"[{_KANA}{_CJK}]"),
    "ko": re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]"),
    "ru": re.compile("[\u0400-\u04ff]"),
    "ar": re.compile("[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]"),
    "hi": re.compile("[\u0900-\u097f]"),
}
_FORBIDDEN = ("translat", "traduc", "übersetz", "翻译", "翻訳", "перев", "ترجم", "अनुवाद", "번역",
              # names of a language (a speaker's own included)
              "english", "anglais", "inglés", "englisch", "inglese", "inglês", "spanish", "español", "french",
              "français", "german", "deutsch", "英语", "英語", "中文", "日本語", "한국어", "영어", "английск",
              "русск", "الإنجليزية", "العربية", "अंग्रेज़ी", "हिंदी", "हिन्दी")


def _all_texts():
    return {(s, lang): cell_texts(s, lang) for s in SUBJECTS for lang in LANGUAGES}


def test_subjects_are_categories_of_the_bundled_keyword_set_and_languages_are_twelve_codes():
    assert set(SUBJECTS) <= set(load_keyword_set().categories)
    assert len(SUBJECTS) == 8 and len(LANGUAGES) == 12 and all(re.fullmatch("[a-z]{2}", c) for c in LANGUAGES)


def test_every_cell_has_at_least_36_distinct_requests():
    for cell, texts in _all_texts().items():
        assert len(texts) == len(set(texts)) >= 36, cell


def test_the_same_request_differs_between_cells():
    seen = collections.Counter(t for texts in _all_texts().values() for t in texts)
    assert max(seen.values()) == 1


def test_non_latin_requests_are_mostly_in_their_script():
    for (subject, language), texts in _all_texts().items():
        script = _SCRIPTS.get(language)
        for text in texts:
            letters = [c for c in text if c.isalpha()]
            if script is None:  # Latin-script languages: no other script at all
                assert all(c.isascii() or "\u00c0" <= c <= "\u024f" for c in letters), text
                continue
            assert sum(bool(script.match(c)) for c in letters) >= 0.6 * len(letters), text
            if language == "ja":
                assert re.search(f"[{_KANA}]", text), text


def test_no_request_mentions_translation_or_a_language():
    for texts in _all_texts().values():
        for text in texts:
            lowered = text.lower()
            assert not [word for word in _FORBIDDEN if word in lowered], text


def test_language_detection_finds_the_language_of_at_least_90_percent_of_each_languages_requests():
    for language in LANGUAGES:
        texts = [t for s in SUBJECTS for t in cell_texts(s, language)]
        hits = sum(detect_language(t) == language for t in texts)
        assert hits >= 0.9 * len(texts), (language, hits, len(texts))


def test_parallel_pairs_align_english_with_the_same_request_in_another_language():
    for subject in SUBJECTS:
        english = parallel_pairs(subject, "en")
        assert all(a == b for a, b in english)
        for language in LANGUAGES[1:]:
            pairs = parallel_pairs(subject, language)
            assert [a for a, _ in pairs] == [a for a, _ in english]
            assert sorted(b for _, b in pairs) == sorted(cell_texts(subject, language))
    # template 0, filler 1 (pancakes) of the first subject, in three languages
    assert parallel_pairs("Food and cooking", "es")[1] == (
        "How do I make pancakes at home? Please give me a simple recipe.",
        "¿Cómo hago tortitas en casa? Dame una receta sencilla, por favor.")


def test_records_are_deterministic_shuffled_valid_input_with_per_cell_counts_and_truth_fields():
    records = multilingual_conversations(5, seed=3)
    assert records == multilingual_conversations(5, seed=3)
    assert records != multilingual_conversations(5, seed=4)
    assert len(records) == 5 * len(SUBJECTS) * len(LANGUAGES)
    cells = collections.Counter((r["subject"], r["language"]) for r in records)
    assert set(cells.values()) == {5} and len(cells) == len(SUBJECTS) * len(LANGUAGES)
    assert [(r["subject"], r["language"]) for r in records[:8]] != sorted((r["subject"], r["language"])
                                                                          for r in records[:8])
    assert len({r["conversation_id"] for r in records}) == len(records)
    for record in records:
        assert record["messages"][0]["content"] in cell_texts(record["subject"], record["language"])
        assert record["timestamp"].startswith("2026-11-01T") and record["timestamp"].endswith("Z")
        conversation = parse_record(json.dumps(record, ensure_ascii=False).encode(), "test", 1)
        assert conversation.user_turns() == [record["messages"][0]["content"]], conversation


def test_a_cells_requests_are_drawn_without_replacement_and_too_many_raise():
    records = multilingual_conversations(48, seed=1, languages=("hi",), subjects=("Travel",))
    assert sorted(r["messages"][0]["content"] for r in records) == sorted(cell_texts("Travel", "hi"))
    with pytest.raises(ValueError, match="exceeds"):
        multilingual_conversations(49, seed=1, languages=("hi",), subjects=("Travel",))
    with pytest.raises(ValueError):
        multilingual_conversations(3, seed=1, languages=("xx",))


def test_each_user_writes_one_to_three_conversations_in_one_language():
    for users_per_cell in (None, 4):
        records = multilingual_conversations(10, seed=2, users_per_cell=users_per_cell)
        by_user = collections.defaultdict(list)
        for record in records:
            by_user[record["user_id"]].append(record)
        assert all(1 <= len(mine) <= 3 for mine in by_user.values())
        assert all(len({r["language"] for r in mine}) == 1 for mine in by_user.values())
        if users_per_cell is not None:
            assert len(by_user) == users_per_cell * len(SUBJECTS) * len(LANGUAGES)
        else:
            assert len(by_user) < len(records)  # some write more than one
    with pytest.raises(ValueError):
        multilingual_conversations(10, seed=2, users_per_cell=3)  # 3 users cannot write 10 at most 3 each


def test_cli_writes_the_set_as_json_lines(tmp_path, capsys):
    path = tmp_path / "out" / "multilingual.jsonl"
    main(["--output", str(path), "--per_cell", "2", "--seed", "9"])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == multilingual_conversations(2, seed=9)
    assert "wrote 192" in capsys.readouterr().out
    assert write_multilingual(str(tmp_path / "m.jsonl.gz"), 1, 9) == len(SUBJECTS) * len(LANGUAGES)
