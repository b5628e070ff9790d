import dataclasses
import json
import os

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from backends import factory
from backends.keyword_set import load_keyword_set
from backends.llm import config as llm_config
from backends.llm.config import preflight
from beam_jobs import insights
from beam_jobs.insights import release_config, run
from beam_jobs.job_runtime import EXIT_BAD_OPTIONS, EXIT_UNREADABLE_INPUT
from config.clustering import ClusteringParams
from config.decoding import DecodingParams
from config.embedding import EmbeddingParams
from config.exemplars import ExemplarParams
from config.flags import argument_parser
from config.insights import InsightsOptions, InsightsParams, insights_params
from config.keyword_set import BuildKeywordsOptions, KeywordSetParams, build_keywords_params
from config.keywords import KeywordParams
from config.llm import LLMParams, default_timeout_s
from config.privacy import PrivacyParams
from config.reading import ReadingParams
from config.run import RunParams
from core.params import flag_fields, public_fields
from core.run_context import make_run_context
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA

INSIGHTS_GROUPS = (ReadingParams, PrivacyParams, ClusteringParams, EmbeddingParams, KeywordParams, ExemplarParams,
                   DecodingParams, LLMParams, RunParams)


def _options(*extra):
    return InsightsOptions(["--input", "x.jsonl", "--output", "out", *extra])


def _params(*extra) -> InsightsParams:
    return insights_params(_options(*extra))


def _flags(params_classes) -> set[str]:
    return {field.name for group in params_classes for field in flag_fields(group)}


def test_defaults_match_the_documented_interface():
    p = _params()
    assert (p.clustering.num_clusters, p.privacy.max_conversations_per_user, p.privacy.epsilon,
            p.privacy.stage_weights(), p.privacy.delta, p.clustering.min_cluster_size,
            p.keywords.samples_per_cluster, p.keywords.keywords_per_cluster, p.privacy.keyword_votes) == (
        50, 5, None, {"clustering": 4.0, "cluster_sizes": 1.0, "keyword_histograms": 2.0, "user_count": 0.1,
                      "themes": 2.5, "facets": 1.0, "facet_topics": 1.0, "token_decoding": 1.0}, 1e-6,
        25, "auto", 5, "weighted")


@pytest.mark.parametrize("backend,expected", [("offline", None), ("local", None), ("openai", 200), ("vertex", 200)])
def test_keyword_sampling_is_all_for_free_selectors_and_m_for_paid_ones(backend, expected):
    assert _params().keywords.resolved_samples_per_cluster(backend) == expected
    assert _params("--samples_per_cluster", "all").keywords.resolved_samples_per_cluster("openai") is None
    assert _params("--samples_per_cluster", "50").keywords.resolved_samples_per_cluster("offline") == 50


@pytest.mark.parametrize("flags", [["--samples_per_cluster", "0"], ["--samples_per_cluster", "some"],
                                   ["--keyword_noise", "laplace"], ["--max_keyword_partitions_per_user", "3"],
                                   ["--false_keywords_per_topic", "0"], ["--keywords_per_vote", "0"]])
def test_bad_or_retired_keyword_flags_are_refused_with_the_flag_named(flags):
    with pytest.raises(ValueError, match=flags[0]):
        _params(*flags)


def test_count_votes_keep_their_noise_and_l0_flags():
    privacy = _params("--keyword_votes", "count", "--keyword_noise", "laplace",
                      "--max_keyword_partitions_per_user", "3").privacy
    assert (privacy.histogram_noise, privacy.keyword_partitions_per_user) == ("laplace", 3)


def test_every_flag_belongs_to_exactly_one_group():
    names = [field.name for group in INSIGHTS_GROUPS for field in flag_fields(group)]
    assert len(names) == len(set(names))
    parsed = {action.dest for action in argument_parser(InsightsOptions)._actions if action.dest != "help"}
    assert parsed == set(names)


