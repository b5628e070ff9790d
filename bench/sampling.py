"""A background thread that takes a sample every `interval` seconds while a `with` block runs, and one
last sample when it ends (the benches' memory and CPU watches subclass it and define `sample`)."""

from __future__ import annotations

import threading


class PeriodicSampler:
    def __init__(self, interval: float):
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *unused):
        self._stop.set()
        self._thread.join()
        self.sample()
