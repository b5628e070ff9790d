"""eval/utility/llm_judge.py: the LLM judge of the utility metrics, against the loopback chat server."""

import json
import re

import numpy as np
import pytest

from backends.llm import parsing, prompts
from backends.llm.config import PREFLIGHT_PROMPT
from backends.llm.parsing import MalformedOutput
from config.llm import LLMParams
from eval.utility import utility_metrics as um
from eval.utility.llm_judge import LLMSummaryJudge
from tests.support.llm_server import FakeChatServer

MARKER = "zebra"


def _summaries(prompt: str) -> tuple[str, str]:
    a = re.search(r"<summary_a>\n(.*?)\n</summary_a>", prompt, re.S).group(1)
    b = re.search(r"<summary_b>\n(.*?)\n</summary_b>", prompt, re.S).group(1)
    return a, b


def prefers_marker(prompt: str) -> str:
    """Rates the summary with MARKER 5 and the other 1, and prefers it (whatever its position)."""
    a, b = _summaries(prompt)
    a_wins = MARKER in a
    return json.dumps({"rating_a": 5 if a_wins else 1, "rating_b": 1 if a_wins else 5,
                       "preferred": "A" if a_wins else "B"})


def _after_the_preflight(answer):
    """`answer`, for the judgment prompts; OK to the preflight's fixed prompt (backends.llm.config.preflight)."""
    return lambda prompt: "OK" if prompt == PREFLIGHT_PROMPT else answer(prompt)


def _judge(server, **overrides) -> LLMSummaryJudge:
    settings = dict(llm_backend="openai", llm_model="judge-model", llm_base_url=server.base_url, llm_max_retries=1,
                    llm_timeout_s=5.0, pseudonymize="off", llm_max_concurrency=4, backoff_base_s=0.0)
    settings.update(overrides)
    return LLMSummaryJudge(LLMParams(**settings))


def _pairs(n: int, marker_on_private: bool):
    private = [f"Topic {i}. Private description {i}." + (f" {MARKER}" if marker_on_private else "")
               for i in range(n)]
    baseline = [f"Baseline {i}. Baseline description {i}." + ("" if marker_on_private else f" {MARKER}")
                for i in range(n)]
    return private, baseline, np.eye(n), np.eye(n)  # private i's nearest baseline is baseline i


def test_judgement_parsing_repairs_only_safe_deviations():
    assert parsing.parse_judgement('{"rating_a": 4, "rating_b": 2, "preferred": "A"}') == ((4, 2, 0), False)
    fenced = 'Sure:\n```json\n{"Rating_A": "3", "rating_b": 5.0, "preferred": "summary b"}\n```'
    assert parsing.parse_judgement(fenced) == ((3, 5, 1), True)
    assert parsing.parse_judgement("{'rating_a': 1, 'rating_b': 1, 'preferred': 'b'}") == ((1, 1, 1), True)
    for bad in ('{"rating_a": 6, "rating_b": 2, "preferred": "A"}',      # out of range
                '{"rating_a": 0, "rating_b": 2, "preferred": "A"}',
                '{"rating_a": 3.5, "rating_b": 2, "preferred": "A"}',    # not an integer
                '{"rating_a": true, "rating_b": 2, "preferred": "A"}',
                '{"rating_a": 3, "rating_b": 2, "preferred": 1}',        # 0/1 or 1/2? not guessed
                '{"rating_a": 3, "rating_b": 2, "preferred": "both"}',
                '{"rating_a": 3, "preferred": "A"}',                     # a rating missing
                "A is better, 4 vs 2.", "", "[4, 2, 'A']"):
        with pytest.raises(MalformedOutput):
            parsing.parse_judgement(bad)


@pytest.mark.parametrize("marker_on_private, expected", [(True, 1.0), (False, 0.0)])
def test_ratings_and_preference_are_mapped_back_through_the_random_order(marker_on_private, expected):
    private, baseline, vp, vb = _pairs(40, marker_on_private)
    with FakeChatServer(answer=prefers_marker) as server:
        result = um.judge_comparison(private, baseline, vp, vb, _judge(server), seed=3)
        shown_first = [_summaries(r["body"]["messages"][-1]["content"])[0] for r in server.requests]
    assert len(shown_first) == 40
    private_first = sum(a in private for a in shown_first)
    assert 8 <= private_first <= 32  # both orders were shown
    assert result["judge"] == "LLMSummaryJudge" and result["backend"] == "openai"
    assert (result["pairs"], result["judged"], result["failed"]) == (40, 40, 0)
    assert result["private_preferred"] == expected
    assert result["mean_rating_private"] == (5 if marker_on_private else 1)
    assert result["mean_rating_baseline"] == (1 if marker_on_private else 5)
    assert result["llm"]["calls"] == 40 and result["llm"]["failures"] == 0