def test_settings_are_not_flags():
    """LLMParams' settings (core/params.py: setting) are fields the code fixes: never parsed,
    documented or public, and a test can still change them."""
    settings = {field.name for field in dataclasses.fields(LLMParams)} - _flags([LLMParams])
    assert settings == {"backoff_base_s", "temperature", "prefix_cache"}
    parsed = {action.dest for action in argument_parser(InsightsOptions)._actions}
    assert not settings & parsed and not settings & set(_params().public_config())
    with pytest.raises(SystemExit):
        argument_parser(InsightsOptions).parse_args(["--backoff_base_s", "0"])
    assert LLMParams(backoff_base_s=0.0).backoff_base_s == 0.0


def test_flags_as_dataflow_passes_them_reach_their_group():
    p = insights_params(InsightsOptions(["--input=x", "--output=y", "--num_clusters=7", "--epsilon=0.5",
                                         "--allow_rerun=true", "--llm_timeout_s=5", "--embedding_model=all-MiniLM-L6-v2",
                                         "--embedding_backend=onnx"]))
    assert (p.clustering.num_clusters, p.privacy.epsilon, p.run.allow_rerun, p.llm.llm_timeout_s,
            p.embedding.embedding_backend) == (7, 0.5, True, 5.0, "onnx")
    assert insights_params(_options("--allow_rerun")).run.allow_rerun is True
    assert insights_params(_options("--allow_rerun=false")).run.allow_rerun is False


def test_token_decoding_is_off_by_default_and_shown_in_the_config_only_when_on():
    assert _params().decoding.token_decoding is None
    assert "token_decoding" not in _params().public_config()
    on = _params("--token_decoding_steps", "12", "--token_decoding_sample", "16", "--token_decoding_clip", "30")
    assert (on.decoding.token_decoding.steps, on.decoding.token_decoding.sample_size,
            on.decoding.token_decoding.clip_norm) == (12, 16, 30.0)
    assert on.public_config()["token_decoding"] == {"steps": 12, "sample_size": 16, "clip_norm": 30.0}


def test_params_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _params().privacy.epsilon = 3.0


@pytest.mark.parametrize("flag,value,message", [
    ("--num_clusters", "0", "num_clusters"), ("--epsilon", "-1", "--epsilon must be"),
    ("--epsilon", "inf", "--epsilon must be"), ("--delta", "1", "delta"),
    ("--epsilon_weights", "clustering:4,cluster_sizes:1", "give a weight for keyword_histograms"),
    ("--epsilon_weights", "clustering:4,cluster_sizes:1,keyword_histograms:0", "keyword_histograms's weight"),
    ("--epsilon_weights", "clustering:4,sizes:1,keyword_histograms:2", "unknown stage 'sizes'"),
    ("--epsilon_weights", "clustering:x,cluster_sizes:1,keyword_histograms:2", "must be a number"),
    ("--epsilon_clustering", "4", "--epsilon_clustering is retired: give the run's total with --epsilon"),
    ("--epsilon_size", "1", "--epsilon_size is retired"), ("--epsilon_keywords", "2", "--epsilon_keywords is retired"),
    ("--max_delta_per_window", "0", "must be in \\(0, 0.001\\]"),
    ("--max_delta_per_window", "0.002", "--max_delta_per_window must be in \\(0, 0.001\\], got 0.002"),
    ("--max_delta_per_window", "0.5", "--max_delta_per_window must be in"),
    ("--cadence_days", "0", "--cadence_days must be >= 1"),
    ("--max_conversations_per_user", "0", "max_conversations_per_user"),
    ("--keywords_per_cluster", "0", "keywords_per_cluster"), ("--max_record_bytes", "0", "max_record_bytes"),
    ("--window_days", "0", "window_days"), ("--max_epsilon_per_window", "3", "needs --privacy_ledger"),
    ("--token_decoding_steps", "-1", "--token_decoding_steps must be in \\[0, 64\\]"),
    ("--token_decoding_steps", "65", "--token_decoding_steps must be in"),
    ("--token_decoding_sample", "0", "--token_decoding_sample must be >= 1"),
    ("--token_decoding_clip", "0", "--token_decoding_clip must be > 0 and finite"),
    ("--token_decoding_clip", "nan", "--token_decoding_clip must be > 0 and finite"),
    ("--keyword_min_similarity", "-1.5", "--keyword_min_similarity must be in \\[-1, 1\\], got -1.5"),
    ("--exemplar_candidates", "51", "--exemplar_candidates must be in \\[0, 50\\]"),
    ("--llm_timeout_s", "inf", "--llm_timeout_s must be > 0 and finite"),
])
def test_bad_values_name_the_option(flag, value, message):
    with pytest.raises(ValueError, match=message):
        _params(flag, value)


