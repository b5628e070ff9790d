"""Synthetic exemplars (issue 17): the evolution toward a topic's DP centre, the writers, and, at the
client boundary, that the exemplar prompts carry released data only."""

import json
import os
import re

import numpy as np
import pytest

from backends.exemplars import NEAR_DUPLICATE_SIMILARITY, candidate_problem, evolve_exemplars
from backends.interfaces import ExemplarWriter
from backends.llm import prompts
from backends.offline_exemplars import ONE_KEYWORD, TWO_KEYWORDS, TemplateExemplarWriter
from publishing.report import EXEMPLARS_NOTE, ReleasePrivacy, build_report
from publishing.report_html import render_report, table_rows

TOPIC = {"name": "Cooking: sourdough and baking", "description": "Requests about cooking.",
         "keywords": ["sourdough", "baking", "bread flour"]}


class _AxisWriter(ExemplarWriter):
    """Candidates "t<x>" at angle x (degrees) from the centre's direction in 2-d; varying a winner at
    angle x writes angles x/2 and x/3, i.e. closer to the centre, as a good writer would."""

    def __init__(self, first: list[str]):
        self.first, self.varied = first, []

    def write(self, topic, count):
        return self.first[:count]

    def vary(self, topic, winners, count):
        self.varied.append(list(winners))
        out = []
        for winner in winners:
            angle = float(winner.split("t")[1].split()[0])
            out += [f"t{angle / 2:g} varied", f"t{angle / 3:g} varied"]
        return out[:count]


def _axis_points(texts):
    angles = np.radians([float(t.split("t")[1].split()[0]) for t in texts])
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


def test_evolution_keeps_the_candidates_nearest_the_centre_and_improves_on_the_first_draft(monkeypatch):
    # In 2-d every two of these are near-duplicates (within 18 degrees); this test is about the ranking.
    monkeypatch.setattr("backends.exemplars.NEAR_DUPLICATE_SIMILARITY", 1.01)
    writer = _AxisWriter(["t72 far away", "t54 far away", "t36 middle", "t63 far away", "t45 middle"])
    centre = np.array([3.0, 0.0])  # not unit: the similarity is still a cosine
    evolution = evolve_exemplars(writer, TOPIC, centre, _axis_points, count=2, candidates=5, rounds=2)
    assert [e.text for e in evolution.first_draft] == ["t36 middle", "t45 middle"]
    assert evolution.first_draft[0].similarity == pytest.approx(np.cos(np.radians(36)), abs=1e-6)
    # Round 1 varies the best three (36, 45, 54) into 2 (half the 5 candidates): 18 and 12 degrees;
    # round 2 varies those of the best three of everything so far (12, 18, 36) not varied yet: 6 and 4.
    assert writer.varied == [["t36 middle", "t45 middle", "t54 far away"], ["t12 varied", "t18 varied"]]
    assert [e.text for e in evolution.exemplars] == ["t4 varied", "t6 varied"]
    assert [e.round for e in evolution.exemplars] == [2, 2]
    assert all(a.similarity > b.similarity for a, b in zip(evolution.exemplars, evolution.first_draft))
    assert evolution.exemplars[0].to_json() == {"text": "t4 varied",
                                                "similarity_to_centre": round(np.cos(np.radians(4)), 4)}


def test_a_round_whose_winners_were_all_varied_ends_the_search(monkeypatch):
    monkeypatch.setattr("backends.exemplars.NEAR_DUPLICATE_SIMILARITY", 1.01)

    class Repeating(_AxisWriter):  # its variations are never better: the winners stay the same
        def vary(self, topic, winners, count):
            self.varied.append(list(winners))
            return [f"t{80 + len(self.varied)} worse variation"]

    writer = Repeating(["t10 first one", "t20 second one", "t30 third one"])
    evolution = evolve_exemplars(writer, TOPIC, np.array([1.0, 0.0]), _axis_points, count=2, candidates=3, rounds=5)
    assert writer.varied == [["t10 first one", "t20 second one", "t30 third one"]]
    assert [e.text for e in evolution.exemplars] == ["t10 first one", "t20 second one"]


