import pytest

from beam_jobs.insights import run
from beam_jobs.job_runtime import EXIT_BAD_OPTIONS, EXIT_UNREADABLE_INPUT
from beam_jobs.options import InsightsOptions, delta_split, validate


def _options(*extra):
    return InsightsOptions(["--input", "x.jsonl", "--output", "out", *extra])


def test_defaults_match_the_documented_interface():
    o = _options()
    assert (o.num_clusters, o.max_conversations_per_user, o.epsilon_clustering, o.epsilon_size,
            o.epsilon_keywords, o.delta, o.min_cluster_size, o.samples_per_cluster,
            o.keywords_per_cluster) == (50, 5, 4.0, 1.0, 2.0, 1e-6, 25, 200, 5)
    validate(o)


@pytest.mark.parametrize("flag,value,message", [
    ("--num_clusters", "0", "num_clusters"), ("--epsilon_size", "-1", "epsilon_size"),
    ("--epsilon_keywords", "inf", "epsilon_keywords"), ("--delta", "1", "delta"),
    ("--max_conversations_per_user", "0", "max_conversations_per_user"),
    ("--keywords_per_cluster", "0", "keywords_per_cluster"),
])
def test_bad_values_name_the_option(flag, value, message):
    with pytest.raises(ValueError, match=message):
        validate(_options(flag, value))


def test_missing_input_is_a_bad_option():
    with pytest.raises(ValueError, match="--input is required"):
        validate(InsightsOptions(["--output", "o"]))


def test_delta_goes_to_clustering_alone_with_laplace_keywords():
    assert delta_split(_options("--keyword_noise", "laplace")) == (1e-6, 0.0)
    assert delta_split(_options()) == (5e-7, 5e-7)


def test_run_exits_with_bad_options_code(tmp_path, capsys):
    assert run(["--input", "x", "--output", str(tmp_path), "--epsilon_size", "0"]) == EXIT_BAD_OPTIONS
    assert "epsilon_size" in capsys.readouterr().err


def test_run_exits_with_unreadable_input_code_when_nothing_matches(tmp_path, capsys):
    assert run(["--input", str(tmp_path / "none-*.jsonl"), "--output", str(tmp_path)]) == EXIT_UNREADABLE_INPUT
    assert "matches no file" in capsys.readouterr().err


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
        validate(InsightsOptions(["--input", "x", "--output", "y", *extra]))


def test_offline_is_the_default_and_builds_no_llm_step():
    from backends import factory
    from backends.offline import KeywordClusterNamer, UserTurnsFacetExtractor
    options = InsightsOptions(["--input", "x", "--output", "y"])
    validate(options)
    assert options.llm_backend == "offline" and options.pseudonymize is None
    assert isinstance(factory.make_facet_extractor(options), UserTurnsFacetExtractor)
    assert isinstance(factory.make_cluster_namer(options), KeywordClusterNamer)


def test_openai_backend_builds_llm_steps_with_pseudonymization_on_by_default():
    from backends import factory
    from backends.llm.steps import LLMClusterNamer, LLMFacetExtractor, LLMKeywordSelector
    options = InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "openai", "--llm_base_url",
                               "http://127.0.0.1:9/v1", "--llm_model", "m", "--llm_cache", "/tmp/c"])
    validate(options)
    extractor = factory.make_facet_extractor(options)
    assert isinstance(extractor, LLMFacetExtractor) and extractor.config.pseudonymize
    assert extractor.config.cache_path == "/tmp/c" and extractor.batch_size > 1
    assert isinstance(factory.make_keyword_selector(options, ("a", "b")), LLMKeywordSelector)
    assert isinstance(factory.make_cluster_namer(options), LLMClusterNamer)
