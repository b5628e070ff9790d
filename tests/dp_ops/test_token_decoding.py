"""Token-level private decoding (dp_ops/token_decoding.py, transforms/token_decoding.py,
backends/token_decoder.py): the user-level sample, the sensitivity, the noise, the accounting, per-topic
isolation, both engines, and an end-to-end run on the real model (slow)."""

import math

import dp_accounting
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from core.records import ConversationBlock
from dp_ops.dp_events import PLDAccountant
from dp_ops.dp_stage_specs import DP_STAGE_SPECS
from dp_ops.joint_calibration import calibrate_jointly, clustering_request
from dp_ops.run_budget import RunBudget
from dp_ops.token_decoding import (
    STAGE,
    TokenDecodingParams,
    choose_members,
    clipped_sum,
    noisy_mean,
    token_decoding_request,
    token_decoding_spend,
)
from publishing.report import TOKEN_DECODING_NOTE
from tests.conftest import checked, local_pipeline
from tests.support.job_requests import job_requests
from transforms.token_decoding import EVIDENCE, TokenDecoding

D = 8
PARAMS = TokenDecodingParams(steps=3, sample_size=4, clip_norm=2.0)


def _rows(num_users: int, clusters: int, seed: int):
    """(user, conversation, cluster) rows: users with 1-3 conversations spread over several topics."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(num_users):
        for c in range(int(rng.integers(1, 4))):
            rows.append((f"u{u}", f"u{u}-c{c}", int(rng.integers(0, clusters))))
    return rows


def _release(rows, states: dict, params: TokenDecodingParams, clusters: int) -> np.ndarray:
    """One step's release without noise: every topic's clipped sum / n, concatenated (all topics together)."""
    members = choose_members(rows, params.sample_size, seed=5)
    return np.concatenate([clipped_sum(np.array([states[m] for m in members.get(c, [])]).reshape(-1, D),
                                       params.clip_norm) / params.sample_size for c in range(clusters)])


def test_a_user_decodes_one_conversation_in_one_topic_and_each_sample_is_at_most_n():
    rows = _rows(60, 3, seed=1)
    members = choose_members(rows, PARAMS.sample_size, seed=5)
    chosen = [m for ms in members.values() for m in ms]
    users = [m.split("-")[0] for m in chosen]
    assert len(users) == len(set(users))  # one conversation, one topic per user
    assert all(len(ms) <= PARAMS.sample_size for ms in members.values())
    assert all(len(ms) == PARAMS.sample_size for ms in members.values())  # 60 users fill every topic


@pytest.mark.parametrize("seed", range(20))
def test_adding_or_removing_a_user_moves_the_whole_release_by_at_most_2c_over_n(seed):
    rng = np.random.default_rng(seed)
    clusters = 3
    rows = _rows(int(rng.integers(3, 30)), clusters, seed)
    # states of norm up to 3C: the clipping has work to do
    states = {conv: rng.normal(size=D) * rng.uniform(0.1, 3) * PARAMS.clip_norm / math.sqrt(D) for _, conv, _ in rows}
    new_user = [("new", f"new-c{c}", int(rng.integers(0, clusters))) for c in range(2)]
    states.update({conv: rng.normal(size=D) * 10 for _, conv, _ in new_user})
    moved = np.linalg.norm(_release(rows + new_user, states, PARAMS, clusters) - _release(rows, states, PARAMS, clusters))
    assert moved <= PARAMS.l2_sensitivity * (1 + 1e-12)


def test_the_bound_2c_over_n_is_reached_when_a_new_user_displaces_a_member():
    # topic 0 full (n users), all states C * e1; the added user ranks first and has state -C * e1.
    n, clip = PARAMS.sample_size, PARAMS.clip_norm
    rows = [(f"u{i}", f"u{i}-c", 0) for i in range(40)]
    states = {conv: np.eye(D)[0] * clip for _, conv, _ in rows}
    before = _release(rows, states, PARAMS, 1)
    worst = 0.0
    for i in range(40):  # some added user enters the sample (and one member leaves)
        added = [(f"new{i}", f"new{i}-c", 0)]
        states[f"new{i}-c"] = -np.eye(D)[0] * clip * 5  # clipped to norm C
        worst = max(worst, np.linalg.norm(_release(rows + added, states, PARAMS, 1) - before))
    assert worst == pytest.approx(2 * clip / n)


def test_a_member_with_an_inf_or_nan_hidden_state_adds_nothing_and_the_release_stays_finite():
    """Review finding 6: C / inf = 0 and inf * 0 = NaN, so without a guard a non-finite state escapes the clip
    and the topic's release is NaN (no 2C/n bound). Each member's contribution (its row summed alone) must
    be finite with norm <= C, and the sum is the sum of the contributions."""
    clip = PARAMS.clip_norm
    rng = np.random.default_rng(3)
    states = rng.normal(size=(7, D)) * 10.0
    states[1, 2] = np.inf
    states[3, 0] = -np.inf
    states[4, 5] = np.nan
    states[5] = np.nan
    states[6] = 1e300  # finite, but its norm overflows to inf
    contributions = np.stack([clipped_sum(row[None, :], clip) for row in states])
    assert np.isfinite(contributions).all()
    assert (np.linalg.norm(contributions, axis=1) <= clip * (1 + 1e-12)).all()
    assert not contributions[[1, 3, 4, 5]].any()  # a row with a non-finite entry counts as zeros, whole
    assert np.linalg.norm(contributions[0]) == pytest.approx(clip)  # a finite row is clipped as before
    total = clipped_sum(states, clip)
    assert np.isfinite(total).all() and np.allclose(total, contributions.sum(axis=0))
    assert np.isfinite(noisy_mean(states, PARAMS, 0.5, 11, cluster=0, step=0)).all()


def test_noise_sd_matches_sigma():
    sigma = 0.7
    states = np.ones((3, 64))
    exact = noisy_mean(states, PARAMS, None, None, cluster=0, step=0)
    draws = np.stack([noisy_mean(states, PARAMS, sigma, noise_seed=11, cluster=c, step=s) - exact
                      for c in range(10) for s in range(30)])
    # 300 x 64 draws: the sample sd's relative standard error is ~1/sqrt(2 * 19200) = 0.5%
    assert draws.std() == pytest.approx(sigma, rel=0.03)
    assert abs(draws.mean()) < 4 * sigma / math.sqrt(draws.size)
    # independent across topics and steps (different streams), and reproducible with the test seed
    assert not np.allclose(draws[0], draws[1])
    assert np.array_equal(noisy_mean(states, PARAMS, sigma, 11, 0, 0), noisy_mean(states, PARAMS, sigma, 11, 0, 0))


def test_production_noise_sd_matches_sigma():
    sigma = 0.5
    states = np.zeros((1, 2000))
    draws = noisy_mean(states, PARAMS, sigma, None, cluster=0, step=0)
    assert draws.std() == pytest.approx(sigma, rel=0.08)


@pytest.mark.parametrize("multiplier,steps", [(3.0, 1), (5.0, 12), (20.0, 50)])
def test_spend_is_dp_accountings_pld_composition_of_t_gaussians(multiplier, steps):
    params = TokenDecodingParams(steps=steps, sample_size=16, clip_norm=40.0)
    spend = token_decoding_spend(params, multiplier, 1e-6)
    accountant = PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(multiplier), steps)
    assert spend.epsilon == pytest.approx(accountant.get_epsilon(1e-6), rel=1e-9)
    # T Gaussians of multiplier z are one of z / sqrt(T) (Gaussian DP): the composition really composes T
    single = PLDAccountant()
    single.compose(dp_accounting.GaussianDpEvent(multiplier / math.sqrt(steps)))
    assert spend.epsilon == pytest.approx(single.get_epsilon(1e-6), abs=0.02)
    assert spend.sensitivity == 2 * 40.0 / 16
    assert spend.noise["sigma"] == pytest.approx(multiplier * 5.0)


def test_the_stage_shares_the_runs_budget_and_the_total_is_the_budget():
    def requests_of(*flags):
        return job_requests("--keyword_votes", "count", "--keyword_noise", "gaussian", "--expected_users", "1000",
                            "--epsilon_weights", f"clustering:4,cluster_sizes:1,keyword_histograms:2,{STAGE}:2", *flags)

    requests = requests_of("--token_decoding_steps", "3", "--token_decoding_sample", "4", "--token_decoding_clip", "2")
    assert [r.stage for r in requests][-1] == STAGE
    assert requests[-1].releases == PARAMS.steps and requests[-1].sensitivity == PARAMS.l2_sensitivity
    assert STAGE not in [r.stage for r in requests_of()]
    assert any(spec.name == STAGE and spec.optional for spec in DP_STAGE_SPECS)
    joint = calibrate_jointly(8.0, 1e-6, requests)
    budget = RunBudget(1e-6)
    for stage in joint.stages.values():
        if stage.stage == STAGE:
            budget.register(token_decoding_spend(PARAMS, stage.noise_multiplier, 1e-6))
        else:
            budget.register(_spend_of(stage))
    assert budget.epsilon() <= 8.0
    assert budget.epsilon() == pytest.approx(8.0, abs=0.02)  # the stage lives inside the budget, which is used up
    own = token_decoding_spend(PARAMS, joint.stages[STAGE].noise_multiplier, 1e-6).epsilon
    assert own < 8.0


def _spend_of(stage):
    from core.spend import MechanismSpend
    from dp_ops.dp_events import event_to_json
    return MechanismSpend(stage.stage, "test", 0.0, 1e-6, stage.request.sensitivity, {}, event_to_json(stage.event()))


def test_request_is_t_gaussian_releases():
    request = token_decoding_request(1.0, PARAMS)
    assert (request.noise, request.releases, request.drawn_by_pipeline_dp) == ("gaussian", 3, False)
    assert clustering_request(1.0, 2).stage != request.stage


class _FakeDecoder:
    """Decodes to the text of the argmax coordinate of each step's release; fails on a member text 'boom'."""

    def setup(self):
        pass

    def decode(self, texts, release, steps):
        if "boom" in texts:
            raise RuntimeError("model failure")
        states = np.array([[len(t) % D == i for i in range(D)] for t in texts], dtype=float).reshape(-1, D)
        tokens = [int(np.argmax(release(step, states))) for step in range(steps)]

        class Out:
            text = " ".join(f"t{t}" for t in tokens)
        return Out()


