"""The job's configuration: each params group declared once, as a frozen pydantic dataclass whose fields
are its flags, with their defaults, help, bounds and choices (core/params.py `flag`).

Beam-free: the jobs register and parse these flags with Beam (beam_jobs/options.py, beam_jobs/flags.py),
the evaluation and bench command lines register the ones they honour (eval/config_flags.py), and the
stages take their group as it is. A group is valid once it exists: building it checks every field's type,
declared bounds and choices, then the group's own `check_values`, raising a ValueError that names the flag.

The package sits just above dp_ops/ and below backends/ and transforms/: the privacy group's
--epsilon_weights is read from the DP stages' declarations (dp_ops/dp_stage_specs.py), and the
backends and stages read the groups. The LLM group (backends/llm/config.LLMParams) is declared where
it is resolved into each worker's client.

One module per group: reading, privacy, clustering, embedding, keywords, exemplars, decoding, run.
"""