def test_a_group_checks_itself_when_built_directly():
    with pytest.raises(ValueError, match="--delta must be in"):
        PrivacyParams(delta=0)
    with pytest.raises(ValueError, match="--epsilon must be"):
        dataclasses.replace(_params().privacy, epsilon=float("nan"))


def test_missing_input_is_a_bad_option():
    with pytest.raises(ValueError, match="--input is required"):
        insights_params(InsightsOptions(["--output", "o"]))


def test_run_exits_with_bad_options_code(tmp_path, capsys):
    assert run(["--input", "x", "--output", str(tmp_path), "--epsilon", "0"]) == EXIT_BAD_OPTIONS
    assert "--epsilon must be" in capsys.readouterr().err


def test_run_exits_with_unreadable_input_code_when_nothing_matches(tmp_path, capsys):
    assert run(["--input", str(tmp_path / "none-*.jsonl"), "--output", str(tmp_path)]) == EXIT_UNREADABLE_INPUT
    assert "matches no file" in capsys.readouterr().err


def test_a_window_cap_needs_a_dated_input_and_a_run_without_one_is_refused_before_reading_data(tmp_path, capsys):
    """The review's: windows are keyed by the --date label, so the same undated logs run under several
    dates were charged to several windows (none of which held them all)."""
    ledger = str(tmp_path / "ledger.json")
    capped = ["--privacy_ledger", ledger, "--max_epsilon_per_window", "30"]
    with pytest.raises(ValueError, match="--max_epsilon_per_window needs a \\{date\\} placeholder in --input"):
        insights_params(InsightsOptions(["--input", "logs/*.jsonl", "--output", "out", *capped]))
    insights_params(InsightsOptions(["--input", "logs/dt={date}/*.jsonl", "--output", "out", *capped]))
    insights_params(InsightsOptions(["--input", "logs/*.jsonl", "--output", "out", "--privacy_ledger", ledger]))
    # A bad option: before the input is listed (it matches nothing here, exit code 3) or the ledger touched.
    assert run(["--input", str(tmp_path / "logs" / "*.jsonl"), "--output", str(tmp_path / "out"),
                "--date", "2026-11-20", *capped]) == EXIT_BAD_OPTIONS
    assert "{date}" in capsys.readouterr().err and not os.path.exists(ledger)


def test_run_rejects_an_unreadable_keyword_set(tmp_path):
    assert run(["--input", "x", "--output", str(tmp_path), "--keyword_set", str(tmp_path / "no.txt")]) \
        == EXIT_BAD_OPTIONS


@pytest.mark.parametrize("extra,message", [
    (["--llm_backend", "openai"], "needs --llm_base_url"),
    (["--llm_backend", "openai", "--llm_base_url", "127.0.0.1:8000"], "must start with http"),
    (["--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:8000/v1"], "needs --llm_model"),
    (["--llm_max_concurrency", "0"], "--llm_max_concurrency"),
    (["--llm_timeout_s", "0"], "--llm_timeout_s"),
    (["--llm_max_retries", "-1"], "--llm_max_retries"),
])
def test_llm_options_are_validated(extra, message):
    with pytest.raises(ValueError, match=message):
        _params(*extra)


def test_offline_is_the_default_and_builds_no_llm_step():
    from backends.offline import KeywordClusterNamer, UserTurnsFacetExtractor
    p = _params()
    assert p.llm.llm_backend == "offline" and p.llm.pseudonymize is None and p.llm.resolved() is None
    assert isinstance(factory.make_facet_extractor(p.reading.facet_max_chars, p.llm.resolved()),
                      UserTurnsFacetExtractor)
    assert isinstance(factory.make_cluster_namer(p.llm.resolved()), KeywordClusterNamer)