def _blocks():
    users = [f"u{i}" for i in range(30)]
    cluster = np.array([i % 3 for i in range(30)])
    texts = ["x" * (i % 5 + 1) for i in range(30)]
    texts[2] = "boom"  # topic 2's user u2: a sample of topic 2 holds it (30 users, 10 per topic, n=4: maybe)
    return [ConversationBlock([f"c{i}" for i in range(30)], users, np.ones(30), texts, np.zeros((30, 4)),
                              cluster_ids=cluster)]


def _stage(budget=None, kept=(0, 1, 2, 3), sample_size=12):
    params = TokenDecodingParams(steps=2, sample_size=sample_size, clip_norm=1.0)
    return TokenDecoding(params, 4.0, 1e-6, budget, list(kept), _FakeDecoder(), seed=3, noise_seed=7)


def test_one_topics_failure_leaves_the_others_and_every_kept_topic_is_described():
    budget = RunBudget(1e-6)
    out = _stage(budget).local(_blocks())
    # topic 2 holds "boom" (10 users <= n = 12: all sampled): dead-lettered alone; topic 3 has no user but a
    # (pure-noise) description, so which topics are described says nothing beyond the kept set.
    assert sorted(out.descriptions) == [0, 1, 3]
    assert [d.conversation_id for d in out.dead_letter] == ["topic:2"]
    assert all(row["evidence"] == EVIDENCE for row in out.descriptions.values())
    assert [e.stage for e in budget.entries] == [STAGE]


