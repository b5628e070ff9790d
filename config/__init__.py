"""The job's configuration: each params group declared once, as a frozen pydantic dataclass whose fields
are its flags, with their defaults, help, bounds and choices (core/params.py `flag`).

The groups are Beam-free: the jobs register and parse their flags with Beam (config/flags.py; each job's
groups: config/insights.py, config/keyword_set.py), the evaluation and bench command lines register the
ones they honour (eval/config_flags.py), and the stages take their group as it is. A group is valid once it
exists: building it checks every field's type, declared bounds and choices, then the group's own
`check_values`, raising a ValueError that names the flag.

The package sits just above dp_ops/ and below backends/ and transforms/: the privacy group's
--epsilon_weights is read from the DP stages' declarations (dp_ops/dp_stage_specs.py), and the
backends and stages read the groups. What the LLM group (config/llm.py) needs of the backends is in
backends/llm/config.py.

One module per group: reading, privacy, clustering, embedding, keywords, exemplars, decoding, llm, run, and
the keyword-set builder's keyword_set.
"""
