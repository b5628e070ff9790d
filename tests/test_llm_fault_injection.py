"""The whole job against an OpenAI-compatible server on loopback that fails 30% of requests (429,
500, a hang past the timeout, or a garbage answer), deterministically by request hash and attempt."""

import json
import os

import pytest

from backends.keyword_set import load_keyword_set
from beam_jobs.generate_sample import write_sample
from beam_jobs.insights import run
from tests.llm_server import FakeChatServer

pytestmark = pytest.mark.slow

MAX_RETRIES = 2
# A large keyword epsilon so that keywords clear the noise floor on this little data and the namer is called.
SMALL = ["--num_clusters", "6", "--min_cluster_size", "5", "--seed", "3", "--samples_per_cluster", "60",
         "--epsilon", "35", "--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:30"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llm_faults")
    data = str(folder / "day.jsonl")
    write_sample(data, 300, 200, seed=8)
    _plant_pii(data)
    offline = str(folder / "offline")
    assert run(["--input", data, "--output", offline, *SMALL]) == 0
    with FakeChatServer(fault_rate=0.3, seed=1, hang_s=3.0, misbehave=True) as server:
        online = str(folder / "openai")
        assert run(["--input", data, "--output", online, *SMALL, "--llm_backend", "openai",
                    "--llm_base_url", server.base_url, "--llm_model", "fake-model", "--llm_timeout_s", "2",
                    "--llm_max_retries", str(MAX_RETRIES), "--llm_max_concurrency", "8"]) == 0
        expected = server.expected_counts(MAX_RETRIES)
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    return offline, online, expected, prompts


def _plant_pii(path: str) -> None:
    """Every 5th conversation gets a name, an e-mail and a phone number in its first user turn."""
    records = [json.loads(line) for line in open(path)]
    for i, record in enumerate(records[::5]):
        record["messages"][0]["content"] += (f" I'm Jane Doe, write to jane.doe{i}@example.com "
                                             f"or call 415-555-{1000 + i:04d}.")
    with open(path, "w") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


def _load(folder, *parts):
    return json.load(open(os.path.join(folder, *parts)))


def test_faults_were_injected_at_about_thirty_percent(runs):
    _, _, expected, _ = runs
    injected = sum(expected["injected"].values())
    print("server:", expected)
    assert all(count > 0 for count in expected["injected"].values())
    assert 0.2 < injected / expected["requests"] < 0.4


def test_counters_match_what_the_server_did(runs):
    _, online, expected, _ = runs
    llm = _load(online, "private", "run_stats.json")["llm"]
    total = llm["total"]
    print("run_stats llm:", llm)
    assert set(llm) == {"facets", "keywords", "names", "total"}
    for name in ("requests", "calls", "retries", "failures", "fallbacks"):
        assert total[name] == expected[name], name
    assert total["prompt_tokens"] + total["completion_tokens"] == expected["tokens"]
    assert total["cache_hits"] == 0 and total["failures"] > 0
    stats = _load(online, "private", "run_stats.json")
    assert llm["facets"]["calls"] == stats["conversations_after_bounding"]


def test_report_is_produced_with_the_same_dp_accounting_as_offline(runs):
    offline, online, _, _ = runs
    offline_report, online_report = _load(offline, "release", "report.json"), _load(online, "release", "report.json")
    assert online_report["privacy"] == offline_report["privacy"]
    assert online_report["config"]["llm_backend"] == "openai"
    assert 35.0 * 0.995 <= online_report["privacy"]["epsilon"] <= 35.0
    keywords = set(load_keyword_set().keywords)
    assert online_report["topics"]
    for topic in online_report["topics"]:  # the server answered words outside K for every selection
        assert set(topic["keywords"]) <= keywords
    assert any(t["name"].startswith("Questions about") for t in online_report["topics"] if t["keywords"])


def test_prompts_carry_no_raw_pii_and_the_namer_sees_only_released_keywords(runs):
    _, online, _, prompts = runs
    released = {k for t in _load(online, "release", "report.json")["topics"] for k in t["keywords"]}
    naming = [p for p in prompts if "<keywords>" in p]
    assert naming
    for prompt in naming:
        words = prompt.split("<keywords>\n", 1)[1].split("\n</keywords>", 1)[0].split("\n")
        assert set(words) <= released
    facet_prompts = {p for p in prompts if "<conversation>" in p}  # distinct: retries repeat a prompt
    # ~60% of conversations survive contribution bounding, and a fifth of those carry planted PII
    assert sum("<EMAIL_ADDRESS_1>" in p and "<PERSON_1>" in p for p in facet_prompts) >= 20
    for prompt in prompts:
        assert "@example.com" not in prompt and "Jane Doe" not in prompt and "415-555-" not in prompt