def test_no_rounds_releases_the_first_draft_and_near_duplicates_are_skipped():
    # 1 degree apart: cosine 0.99985 >= NEAR_DUPLICATE_SIMILARITY, so only the nearer of the two is shown
    assert np.cos(np.radians(1)) >= NEAR_DUPLICATE_SIMILARITY
    writer = _AxisWriter(["t10 first one", "t11 second one", "t30 third one"])
    evolution = evolve_exemplars(writer, TOPIC, np.array([1.0, 0.0]), _axis_points, count=2, candidates=3, rounds=0)
    assert [e.text for e in evolution.exemplars] == ["t10 first one", "t30 third one"] and writer.varied == []


def test_bad_candidates_are_dropped_and_counted_never_released():
    writer = _AxisWriter(["t10 call me on 415-555-0199", "t20 is fine", "T20 IS  FINE", "t5", "t30 " + "x" * 400,
                          "t40 write to jo@example.com", "t50 fine too"])
    evolution = evolve_exemplars(writer, TOPIC, np.array([1.0, 0.0]), _axis_points, count=3, candidates=7, rounds=0)
    assert [e.text for e in evolution.exemplars] == ["t20 is fine", "t50 fine too"]
    assert evolution.dropped == {"pii_like": 2, "duplicate": 1, "too_short": 1, "too_long": 1}
    assert candidate_problem("How do I bake sourdough bread at home?") is None


def test_a_topic_with_an_unverified_sensitive_label_gets_no_exemplars():
    writer = _AxisWriter(["t10 first one", "t30 third one"])
    unverified = {**TOPIC, "label_evidence": "unverified"}
    evolution = evolve_exemplars(writer, unverified, np.array([1.0, 0.0]), _axis_points, count=2, candidates=2)
    assert evolution.exemplars == [] and evolution.candidates_scored == 0 and writer.varied == []
    approximate = evolve_exemplars(writer, {**TOPIC, "label_evidence": "approximate"}, np.array([1.0, 0.0]),
                                   _axis_points, count=2, candidates=2, rounds=0)
    assert [e.text for e in approximate.exemplars] == ["t10 first one", "t30 third one"]


def test_a_writer_with_nothing_to_say_gives_no_exemplars():
    evolution = evolve_exemplars(TemplateExemplarWriter(), {**TOPIC, "keywords": []}, np.array([1.0, 0.0]),
                                 _axis_points, count=3)
    assert evolution.exemplars == [] and evolution.candidates_scored == 0


def test_template_writer_uses_only_templates_and_the_released_keywords():
    writer = TemplateExemplarWriter()
    first = writer.write(TOPIC, 20)
    assert len(first) == 20 == len(set(first)) and first == writer.write(TOPIC, 20)
    assert {k for k in TOPIC["keywords"] if any(k in c for c in first[:6])} == set(TOPIC["keywords"])
    # Nothing but template words and keywords: removing the keywords leaves a template's words only.
    template_words = set(re.findall(r"[a-z']+", " ".join(ONE_KEYWORD + TWO_KEYWORDS).lower()))
    for candidate in first:
        rest = candidate.lower()
        for keyword in TOPIC["keywords"]:
            rest = rest.replace(keyword, " ")
        assert set(re.findall(r"[a-z']+", rest)) <= template_words, candidate
    varied = writer.vary(TOPIC, ["Can you explain baking in simple terms?"], 6)
    assert varied and all("baking" in v for v in varied)
    assert "Can you explain baking in simple terms?" not in varied


