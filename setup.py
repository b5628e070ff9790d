"""urania-beam: topic insights from chatbot logs under user-level differential privacy.

Installed on Dataflow workers too (--setup_file ./setup.py), so it lists runtime needs only and
ships the bundled keyword set, the report and timeline pages' templates and the synthetic generators'
planted data as package data.
"""

import setuptools

with open("requirements.txt") as handle:
    REQUIREMENTS = [line.strip() for line in handle if line.strip() and not line.startswith("#")]

setuptools.setup(
    name="urania-beam",
    version="0.1.0",
    description="User-level DP topic insights from chatbot conversation logs on Apache Beam (URANIA).",
    python_requires=">=3.10",
    packages=setuptools.find_packages(include=["beam_jobs", "beam_jobs.*", "transforms", "transforms.*", "core", "core.*",
                                                "config", "config.*",
                                                "publishing", "publishing.*",
                                                "dp_ops", "dp_ops.*", "backends", "backends.*", "eval", "eval.*",
                                                "synthetic", "synthetic.*"]),
    package_data={"beam_jobs": ["resources/*.txt", "resources/*.json"], "publishing": ["templates/*.j2"],
                  "synthetic": ["data/*.json"]},
    install_requires=REQUIREMENTS,
)