def test_openai_backend_builds_llm_steps_with_pseudonymization_on_by_default():
    from backends.llm.steps import LLMClusterNamer, LLMFacetExtractor, LLMKeywordSelector
    p = _params("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m",
                "--llm_cache", "/tmp/c")
    config = p.llm.resolved()
    extractor = factory.make_facet_extractor(p.reading.facet_max_chars, config)
    assert isinstance(extractor, LLMFacetExtractor) and extractor.config.pseudonymizes
    assert extractor.config.llm_cache == "/tmp/c" and extractor.batch_size > 1
    selector = factory.make_keyword_selector(("a", "b"), p.embedding.encoder, p.keywords.keyword_min_similarity,
                                             config)
    assert isinstance(selector, LLMKeywordSelector)
    assert isinstance(factory.make_cluster_namer(config), LLMClusterNamer)


@pytest.mark.parametrize("extra, pseudonymizes", [
    (("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m"), True),
    (("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m",
      "--pseudonymize", "off"), False),
    (("--pseudonymize", "on"), False),  # the offline backend writes no prompt
])
def test_a_pseudonymizing_run_without_the_name_model_stops_at_launch(monkeypatch, extra, pseudonymizes):
    from backends.pii import name_model
    assert _params(*extra).llm.pseudonymizes == pseudonymizes

    def missing():
        raise name_model.NameModelMissing("the pseudonymizer's name model is not installed: pip install ...")
    monkeypatch.setattr(name_model, "model_directory", missing)
    remote_calls = []
    monkeypatch.setattr(llm_config, "preflight_remote", lambda params: remote_calls.append(params))
    llm = _params(*extra).llm  # parsing the flags does not look for the model
    if pseudonymizes:
        with pytest.raises(ValueError, match="--pseudonymize: the pseudonymizer's name model is not installed"):
            factory.preflight(llm)
        assert remote_calls == []  # the environment is checked before the remote preflight call
    else:
        factory.preflight(llm)
        assert len(remote_calls) == (llm.llm_backend != "offline")


def test_parsing_the_flags_does_not_look_at_the_machine(monkeypatch):
    """Only backends.llm.config.preflight, at a job's launch, checks what the flags need of the machine: params
    (and the option docs) build without xllamacpp, a model, a project or the name model."""
    from backends.llm import local_client
    from backends.pii import name_model

    def unavailable(*args):
        raise AssertionError("the environment was looked at while parsing the flags")
    for module, name in ((local_client, "xllamacpp_available"), (local_client, "check_local_model"),
                         (local_client, "resolve_local_model"), (name_model, "model_directory")):
        monkeypatch.setattr(module, name, unavailable)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    assert _params("--llm_backend", "local", "--pseudonymize", "on").llm.llm_backend == "local"
    assert _params("--llm_backend", "vertex").llm.llm_project is None
    with pytest.raises(ValueError, match="--llm_backend=vertex needs --llm_project or \\$GOOGLE_CLOUD_PROJECT"):
        preflight(_params("--llm_backend", "vertex", "--pseudonymize", "off").llm)


def test_both_jobs_preflight_once_at_launch_before_reading_data(monkeypatch, tmp_path, capsys):
    """insights.run and build_keywords.run call the one preflight (backends.factory.preflight, which runs
    backends.llm.config.preflight) once, before looking at --input: a failed preflight is a bad option (exit 2) even
    where the input matches nothing (else exit 3)."""
    from backends.llm import local_client
    from beam_jobs import build_keywords
    calls = []
    original = llm_config.preflight
    monkeypatch.setattr(llm_config, "preflight", lambda params: calls.append(params) or original(params))
    monkeypatch.setattr(local_client, "xllamacpp_available", lambda: False)
    missing = str(tmp_path / "none-*.jsonl")
    assert run(["--input", missing, "--output", str(tmp_path / "out"), "--llm_backend", "local"]) == EXIT_BAD_OPTIONS
    assert "needs xllamacpp" in capsys.readouterr().err and len(calls) == 1
    assert build_keywords.run(["--method", "llm", "--input", missing, "--output", str(tmp_path / "public" / "kw.json"),
                               "--private_output", str(tmp_path / "private"), "--date", "2026-11-20",
                               "--llm_backend", "local"]) == EXIT_BAD_OPTIONS
    assert "needs xllamacpp" in capsys.readouterr().err and len(calls) == 2


