"""Where the host time of one ptoc run went (``ptoc --stats``), as mlir-opt's ``--mlir-timing`` reports it.

A :class:`HostTimes` is passed down explicitly (no global timer), so runs on several threads keep
their own.  Wall-clock seconds (``time.perf_counter``)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

PHASES = ("parse", "passes", "emit", "execute", "golden", "compare")
"""The keys of ``host_seconds`` in ``--stats json``, in pipeline order; ``passes`` is an object."""


@dataclass
class HostTimes:
    seconds: dict[str, float] = field(default_factory=dict)
    passes: dict[str, float] = field(default_factory=dict)
    """Seconds per pass, by pass name (``verify``: the op verifiers and pto-verify-target)."""
    current: str = ""
    """The phase or pass running now (ptoc's progress line shows it)."""

    def phase(self, name: str):
        """Time a ``with`` body into phase ``name`` (added up over repeated phases)."""
        return _timed(self, self.seconds, name)

    def pass_(self, name: str):
        """Time a ``with`` body into pass ``name``."""
        return _timed(self, self.passes, name)

    def pipeline_callback(self, observe=None):
        """An xDSL ``PassPipeline`` callback that charges the time between callbacks to the pass just
        run, then calls ``observe(pass_name, module)`` (untimed) if given."""
        start = time.perf_counter()

        def callback(previous, module, _next) -> None:
            nonlocal start
            if previous is not None:
                self.passes[previous.name] = self.passes.get(previous.name, 0.0) + time.perf_counter() - start
                if observe is not None:
                    observe(previous.name, module)
            self.current = _next.name if _next is not None else self.current
            start = time.perf_counter()

        return callback

    def to_dict(self) -> dict:
        return {name: dict(self.passes) if name == "passes" else self.seconds.get(name, 0.0) for name in PHASES}

    def to_text(self) -> str:
        total = sum(self.seconds.get(n, 0.0) for n in PHASES if n != "passes") + sum(self.passes.values())
        lines = [f"host time: {total:.3f} s"]
        for name in PHASES:
            if name == "passes":
                lines.extend(f"  pass {p:<24}{s:>9.3f} s" for p, s in self.passes.items())
            else:
                lines.append(f"  {name:<29}{self.seconds.get(name, 0.0):>9.3f} s")
        return "\n".join(lines)


@contextmanager
def _timed(times: HostTimes, table: dict[str, float], name: str):
    times.current = name
    start = time.perf_counter()
    try:
        yield
    finally:
        table[name] = table.get(name, 0.0) + time.perf_counter() - start
