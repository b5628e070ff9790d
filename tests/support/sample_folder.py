"""A module's own folder holding a generated sample input, for the tests that run the job on one."""

from __future__ import annotations

import pathlib


def sample_folder(tmp_path_factory, name: str, conversations: int, users: int, seed: int,
                  file: str = "day.jsonl") -> tuple[pathlib.Path, str]:
    """A new folder (tmp_path_factory.mktemp(name)) holding the generator's sample of `conversations`
    conversations by `users` users (synthetic.sample.write_sample, `seed`) as `file`: the folder
    and the file's path."""
    from synthetic.sample import write_sample
    folder = tmp_path_factory.mktemp(name)
    data = str(folder / file)
    write_sample(data, conversations, users, seed=seed)
    return folder, data