def test_surrogate_pseudonyms_reach_the_resolved_params_and_need_pseudonymization():
    remote = ("--llm_backend", "openai", "--llm_base_url", "http://127.0.0.1:9/v1", "--llm_model", "m")
    assert _params(*remote).llm.resolved().pseudonyms == "typed"
    assert _params(*remote, "--pseudonyms", "surrogate").llm.resolved().pseudonyms == "surrogate"
    for extra in (("--pseudonyms", "surrogate"), (*remote, "--pseudonymize", "off", "--pseudonyms", "typed")):
        with pytest.raises(ValueError, match="--pseudonyms needs pseudonymization"):
            _params(*extra)


# The report's configuration: derived from what the params declare public.

# Today's keys: the hand-listed ones, with the per-stage epsilons replaced by the total and its weights.
TODAYS_CONFIG_KEYS = {
    "run_id", "date", "num_clusters", "max_conversations_per_user", "epsilon", "epsilon_weights", "delta",
    "min_cluster_size", "samples_per_cluster", "keywords_per_cluster",
    "max_keywords_per_conversation", "max_keyword_partitions_per_user", "keyword_noise", "keyword_mode",
    "keyword_votes", "keywords_per_vote", "category_vote_share", "false_keywords_per_topic", "keyword_candidates",
    "label_fallback",
    "keyword_set", "embedding_model", "embedding_backend", "embedding_device", "llm_backend", "llm_steps",
    "embedding_dim", "kmeans_iterations",
    "projection_dim", "projection_basis", "expected_users", "noise_seed_fixed", "privacy_ledger",
    "exemplars_per_topic", "exemplar_candidates", "exemplar_rounds", "warm_start", "warm_prior",
    "themes", "facets", "centre_decoder"}

# Distinctive values for every private thing a run may be given: none may reach the report.
SECRET_FLAGS = ["--input", "/secret/in-7f3a/dt={date}/*.jsonl", "--output", "/secret/out-7f3a",
                "--private_output", "gs://secret-private-7f3a", "--seed", "918273645",
                "--canary_file", "/secret/canaries-7f3a.txt", "--llm_backend", "openai",
                "--llm_base_url", "http://secret-host-7f3a:8000/v1", "--llm_model", "secret-model-7f3a",
                "--llm_cache", "gs://secret-cache-7f3a", "--keyword_set", "/secret/kw-7f3a.txt",
                "--date", "yesterday"]
# A ledgered run refuses --noise_seed, so each private value is given to one of two runs.
SECRET_RUNS = {"ledgered": ["--privacy_ledger", "gs://secret-ledger-7f3a/l.json", "--max_epsilon_per_window", "30"],
               "seeded": ["--noise_seed", "564738291"]}


def _secret_run(tmp_path, kind):
    (tmp_path / "kw.txt").write_text("python\nsql\n")
    flags = [value.replace("/secret/kw-7f3a.txt", str(tmp_path / "kw.txt")) for value in SECRET_FLAGS + SECRET_RUNS[kind]]
    p = insights_params(InsightsOptions(flags))
    context = make_run_context(p.reading.input, p.run.output, p.run.date, private_output=p.run.private_output)
    return p, release_config(p, load_keyword_set(p.keywords.keyword_set), 384, context), context


def test_a_ledgered_run_refuses_a_noise_seed():
    with pytest.raises(ValueError, match="--noise_seed is for tests only"):
        insights_params(InsightsOptions(["--input", "in.jsonl", "--output", "out", *SECRET_RUNS["ledgered"],
                                         *SECRET_RUNS["seeded"]]))
    with pytest.raises(ValueError, match="--noise_seed is for tests only"):
        build_keywords_params(BuildKeywordsOptions(["--method", "public", "--public_corpus", "c.txt", "--output",
                                                    "kw.json", "--privacy_ledger", "l.json", "--noise_seed", "1"]))