def test_the_stage_gives_the_same_descriptions_on_beam_and_in_process():
    import apache_beam as beam
    expected = _stage(kept=(0, 1, 3)).local(_blocks()).descriptions
    with local_pipeline() as pipeline:
        kept = pipeline | "kept" >> beam.Create([0, 1, 3])
        blocks = pipeline | "blocks" >> beam.Create(_blocks())
        out = blocks | TokenDecoding(TokenDecodingParams(steps=2, sample_size=12, clip_norm=1.0), 4.0, 1e-6,
                                     RunBudget(1e-6), kept, _FakeDecoder(), seed=3, noise_seed=7)

        def same(actual):
            assert dict(actual) == expected
        assert_that(out.descriptions, checked(same), label="descriptions")


def test_decoders_of_one_file_share_one_loaded_model_per_process(monkeypatch):
    # A worker runs one DoFn instance per thread: each loading its own float32 copy would multiply the memory.
    from backends import token_decoder
    loads = []
    monkeypatch.setattr(token_decoder, "_loaded", {})
    monkeypatch.setattr(token_decoder, "_load_gguf", lambda path: loads.append(path) or (f"tokenizer of {path}", object()))
    first, second, other = (token_decoder.TokenDecoder(path) for path in ("/m/a.gguf", "/m/a.gguf", "/m/b.gguf"))
    for decoder in (first, second, other):
        decoder.setup()
    assert loads == ["/m/a.gguf", "/m/b.gguf"]
    assert first._model is second._model and first._tokenizer == "tokenizer of /m/a.gguf"
    assert other._model is not first._model


