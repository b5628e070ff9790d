"""The whole job against an OpenAI-compatible server on loopback that fails 30% of requests (429,
500, a hang past the timeout, or a garbage answer), deterministically by request hash and attempt. A
conversation whose call fails for good is dead-lettered; a topic whose naming call fails gets the
offline name. Also: the remote backends' preflight call (backends.llm.config.preflight_remote).

The job waits out real retry backoffs (time.sleep; RetryPolicy's production waits are 30-60 s per
failed call), so the pipeline run here patches in a policy with short waits; the real policy's own
tests are in tests/backends/test_llm_independence.py."""

import dataclasses
import json
import os

import pytest

from backends.keyword_set import load_keyword_set
from backends.llm import fanout
from backends.llm.client import Completion, PermanentError, RetryableError
from backends.llm.config import PREFLIGHT_PROMPT, LLMPreflightError, preflight_remote
from backends.llm.fanout import RetryPolicy
from beam_jobs.insights import run
from config.llm import LLMParams
from tests.support.llm_server import FakeChatServer
from tests.support.sample_folder import sample_folder

MAX_RETRIES = 2
# A large keyword epsilon so that keywords clear the noise floor on this little data and the namer is called.
SMALL = ["--num_clusters", "6", "--min_cluster_size", "5", "--seed", "3", "--samples_per_cluster", "60",
         "--epsilon", "35", "--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:30"]



@dataclasses.dataclass(frozen=True)
class ShortWaits(RetryPolicy):
    """RetryPolicy with every wait (Retry-After included) capped at 50 ms."""

    backoff_max_s: float = 0.05


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    # backends.llm.config.make_caller builds the job's policy from fanout.RetryPolicy (in this process: the
    # in-process runner), so the job's calls wait at most 50 ms between attempts; undone afterwards.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fanout, "RetryPolicy", ShortWaits)
        return _runs(tmp_path_factory)


def _runs(tmp_path_factory):
    folder, data = sample_folder(tmp_path_factory, "llm_faults", 300, 200, seed=8)
    _plant_pii(data)
    offline = str(folder / "offline")
    assert run(["--input", data, "--output", offline, *SMALL]) == 0
    # Every hang costs its call one timeout (~30 hangs a run): 1 s keeps that short, and is still far above the
    # fake server's answer time on loopback, so no answered request times out.
    with FakeChatServer(fault_rate=0.3, seed=1, hang_s=1.5, misbehave=True) as server:
        online = str(folder / "openai")
        assert run(["--input", data, "--output", online, *SMALL, "--llm_backend", "openai",
                    "--llm_base_url", server.base_url, "--llm_model", "fake-model", "--llm_timeout_s", "1",
                    "--llm_max_retries", str(MAX_RETRIES), "--llm_max_concurrency", "8"]) == 0
        # a remote preflight call at launch (its fixed prompt, step "other") is no call of the job's steps
        server.log[:] = [e for e in server.log if e["step"] != "other"]
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


@pytest.mark.e2e
def test_faults_were_injected_at_about_thirty_percent(runs):
    _, _, expected, _ = runs
    injected = sum(expected["injected"].values())
    print("server:", expected)
    assert all(count > 0 for count in expected["injected"].values())
    assert 0.2 < injected / expected["requests"] < 0.4


@pytest.mark.e2e
def test_counters_match_what_the_server_did(runs):
    _, online, expected, _ = runs
    llm = _load(online, "private", "run_stats.json")["llm"]
    total = llm["total"]
    print("run_stats llm:", llm)
    assert set(llm) == {"facets", "keywords", "names", "centre_names", "total"}
    for name in ("requests", "calls", "retries", "failures", "fallbacks"):
        assert total[name] == expected[name], name
    assert total["prompt_tokens"] + total["completion_tokens"] == expected["tokens"]
    assert total["cache_hits"] == 0 and total["failures"] > 0
    stats = _load(online, "private", "run_stats.json")
    assert llm["facets"]["calls"] == stats["conversations_after_bounding"]


@pytest.mark.e2e
def test_a_conversation_whose_call_failed_is_dead_lettered_not_answered_offline(runs):
    _, online, expected, _ = runs
    stats = _load(online, "private", "run_stats.json")
    llm, reasons = stats["llm"], stats["dead_letter_reasons"]
    print("failures per step:", expected["failures_per_step"], "dead letters:", reasons)
    assert expected["failures_per_step"]["facets"] > 0
    assert reasons.get("facet_failed", 0) == llm["facets"]["failures"] == expected["failures_per_step"]["facets"]
    assert reasons.get("keyword_selection_failed", 0) == llm["keywords"]["failures"] == \
        expected["failures_per_step"]["keywords"]
    assert llm["facets"]["fallbacks"] == llm["keywords"]["fallbacks"] == 0


@pytest.mark.e2e
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


@pytest.mark.e2e
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


# The remote backends' preflight: one call with a fixed public prompt before any data is read.

class _Client:
    def __init__(self, *errors):
        self.errors, self.seen, self.closed = list(errors), [], False

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt=0):
        self.seen.append((messages, attempt))
        if self.errors:
            raise self.errors.pop(0)
        return Completion("OK", 1, 1)

    def close(self):
        self.closed = True


def _remote(**settings):
    return LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1", **settings)


def test_the_preflight_asks_the_fixed_prompt_once_and_retries_like_a_call():
    client, waits = _Client(RetryableError("HTTP 429", retry_after_s=7.0)), []
    preflight_remote(_remote(llm_max_retries=2), client=client, sleep=waits.append)
    assert client.seen == [([{"role": "user", "content": PREFLIGHT_PROMPT}], 0),
                           ([{"role": "user", "content": PREFLIGHT_PROMPT}], 1)]
    assert len(waits) == 1 and 7.0 <= waits[0] <= 60.0  # the real policy's wait, a Retry-After its floor


@pytest.mark.parametrize("errors, message", [
    ((PermanentError("HTTP 401"),), "refused its preflight call: HTTP 401"),
    ((RetryableError("connection failed: ConnectionRefusedError"),) * 3, "after 3 attempts: connection failed"),
    ((KeyError("choices"),), "failed its preflight call: KeyError"),
])
def test_a_preflight_that_fails_for_good_is_a_bad_option_naming_the_backend(errors, message):
    client, waits = _Client(*errors), []
    with pytest.raises(LLMPreflightError, match=message) as caught:
        preflight_remote(_remote(llm_max_retries=2), client=client, sleep=waits.append)
    assert isinstance(caught.value, ValueError)  # the jobs' launch reports a ValueError as bad options (exit 2)
    assert "--llm_backend openai (http://127.0.0.1:9/v1, model 'm')" in str(caught.value)
    assert len(client.seen) == len(errors) and len(waits) == len(errors) - 1


def test_the_preflight_against_a_server_and_against_nothing():
    with FakeChatServer() as server:
        preflight_remote(LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url,
                                   llm_max_retries=0))
        assert [r["body"]["messages"] for r in server.requests] == [[{"role": "user", "content": PREFLIGHT_PROMPT}]]
    with pytest.raises(LLMPreflightError, match="connection failed"):
        preflight_remote(_remote(llm_max_retries=0, llm_timeout_s=2.0))


def test_the_local_and_offline_backends_have_no_remote_preflight():
    client = _Client()
    for backend in ("local", "offline"):
        preflight_remote(LLMParams(llm_backend=backend, llm_model="m"), client=client)
    assert client.seen == []