@pytest.mark.parametrize("kind", SECRET_RUNS)
def test_release_config_is_what_the_params_declare_public(tmp_path, kind):
    p, config, context = _secret_run(tmp_path, kind)
    groups = [getattr(p, field.name) for field in dataclasses.fields(p)]
    declared = {name: value for group in groups for name, value in public_fields(group).items()}
    derived = {"noise_seed_fixed": kind == "seeded",
               "privacy_ledger": {"window_days": 30, "max_epsilon_per_window": 30.0,
                                  "max_delta_per_window": DEFAULT_WINDOW_DELTA, "cadence_days": 1}
               if kind == "ledgered" else None,
               # the steps that ran on the model: --llm_steps, or the backend's default
               "llm_steps": "facets,keywords,names,exemplars"}
    keyword_set = load_keyword_set(p.keywords.keyword_set)
    assert config == {"run_id": context.run_id, "date": context.date, **declared, **derived, "embedding_dim": 384,
                      "keyword_set": {"method": keyword_set.method, "size": 2, "version": keyword_set.version,
                                      "created_at": keyword_set.created_at}}
    assert set(config) == TODAYS_CONFIG_KEYS  # the keys of the config as it was hand-listed


@pytest.mark.parametrize("kind", SECRET_RUNS)
def test_no_private_value_enters_the_release_config(tmp_path, kind):
    p, config, _ = _secret_run(tmp_path, kind)
    text = json.dumps(config)
    assert "7f3a" not in text and "918273645" not in text and "564738291" not in text
    for group in (getattr(p, field.name) for field in dataclasses.fields(p)):
        for field in flag_fields(group):
            if not field.metadata["public"] and field.name in config:
                # A public value may reuse a private field's name (privacy_ledger: whether a cap was
                # checked; keyword_set: the set's description; date: the resolved date), never its value.
                assert getattr(group, field.name) is None or config[field.name] != getattr(group, field.name), \
                    field.name


# The keyword-set builder: its own flags and only the groups it needs.

def test_build_keywords_takes_only_the_groups_it_needs():
    parsed = {action.dest for action in argument_parser(BuildKeywordsOptions)._actions if action.dest != "help"}
    assert parsed == _flags((KeywordSetParams, ReadingParams, PrivacyParams, EmbeddingParams, LLMParams, RunParams))
    assert not parsed & _flags((ClusteringParams, KeywordParams))  # --num_clusters, --keyword_set, ...


def test_build_keywords_ignores_the_insights_jobs_other_groups():
    options = PipelineOptions(["--method", "public", "--public_corpus", "p.txt", "--input", "x", "--output", "kw.json",
                               "--num_clusters", "0", "--keywords_per_cluster", "0"])
    params = build_keywords_params(options.view_as(BuildKeywordsOptions))
    assert params.builder.method == "public" and not hasattr(params, "clustering")
    with pytest.raises(ValueError, match="--num_clusters"):
        insights_params(options.view_as(InsightsOptions))


def _build_keywords(*argv):
    return build_keywords_params(PipelineOptions(list(argv)).view_as(BuildKeywordsOptions))


@pytest.mark.parametrize("method", ["tfidf", "llm", "hybrid"])
def test_a_dp_build_needs_its_datas_date_and_a_private_folder_outside_the_public_files(method, tmp_path):
    dp = ["--method", method, "--public_corpus", "p.txt", "--input", "logs/*.jsonl", "--output", "kw/set.json"]
    params = _build_keywords(*dp, "--date", "2026-10-31", "--data_days", "31", "--private_output", "private/kw")
    assert (params.run.date, params.builder.data_days, params.run.private_output) == ("2026-10-31", 31, "private/kw")
    assert _build_keywords(*dp, "--date", "2026-10-31", "--private_output", "private/kw").builder.data_days == 1
    with pytest.raises(ValueError, match="needs --date"):  # a build day is not the data's
        _build_keywords(*dp, "--private_output", "private/kw")
    with pytest.raises(ValueError, match="needs --private_output"):  # no default beside the public file
        _build_keywords(*dp, "--date", "2026-10-31")
    with pytest.raises(ValueError, match="--data_days"):
        _build_keywords(*dp, "--date", "2026-10-31", "--private_output", "private/kw", "--data_days", "0")
    for output, private in [("kw/set.json", "kw/set.json.private"), ("kw/set.json", "kw"), ("kw/set.json", "./kw/p/"),
                            ("set.json", "private"), (str(tmp_path / "set.json"), str(tmp_path / "p")),
                            ("gs://public/kw/set.json", "gs://public/kw/private/"),
                            ("gs://public/set.json", "gs://public/private")]:
        with pytest.raises(ValueError, match="inside the folder of the public keyword-set file"):
            _build_keywords(*dp[:-1], output, "--date", "2026-10-31", "--private_output", private)
    for output, private in [("kw/set.json", "kw-private"), ("gs://public/set.json", "gs://private/kw"),
                            ("gs://public/kw/set.json", "gs://public/private"), (str(tmp_path / "kw" / "set.json"),
                                                                                str(tmp_path / "private"))]:
        _build_keywords(*dp[:-1], output, "--date", "2026-10-31", "--private_output", private)