def test_report_json_and_html_mark_exemplars_as_synthetic():
    named = {0: {**TOPIC, "label_source": "dp_keyword_histogram",
                 "exemplars": [{"text": "How do I <b>feed</b> a sourdough starter?", "similarity_to_centre": 0.8}]},
             1: {"name": "Other", "description": "d", "keywords": ["x"], "exemplars": []}}
    report = build_report(named, {0: 40.0, 1: 30.0}, ReleasePrivacy([], 5), {})
    assert report["exemplars_note"] == EXEMPLARS_NOTE and "not text from any user" in EXEMPLARS_NOTE
    assert report["topics"][0]["exemplars"][0]["similarity_to_centre"] == 0.8
    page = render_report(report)
    assert "How do I &lt;b&gt;feed&lt;/b&gt; a sourdough starter?" in page and "<b>feed</b>" not in page
    assert "not user text" in page and "the example requests are synthetic" in page
    assert table_rows(report)[0]["synthetic_exemplars"] == ["How do I <b>feed</b> a sourdough starter?"]
    without = build_report({0: dict(TOPIC)}, {0: 40.0}, ReleasePrivacy([], 5), {})
    assert "exemplars_note" not in without and "exemplars" not in without["topics"][0]
    assert "example requests are synthetic" not in render_report(without)


# --- the whole job, with the exemplar step on a model server at the client boundary ---------------------

SMALL = ["--num_clusters", "6", "--min_cluster_size", "5", "--seed", "3", "--samples_per_cluster", "60",
         "--epsilon", "35", "--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:30",
         "--exemplars_per_topic", "2", "--exemplar_candidates", "6", "--exemplar_rounds", "1"]


@pytest.fixture(scope="module")
def exemplar_run(tmp_path_factory):
    from beam_jobs.insights import run
    from tests.support.llm_server import FakeChatServer
    from tests.support.sample_folder import sample_folder
    folder, data = sample_folder(tmp_path_factory, "exemplars", 300, 200, seed=8)
    with FakeChatServer() as server:
        output = str(folder / "out")
        assert run(["--input", data, "--output", output, *SMALL, "--llm_backend", "openai",
                    "--llm_base_url", server.base_url, "--llm_model", "fake-model", "--llm_steps", "names,exemplars",
                    # The centre decoder (on by default) writes its own label prompts: tests/backends/test_centre_decoder.py.
                    "--pseudonymize", "off", "--centre_decoder", "false"]) == 0
        calls = [(r["body"]["messages"][-1]["content"], r) for r in server.requests]
    report = json.load(open(os.path.join(output, "release", "report.json")))
    conversations = [json.loads(line) for line in open(data)]
    return report, calls, conversations, output