def test_malformed_answers_are_counted_as_failures_and_left_out():
    private, baseline, vp, vb = _pairs(12, marker_on_private=True)
    broken = {3: "The first one is better.", 5: '{"rating_a": 9, "rating_b": 1, "preferred": "A"}',
              8: '{"rating_a": 5, "rating_b": 1, "preferred": 0}', 11: ""}

    def answer(prompt):
        a, b = _summaries(prompt)
        index = int(re.search(r"Topic (\d+)\.", a + b).group(1))
        return broken[index] if index in broken else prefers_marker(prompt)

    with FakeChatServer(answer=answer) as server:
        result = um.judge_comparison(private, baseline, vp, vb, _judge(server), seed=0)
        requests = len(server.requests)
    assert (result["pairs"], result["judged"], result["failed"]) == (12, 8, 4)
    assert result["mean_rating_private"] == 5 and result["mean_rating_baseline"] == 1
    assert result["private_preferred"] == 1.0
    assert result["llm"]["failures"] == 4 and requests == 12  # a malformed answer is not re-asked


def test_every_pair_failing_reports_no_rating():
    private, baseline, vp, vb = _pairs(3, marker_on_private=True)
    with FakeChatServer(answer=lambda prompt: "no idea") as server:
        result = um.judge_comparison(private, baseline, vp, vb, _judge(server), seed=0)
    assert (result["judged"], result["failed"]) == (0, 3)
    assert result["private_preferred"] is None and result["mean_rating_private"] is None


def test_retryable_faults_are_retried_and_exhausted_ones_fail():
    private, baseline, vp, vb = _pairs(30, marker_on_private=True)
    with FakeChatServer(answer=prefers_marker, fault_rate=0.3, seed=5, hang_s=0.2) as server:
        result = um.judge_comparison(private, baseline, vp, vb, _judge(server, llm_timeout_s=0.1), seed=0)
        expected = server.expected_counts(max_retries=1)
    assert expected["retries"] > 0
    assert result["failed"] == expected["failures"] and result["judged"] == 30 - expected["failures"]
    assert result["llm"]["retries"] == expected["retries"]
    if result["judged"]:
        assert result["private_preferred"] == 1.0


def test_the_prompt_carries_the_two_summaries_and_nothing_else():
    private, baseline, vp, vb = _pairs(6, marker_on_private=True)
    with FakeChatServer(answer=prefers_marker) as server:
        um.judge_comparison(private, baseline, vp, vb, _judge(server), seed=1)
        bodies = [r["body"] for r in server.requests]
    assert len(bodies) == 6
    for i, body in enumerate(sorted(bodies, key=lambda b: re.search(r"Topic (\d+)", str(b)).group(1))):
        messages = body["messages"]
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[0]["content"] == prompts.SYSTEM
        a, b = _summaries(messages[1]["content"])
        assert {a, b} == {private[i], baseline[i]}
        assert messages[1]["content"] == prompts.JUDGE_INSTRUCTIONS.format(summary_a=a, summary_b=b)
        assert body["model"] == "judge-model" and body["response_format"] == {"type": "json_object"}


def test_pseudonymize_on_keeps_pii_of_a_baseline_summary_out_of_the_prompt():
    private = ["Travel planning. Users ask about flights and hotels. Keywords: travel, flights."]
    baseline = ['Travel. "email me at jane.doe.48213@example.com or call 415-555-0199" Keywords: travel.']
    with FakeChatServer(answer=lambda p: '{"rating_a": 3, "rating_b": 3, "preferred": "A"}') as server:
        result = um.judge_comparison(private, baseline, np.ones((1, 2)), np.ones((1, 2)),
                                     _judge(server, pseudonymize="on"), seed=0)
        prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert result["judged"] == 1
    assert "jane.doe.48213@example.com" not in prompt and "415-555-0199" not in prompt
    assert "<EMAIL_ADDRESS_1>" in prompt and private[0] in prompt


def test_pseudonyms_surrogate_puts_made_up_names_into_the_prompt():
    # --pseudonyms surrogate, as the job's steps use it: a name becomes a made-up name, not "<PERSON_1>"
    private = ["Travel planning. Users ask about flights and hotels. Keywords: travel, flights."]
    baseline = ['Travel. "I\'m Daniel Okafor, mail me at d.okafor@brightmail.com" Keywords: travel.']
    with FakeChatServer(answer=lambda p: '{"rating_a": 3, "rating_b": 3, "preferred": "A"}') as server:
        result = um.judge_comparison(private, baseline, np.ones((1, 2)), np.ones((1, 2)),
                                     _judge(server, pseudonymize="on", pseudonyms="surrogate"), seed=0)
        prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert result["judged"] == 1
    assert "Okafor" not in prompt and "d.okafor@brightmail.com" not in prompt
    assert "<PERSON_" not in prompt and "<EMAIL_ADDRESS_1>" in prompt and private[0] in prompt


