"""The optional `local` backend (llama-cpp-python + the assembled Qwen2.5-Coder-0.5B GGUF).

The smoke test runs only where both are installed (not in the default install or CI: llama-cpp-python
compiles for ~10 minutes); the option checks always run."""

import json
import os
import subprocess
import sys

import pytest

from backends.llm import local_client
from beam_jobs.options import InsightsOptions, insights_params
from tests.test_llm_backends import K


def test_local_backend_explains_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(local_client, "llama_cpp_available", lambda: False)
    with pytest.raises(ValueError, match="needs llama-cpp-python"):
        insights_params(InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "local"]))
    monkeypatch.setattr(local_client, "llama_cpp_available", lambda: True)
    with pytest.raises(ValueError, match="install_local_llm.py"):
        insights_params(InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "local",
                                         "--llm_model", str(tmp_path / "missing.gguf")]))


needs_local_model = pytest.mark.skipif(
    not local_client.llama_cpp_available() or not os.path.exists(local_client.default_local_model()),
    reason="optional local backend: needs `pip install llama-cpp-python==0.3.36` (compiles ~10 min) and "
           "`python scripts/install_local_llm.py`")


_SMOKE = """
import json, numpy as np
from backends.llm.config import LLMConfig
from backends.llm.steps import LLMClusterNamer, LLMKeywordSelector
from tests.test_llm_backends import K, _FixedSelector
config = LLMConfig(backend="local", model="", pseudonymize=False, max_retries=0)
namer = LLMClusterNamer(config)
name, description = namer.name(["python", "unit testing", "error message"])
selector = LLMKeywordSelector(config, K, fallback=_FixedSelector())
picks = selector.select(["The user asks how to fix a Python import error in a machine learning script."],
                        np.zeros((1, 2)), 5)
print(json.dumps({"name": name, "description": description, "picks": picks,
                  "namer": dict(namer.counters.totals), "selector": dict(selector.counters.totals)}))
"""


@pytest.mark.slow
@needs_local_model
def test_local_model_names_a_cluster_and_its_keyword_picks_stay_in_k():
    # In a child process: a llama.cpp build for another CPU dies with SIGILL, which must fail this
    # test, not kill the test session.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.run([sys.executable, "-c", _SMOKE], cwd=root, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))})
    assert child.returncode == 0, f"local model run failed ({child.returncode}): {child.stderr[-2000:]}"
    result = json.loads(child.stdout.strip().splitlines()[-1])
    print("local model:", result)
    assert result["namer"]["calls"] == 1 and 1 <= len(result["name"].split()) <= 10 and result["description"]
    (picks,) = result["picks"]
    assert set(picks) <= set(K) and len(picks) == len(set(picks)) <= 5