def test_the_public_method_needs_neither_a_date_nor_a_private_folder():
    params = _build_keywords("--method", "public", "--public_corpus", "p.txt", "--output", "kw/set.json")
    assert params.run.date is None and params.run.private_output is None


# run() reads its params and leaves the parsed options as they were.

@pytest.mark.e2e
def test_run_leaves_the_options_unchanged_and_records_the_resolved_values(tmp_path, monkeypatch):
    import torch

    from synthetic.sample import write_sample
    write_sample(str(tmp_path / "day.jsonl"), 40, 10, seed=3)
    created = []

    def recording_options(argv):
        created.append(PipelineOptions(argv))
        return created[-1]

    # A resolved thread count other than the flag's 0 (auto), and the process's own, so that the
    # embedding DoFn's torch.set_num_threads changes nothing for later tests.
    resolved_threads = torch.get_num_threads()
    monkeypatch.setattr(insights, "PipelineOptions", recording_options)
    monkeypatch.setattr(insights, "resolve_embedding_threads", lambda embedding, pipeline_options: resolved_threads)
    output = str(tmp_path / "out")
    assert run(["--input", str(tmp_path / "day.jsonl"), "--output", output, "--num_clusters", "2",
                "--min_cluster_size", "1000", "--progress", "off"]) == 0
    options = created[0].view_as(InsightsOptions)
    assert options.seed is None and options.embedding_threads == 0
    stats = json.load(open(os.path.join(output, "private", "run_stats.json")))
    assert isinstance(stats["seed"], int) and stats["embedding_threads"] == resolved_threads >= 1


def test_llm_timeout_defaults_to_a_minute_remote_and_ten_local():
    openai = LLMParams(llm_backend="openai", llm_base_url="http://h/v1", llm_model="m")
    assert openai.timeout_s == 60.0 and dataclasses.replace(openai, llm_timeout_s=5.0).timeout_s == 5.0
    assert LLMParams(llm_backend="vertex", llm_project="p").timeout_s == 60.0
    assert LLMParams(llm_backend="local").timeout_s == default_timeout_s("local") == 600.0


def test_resolved_params_carry_what_the_launcher_resolves(monkeypatch):
    """LLMParams.resolved, on the launcher: the backend's defaults filled in, so that no worker resolves
    them from its own environment; the flags as given stay as they were."""
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "launcher-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    vertex = _params("--llm_backend", "vertex", "--llm_steps", "names, facets").llm
    resolved = vertex.resolved()
    assert (resolved.llm_model, resolved.llm_project, resolved.llm_location, resolved.llm_timeout_s,
            resolved.pseudonymize, resolved.pseudonyms, resolved.steps) == (
        "gemini-2.5-flash", "launcher-project", "europe-west4", 60.0, "on", "typed", ("names", "facets"))
    assert (vertex.llm_model, vertex.llm_project, vertex.pseudonymize) == (None, None, None)
    assert resolved.resolved() == resolved
    local = _params("--llm_backend", "local").llm.resolved()
    assert (local.llm_model, local.llm_timeout_s, local.pseudonymize, local.pseudonyms) == ("", 600.0, "off", None)
    assert not local.pseudonymizes and local.uses("exemplars") and local.uses("keyword_set")
    assert not _params("--llm_backend", "local", "--llm_steps", "names").llm.resolved().uses("facets")
    # picklable, as the workers get it
    import pickle
    assert pickle.loads(pickle.dumps(resolved)) == resolved