def _write_report(path, names):
    topics = [{"name": name, "description": f"About {name.lower()}.", "keywords": [name.lower()]} for name in names]
    path.write_text(json.dumps({"topics": topics}))
    return str(path)


def test_utility_metrics_cli_runs_the_judge_with_the_jobs_llm_options(tmp_path, monkeypatch, capsys):
    import eval.data
    names = ["Cooking", "Taxes", "Gardening"]

    class FakeEmbedder:  # the lexical/embedding metrics are tested elsewhere; this is about the judge
        def __call__(self, texts):
            return np.eye(3)[[next(k for k, n in enumerate(names) if n in t) for t in texts]]

    monkeypatch.setattr(eval.data, "TextEmbedder", FakeEmbedder)
    monkeypatch.setattr(um, "key_phrases", um.tokens)
    monkeypatch.setattr(um, "noun_chunks", um.tokens)
    private = _write_report(tmp_path / "private.json", [f"{n} {MARKER}" for n in names])
    baseline = _write_report(tmp_path / "baseline.json", names)
    with FakeChatServer(answer=_after_the_preflight(prefers_marker)) as server:
        um.main(["--private", private, "--baseline", baseline, "--llm_backend", "openai", "--llm_base_url",
                 server.base_url, "--llm_model", "judge-model", "--pseudonymize", "off", "--llm_max_retries", "0"])
        assert len(server.requests) == 1 + 3  # the preflight, then one call per pair
    judged = json.loads(capsys.readouterr().out)["llm_judge"]
    assert (judged["judged"], judged["failed"], judged["private_preferred"]) == (3, 0, 1.0)
    assert judged["model"] == "judge-model"

    um.main(["--private", private, "--baseline", baseline])
    assert json.loads(capsys.readouterr().out)["llm_judge"]["judge"] is None  # offline: no judge
    with pytest.raises(SystemExit):
        um.main(["--private", private, "--baseline", baseline, "--llm_backend", "openai", "--llm_model", "m"])
    assert "needs --llm_base_url" in capsys.readouterr().err


def test_sweep_table_gets_the_judge_columns_only_with_a_judge():
    from eval.utility import sweep
    row = {column: 0.5 for column in sweep.COLUMNS}
    assert "private_preferred" not in sweep.markdown_table([row])
    judged = dict(row, judge_rating_private=4.0, judge_rating_baseline=3.0, private_preferred=0.75,
                  judge_judged=8, judge_failed=2)
    table = sweep.markdown_table([judged])
    assert table.splitlines()[0].endswith("| private_preferred | judge_judged | judge_failed |")
    assert table.splitlines()[2].endswith("| 4.000 | 3.000 | 0.750 | 8 | 2 |")


@pytest.mark.e2e
def test_sweep_cli_judges_every_labelled_topic_of_every_configuration(tmp_path, capsys):
    import csv

    from eval.utility import sweep
    from synthetic.sample import write_sample
    path = str(tmp_path / "conversations.jsonl")
    write_sample(path, 400, 150, seed=8)
    always_b = json.dumps({"rating_a": 2, "rating_b": 4, "preferred": "B"})
    with FakeChatServer(answer=_after_the_preflight(lambda prompt: always_b)) as server:
        sweep.main(["--data", path, "--num_clusters", "6", "--min_cluster_size", "10", "--output",
                    str(tmp_path / "sweep"), "--llm_backend", "openai", "--llm_base_url", server.base_url,
                    "--llm_model", "judge-model", "--pseudonymize", "off"])
        requests = len(server.requests) - 1  # less the launch's preflight call
    assert "| private_preferred |" in capsys.readouterr().out
    with open(tmp_path / "sweep" / "sweep_conversations.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 5
    assert all(int(r["judge_judged"]) + int(r["judge_failed"]) == int(r["labelled"]) for r in rows)
    assert sum(int(r["judge_judged"]) for r in rows) == requests > 0
    # The server rates A 2 and B 4 and prefers B: the private summary wins exactly when it was shown
    # second, and its mean rating follows from that share.
    for row in (r for r in rows if int(r["judge_judged"])):
        shown_second = float(row["private_preferred"])
        assert float(row["judge_rating_private"]) == pytest.approx(2 + 2 * shown_second)
        assert float(row["judge_rating_baseline"]) == pytest.approx(4 - 2 * shown_second)