@pytest.mark.real_llm
def test_members_decoded_together_get_the_states_they_would_have_alone():
    from backends.token_decoder import TokenDecoder
    decoder = TokenDecoder()
    texts = ["How do I fix a Python import error?", "Best pasta recipe with tomatoes", "Plan a trip to Lisbon"]
    seen = {}

    def forced(key):
        def release(step, states):
            seen[(key, step)] = states
            return np.eye(states.shape[1])[step]  # the same tokens whoever is decoded
        return release

    decoder.decode(texts, forced("all"), 3)
    decoder.decode(texts[1:2], forced("alone"), 3)
    for step in range(3):
        assert np.array_equal(seen[("all", step)][1], seen[("alone", step)][0])


@pytest.mark.real_llm
def test_end_to_end_in_process_run_describes_every_topic_and_reports_its_spend():
    from backends.embedding import DEFAULT_EMBEDDING_MODEL, embed_texts
    from backends.token_decoder import TokenDecoder
    from eval.urania_inprocess import UraniaConfig, Writers, run_urania
    from synthetic.sample import generate_records
    from transforms.token_decoding import TokenDecodingPlan

    records = [r for r in generate_records(300, 150, 7) if "planted_topic" in r]
    texts = [" ".join(m["content"] for m in r["messages"] if m["role"] == "user") for r in records]
    embeddings = embed_texts(DEFAULT_EMBEDDING_MODEL, texts)
    config = UraniaConfig(num_clusters=4, epsilon=8.0, min_cluster_size=5,
                          epsilon_weights="clustering:4,cluster_sizes:1,keyword_histograms:2,token_decoding:2")
    plan = TokenDecodingPlan(TokenDecodingParams(steps=2, sample_size=3, clip_norm=40.0), TokenDecoder(), seed=1)
    report = run_urania([r["conversation_id"] for r in records], [r["user_id"] for r in records], texts, embeddings,
                        config, seed=1, noise_seed=3, writers=Writers(token_decoding=plan))
    assert all("token_decoded" in topic for topic in report["topics"]) and report["topics"]
    assert report["token_decoding_note"] == TOKEN_DECODING_NOTE
    mechanisms = {s["stage"]: s for s in report["privacy"]["mechanisms"]}
    assert report["privacy"]["epsilon"] <= 8.0 and report["privacy"]["epsilon"] == pytest.approx(8.0, abs=0.02)
    assert mechanisms[STAGE]["epsilon"] < 8.0 and "token-decoded" in mechanisms[STAGE]["releases"]
    assert all(topic["token_decoded"]["evidence"] == EVIDENCE for topic in report["topics"])