@pytest.mark.e2e
def test_exemplar_prompts_carry_released_topics_and_earlier_answers_only(exemplar_run):
    report, calls, conversations, _ = exemplar_run
    released = {prompts.topic_text(t): t for t in report["topics"]}
    exemplar_calls = [(prompt, request) for prompt, request in calls if "<topic>" in prompt]
    assert exemplar_calls
    answered: dict[str, set[str]] = {block: set() for block in released}  # per topic: no state crosses topics
    for prompt, request in exemplar_calls:  # in arrival order: a variation only varies an earlier answer
        messages = [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": prompt}]
        count = int(re.search(r"Write (\d+)", prompt).group(1))
        # The whole request: nothing but these two messages and the public schema goes to the server.
        assert request["body"]["messages"] == messages
        assert request["body"]["response_format"]["json_schema"]["schema"] == prompts.exemplars_schema(count)
        head = prompts.public_head(messages)
        assert head is not None and prompt.startswith(head)
        topic_block, tail = prompt[len(head):].split("\n</topic>\n", 1)
        topic = released[topic_block]  # exactly a released topic's name, description and keywords
        part, kinds = tail.split("\nKinds: ")
        kind, value = part.split(": ", 1)
        assert ((kind == "Focus" and value in topic["keywords"])
                or (kind == "Request" and value in answered[topic_block])), tail
        assert set(kinds.split("; ")) <= set(prompts.TASK_KINDS)
        answered[topic_block] |= {f"Request {i + 1} of {count} about {value.rstrip('?.')}?" for i in range(count)}
    user_turns = [m["content"] for c in conversations for m in c.get("messages", []) if m.get("role") == "user"]
    for prompt, _ in exemplar_calls:  # and so no conversation text (a whole user turn) is in any
        assert not any(turn in prompt for turn in user_turns if len(turn) > 40)


@pytest.mark.e2e
def test_the_job_releases_exemplars_for_labelled_topics_and_counts_the_calls(exemplar_run):
    report, calls, _, output = exemplar_run
    assert report["exemplars_note"] and report["config"]["exemplars_per_topic"] == 2
    labelled = [t for t in report["topics"] if t["keywords"]]
    assert labelled and all(1 <= len(t["exemplars"]) <= 2 for t in labelled)
    assert all(t["exemplars"] == [] for t in report["topics"] if not t["keywords"])
    for topic in labelled:
        similarities = [e["similarity_to_centre"] for e in topic["exemplars"]]
        assert similarities == sorted(similarities, reverse=True) and all(-1 <= s <= 1 for s in similarities)
        assert all(e["text"].startswith("Request ") for e in topic["exemplars"])  # the model's, not the templates'
    stats = json.load(open(os.path.join(output, "private", "run_stats.json")))
    assert stats["llm"]["exemplars"]["calls"] == sum("<topic>" in p for p, _ in calls)
    assert stats["llm"]["exemplars"]["failures"] == 0
    # The fake server's drafts for one keyword differ only in their number: near-duplicates, not dropped ones.
    assert stats["exemplars"]["candidates_scored"] > 0 and set(stats["exemplars"]) <= {
        "candidates_scored", "candidates_dropped_duplicate", "candidates_dropped_too_short",
        "candidates_dropped_too_long", "candidates_dropped_pii_like"}
    page = open(os.path.join(output, "release", "report.html")).read()
    assert "not user text" in page


def test_parse_requests_reads_the_object_or_a_bare_list_and_marks_repairs():
    from backends.llm.parsing import MalformedOutput, parse_requests
    assert parse_requests('{"requests": ["How do I  bake bread?", "Explain rye."]}', 4) == (
        ["How do I bake bread?", "Explain rye."], False)
    assert parse_requests('```json\n["a b?", "a b?", "c d?"]\n```', 4) == (["a b?", "c d?"], True)  # fence, duplicate
    assert parse_requests('{"requests": ["one?", "two?", "three?"]}', 2) == (["one?", "two?"], True)  # too many
    for bad in ('{"requests": []}', '{"requests": "one?"}', '{"other": ["x?"]}', "no json"):
        with pytest.raises(MalformedOutput):
            parse_requests(bad, 3)


def test_llm_writer_splits_the_draft_over_keywords_and_rotates_task_kinds():
    from backends.llm.steps import MAX_EXEMPLARS_PER_CALL, _shares
    assert _shares(20, 5) == [4, 4, 4, 4, 4] and _shares(7, 3) == [3, 2, 2] and _shares(2, 3) == [1, 1, 0]
    assert _shares(20, 2) == [MAX_EXEMPLARS_PER_CALL] * 2  # few keywords: fewer candidates, not longer calls
    assert prompts.task_kinds(7, 2).split("; ") == [prompts.TASK_KINDS[7], prompts.TASK_KINDS[0]]


def test_a_failed_exemplar_call_gets_template_candidates_for_its_keyword_only():
    from backends.llm.steps import LLMExemplarWriter
    from config.llm import LLMParams
    from tests.support.llm_server import FakeChatServer

    def answer(prompt):
        if "Focus: baking\n" in prompt:
            return "I cannot help with that."  # unreadable: this call fails, the other two succeed
        focus = re.search(r"Focus: (.*)\nKinds", prompt).group(1)
        return json.dumps({"requests": [f"Tell me about {focus}, please."]})

    with FakeChatServer(answer=answer) as server:
        writer = LLMExemplarWriter(LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url,
                                             llm_max_retries=0, pseudonymize="off"))
        drafted = writer.write(TOPIC, 3)
    assert writer.counters.totals["calls"] == 3 and writer.counters.totals["fallbacks"] == 1
    assert "Tell me about sourdough, please." in drafted and "Tell me about bread flour, please." in drafted
    templated = [d for d in drafted if not d.startswith("Tell me")]
    assert len(templated) == 1 and "baking" in templated[0]
