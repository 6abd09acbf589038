"""Byte-mutation fuzzing of the front end: every mutant must parse or give a located PtocError.

Used by tests/test_frontend.py (a few hundred mutants) and bench/fuzz_frontend.py (10,000).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from pto_compiler import api
from pto_compiler.diagnostics import PtocError
from pto_compiler.targets import A2A3

_INSERTABLE = b"%@#!<>(){}[],:=-x0123456789 \nabcdefgtuv?\""


def mutate(rng: random.Random, text: str) -> str:
    """1-4 random deletions, insertions of syntax-relevant bytes, or byte overwrites."""
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        pos = rng.randrange(len(data)) if data else 0
        if kind < 0.4 and data:
            del data[pos:pos + rng.randint(1, 8)]
        elif kind < 0.7:
            data[pos:pos] = bytes(rng.choice(_INSERTABLE) for _ in range(rng.randint(1, 4)))
        elif data:
            data[pos] = rng.randrange(256)
    return data.decode("utf-8", errors="replace")


@dataclass
class FuzzStats:
    runs: int = 0
    accepted: int = 0
    located_errors: int = 0
    unlocated_errors: int = 0
    slowest_s: float = 0.0
    crashes: list[tuple[str, str]] = field(default_factory=list)
    """(exception text, mutant) for anything other than a PtocError."""


def fuzz(sources: list[str], count: int, seed: int) -> FuzzStats:
    rng = random.Random(seed)
    stats = FuzzStats()
    for _ in range(count):
        text = mutate(rng, rng.choice(sources))
        start = time.perf_counter()
        try:
            module = api.parse(text, "fuzz.pto")
            api.verify(module, A2A3)
            api.print_module(module)
            stats.accepted += 1
        except PtocError as err:
            if err.diagnostics and err.diagnostics[0].line > 0:
                stats.located_errors += 1
            else:
                stats.unlocated_errors += 1
        except Exception as exc:  # noqa: BLE001 - the point is to catch every other kind
            stats.crashes.append((f"{type(exc).__name__}: {exc}", text))
        stats.runs += 1
        stats.slowest_s = max(stats.slowest_s, time.perf_counter() - start)
    return stats
