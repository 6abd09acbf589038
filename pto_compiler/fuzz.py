"""Fuzzing ptoc (issue 15).

* :func:`fuzz`: byte mutants through the front end only (parse, verify, print): every mutant
  parses or gives a located PtocError (tests/test_frontend.py, bench/fuzz_frontend.py).
* :func:`campaign`: the whole compiler and both models.  Byte-, token- and structure-level
  mutants of the examples and lit inputs, and random well-typed kernels (fuzz_kernels.py), each
  run as ``ptoc FILE --target T --run`` in-process with a limit of CPU seconds.  A mutant must end in exit
  0, 1 or 2 (3 or 4 only when the mutant itself is wrong: it is kept for review); a generated
  kernel, well typed by construction, must PASS (exit 0), unless it is ill-conditioned: its FAIL is
  at elements that the golden model's summation order decides (:func:`order_dependent`, reported
  apart, neither a PASS nor a bug).  Exit 70 (an internal error), a Python
  traceback, or a run over the time limit is a failure (tests/fuzz/, bench/fuzz.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
import tempfile
import time
from collections import Counter
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
            if err.exit_code == 70:  # the API's wrapping of an unexpected exception: a crash
                stats.crashes.append((f"{type(err.__cause__).__name__}: {err.__cause__}", text))
            elif err.diagnostics and err.diagnostics[0].line > 0:
                stats.located_errors += 1
            else:
                stats.unlocated_errors += 1
        except Exception as exc:  # noqa: BLE001 - the point is to catch every other kind
            stats.crashes.append((f"{type(exc).__name__}: {exc}", text))
        stats.runs += 1
        stats.slowest_s = max(stats.slowest_s, time.perf_counter() - start)
    return stats


# ---- token- and structure-level mutation ----------------------------------------------------------

_TOKEN = re.compile(r'%[\w.$#-]+|@[\w.$-]+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|"[^"\n]*"|[A-Za-z_][\w.]*|\S')
_NUMBER = re.compile(r"-?\d")
_INTERESTING = ("0", "-1", "1", "2", "3", "7", "16", "31", "32", "33", "64", "4096", "65536", "196608",
                "2147483648", "-2147483649", "9223372036854775808", "18446744073709551616", "1e30", "-0.0",
                "0x7fffffff", "?")
_DTYPES = ("f32", "f16", "bf16", "i32", "i16", "i8", "ui8", "i64", "f64", "i1", "index")
_OPS = ("pto.tadd", "pto.tmul", "pto.tsub", "pto.tdiv", "pto.tmax", "pto.texp", "pto.tabs", "pto.tadds",
        "pto.tmuls", "pto.texpands", "pto.trowsum", "pto.trowmax", "pto.tcolsum", "pto.trowexpandmul",
        "pto.tcolexpandadd", "pto.tmov", "pto.tcvt", "pto.tload", "pto.tstore", "pto.tpairreducesum",
        "pto.trowexpand", "pto.set_flag", "pto.wait_flag", "pto.barrier", "pto.tassign", "scf.yield")


def mutate_tokens(rng: random.Random, text: str) -> str:
    """1-3 token edits: delete, duplicate or swap tokens, or replace one with an interesting
    number, another SSA name, another identifier of the same file or a dtype."""
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return text
    toks = [text[a:b] for a, b in spans]
    seps = [text[:spans[0][0]]] + [text[spans[i][1]:spans[i + 1][0]] for i in range(len(spans) - 1)] + \
        [text[spans[-1][1]:]]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(toks))
        tok = toks[i]
        kind = rng.random()
        if kind < 0.2:
            toks[i] = ""
        elif kind < 0.3:
            toks[i] = tok + " " + tok
        elif kind < 0.45:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif _NUMBER.match(tok) or kind < 0.6:
            toks[i] = rng.choice(_INTERESTING)
        elif tok.startswith("%"):
            toks[i] = rng.choice([t for t in toks if t.startswith("%")])
        elif tok in _DTYPES or kind < 0.8:
            toks[i] = rng.choice(_DTYPES)
        else:
            toks[i] = rng.choice([t for t in toks if t[:1].isalpha()] or [tok])
    return seps[0] + "".join(t + sep for t, sep in zip(toks, seps[1:]))


def mutate_structure(rng: random.Random, text: str, donors: list[str]) -> str:
    """1-2 line edits: delete, duplicate, swap or move a line, splice in a line of another file,
    rename an op to another catalogue op, change a dtype or a tile dimension on a line."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(lines))
        kind = rng.random()
        if kind < 0.2 and len(lines) > 1:
            del lines[i]
        elif kind < 0.3:
            lines.insert(i, lines[i])
        elif kind < 0.45:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind < 0.55:
            lines.insert(rng.randrange(len(lines) + 1), lines.pop(i))
        elif kind < 0.7:
            donor = rng.choice(donors).split("\n")
            lines.insert(i, rng.choice(donor))
        elif kind < 0.82:
            lines[i] = re.sub(r"\b(pto|scf)\.\w+", lambda m: rng.choice(_OPS), lines[i], count=1)
        elif kind < 0.92:
            lines[i] = re.sub(r"\b(f32|f16|bf16|i32|i16|i8|index)\b", lambda m: rng.choice(_DTYPES), lines[i])
        else:
            lines[i] = re.sub(r"\b(\d+)x(\d+)x", lambda m: f"{rng.choice(_INTERESTING[:11])}x{m.group(2)}x",
                              lines[i], count=1)
    return "\n".join(lines)


def mutant(rng: random.Random, sources: list[str], kind: str) -> str:
    text = rng.choice(sources)
    if kind == "byte":
        return mutate(rng, text)
    if kind == "token":
        return mutate_tokens(rng, text)
    return mutate_structure(rng, text, sources)


MUTATION_KINDS = ("byte", "token", "structure")


# ---- running one case ------------------------------------------------------------------------------

@dataclass
class Outcome:
    rc: int
    seconds: float
    timed_out: bool
    output: str
    """stdout and stderr together (the traceback of an internal error: ptoc runs with --debug)."""


class _Deadline(KeyboardInterrupt):
    """Raised by the timer: ptoc's main turns a KeyboardInterrupt into exit 130, unwinding cleanly."""


def _alarm(signum, frame):
    raise _Deadline()


def run_ptoc(text: str, flags: list[str], limit_s: float = 10.0) -> Outcome:
    """``ptoc FILE *flags --debug`` in this process on ``text``, stopped after ``limit_s`` seconds
    of CPU time (this process's: on a shared machine wall time measures the neighbours)."""
    from pto_compiler import api, cli, pipeline  # noqa: F401 - imported before the alarm can cut an import
    from pto_compiler.runtime import executor, reference, vf_executor  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzz.pto")
        with open(path, "w", encoding="utf-8", errors="replace") as f:
            f.write(text)
        out = io.StringIO()
        old = signal.signal(signal.SIGPROF, _alarm)
        start = time.process_time()
        try:
            signal.setitimer(signal.ITIMER_PROF, limit_s)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = cli.main([path, *flags, "--debug"])
        except _Deadline:
            rc = 130
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, old)
        seconds = time.process_time() - start
        return Outcome(rc, seconds, rc == 130 or seconds >= limit_s, out.getvalue())


# ---- the oracle's limit: outputs the summation order decides ------------------------------------------

def order_dependent(text: str, target: str, seed: int, inputs: dict | None = None) -> str | None:
    """Why a generated kernel that FAILs is ill-conditioned, not miscompiled, or None: each output
    that FAILs is one :func:`pipeline.order_decided` finds the summation order decides (``ptoc
    --run`` says ``ILL-CONDITIONED`` and exits 5).  The inputs are ``ptoc --run --seed seed``'s
    (``inputs`` given instead, as ``--input`` gives them)."""
    from pto_compiler import pipeline

    module = api.parse(text, "fuzz.pto")
    res = api.check(module, target, inputs, seed=seed)
    failed = [c.name for c in res.comparisons if not c.ok]
    why = pipeline.order_decided(module, res, target)
    if not failed or set(failed) != set(why):
        return None
    return "; ".join(f"{name}: {why[name]}" for name in failed)


# ---- campaigns -------------------------------------------------------------------------------------

@dataclass
class Campaign:
    """What a campaign found, per (kind, target): kind is a mutation kind or ``generated``."""
    runs: Counter = field(default_factory=Counter)
    exits: Counter = field(default_factory=Counter)
    """(kind, target, exit code) -> count."""
    internal_errors: list = field(default_factory=list)
    timeouts: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    """Mutants that ran to exit 3/4/5 (for review: is the mutant itself wrong?)."""
    generated_failures: list = field(default_factory=list)
    """Generated kernels that did not PASS and are not ill-conditioned: a bug in ptoc."""
    ill_conditioned: list = field(default_factory=list)
    """Generated kernels that FAILed where the summation order decides (:func:`order_dependent`):
    neither a PASS nor a bug in ptoc; ``(kind, target, text, why)``."""
    slowest_s: float = 0.0
    flags: dict = field(default_factory=dict)
    """(kind, target, text) -> the ``ptoc`` flags of that run (what :func:`case_file` writes)."""

    def record(self, kind: str, target: str, text: str, o: Outcome, ill_conditioned: str | None = None,
               flags: list[str] | None = None) -> None:
        """Files one run; ``ill_conditioned`` is :func:`order_dependent`'s answer for a FAILing
        generated kernel, ``flags`` the run's ``ptoc`` flags."""
        if flags is not None:
            self.flags[kind, target, text] = list(flags)
        self.runs[kind, target] += 1
        self.exits[kind, target, o.rc] += 1
        self.slowest_s = max(self.slowest_s, o.seconds)
        case = (kind, target, text, o.output[-3000:])
        if o.timed_out:
            self.timeouts.append(case)
        elif o.rc == 70 or "Traceback (most recent call last)" in o.output:
            self.internal_errors.append(case)
        elif kind == "generated":
            if ill_conditioned:
                self.ill_conditioned.append((kind, target, text, ill_conditioned))
            elif o.rc != 0:
                self.generated_failures.append(case)
        elif o.rc in (3, 4, 5):
            self.mismatches.append(case)
        elif o.rc not in (0, 1, 2):
            self.internal_errors.append(case)

    @property
    def failures(self) -> list:
        return self.internal_errors + self.timeouts + self.generated_failures

    def summary(self) -> str:
        lines = []
        for (kind, target), n in sorted(self.runs.items()):
            codes = ", ".join(f"exit {rc}: {c}" for (k, t, rc), c in sorted(self.exits.items())
                              if (k, t) == (kind, target))
            lines.append(f"{kind:10s} {target:10s} {n:6d} runs ({codes})")
        lines.append(f"internal errors {len(self.internal_errors)}, timeouts {len(self.timeouts)}, "
                     f"generated kernels not passing {len(self.generated_failures)}, ill-conditioned "
                     f"(the summation order decides) {len(self.ill_conditioned)}, mutants ending in "
                     f"exit 3/4/5 {len(self.mismatches)}, slowest {self.slowest_s:.1f} CPU s")
        return "\n".join(lines)


TARGET_NAMES = ("a2a3", "ascend950")
KERNEL_TARGETS = (TARGET_NAMES, TARGET_NAMES, ("a2a3",), ("ascend950",))
"""What a generated kernel is made for and run on: half for both targets (ops and element types
both pages allow), a quarter each for one alone (what only its page allows, e.g. i8 arithmetic on
ascend950)."""


def repo_sources(root) -> list[str]:
    """The texts the mutants start from: the examples and the lit inputs of the repository at ``root``."""
    from pathlib import Path

    root = Path(root)
    paths = sorted(root.glob("examples/*.pto")) + sorted(root.glob("lit_tests/**/*.pto")) + \
        sorted(root.glob("lit_tests/**/*.mlir"))
    return [p.read_text(encoding="utf-8") for p in paths]


def campaign(sources: list[str], seed: int, mutants: int, kernels: int, limit_s: float = 10.0,
             budget_s: float | None = None, result: Campaign | None = None) -> Campaign:
    """``mutants`` mutants (kinds in turn), each run with ``--run`` on every target, and ``kernels``
    generated kernels, each on the targets it is made for; stopping early after ``budget_s`` seconds."""
    from pto_compiler.fuzz_kernels import kernel_inputs, random_kernel

    rng = random.Random(seed)
    res = result or Campaign()
    start = time.perf_counter()
    jobs = [("generated", None)] * kernels + [(MUTATION_KINDS[i % 3], None) for i in range(mutants)]
    rng.shuffle(jobs)
    for kind, _ in jobs:
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
        targets = rng.choice(KERNEL_TARGETS) if kind == "generated" else TARGET_NAMES
        text = random_kernel(rng, targets) if kind == "generated" else mutant(rng, sources, kind)
        case_seed = rng.randrange(1000)
        inputs = kernel_inputs(text) if kind == "generated" else {}
        given = [f"--input={name}={value}" for name, value in inputs.items()]
        for target in targets:
            o = run_ptoc(text, ["--target", target, "--run", "--seed", str(case_seed), *given], limit_s)
            why = order_dependent(text, target, case_seed, inputs) if kind == "generated" and o.rc in (3, 5) else None
            res.record(kind, target, text, o, why,
                       flags=["--target", target, "--run", "--seed", str(case_seed), *given])
    return res


# ---- saved cases (bench/fuzz.py --save, tests/fuzz/cases) -----------------------------------------------

CASE_FLAGS = "// ptoc-flags: "
CASE_EXPECT = "// expect: "
EXPECTATIONS = ("PASS", "no-internal-error")
"""What a case must give: ``PASS`` (exit 0, output starting PASS), ``exit N``, or
``no-internal-error`` (no exit 70, no traceback, within the time limit: a mutant's contract)."""


def case_file(kind: str, target: str, text: str, why: str, flags: list[str] | None, seed: int | None = None) -> str:
    """A case as ``bench/fuzz.py --save`` writes it: header comments (what was found; the ``ptoc``
    flags that ran it; what a fixed ptoc must give) above the text, so the file dropped into
    tests/fuzz/cases runs as it ran in the campaign (tests/fuzz/test_fuzz.py, :func:`case_runs`)."""
    expect = "PASS" if kind == "generated" and why == "failure" else \
        "exit 5" if why == "ill-conditioned" else "no-internal-error"
    origin = f"bench/fuzz.py --seed {seed}" if seed is not None else "bench/fuzz.py"
    head = [f"// Found by {origin}: {kind} {'kernel' if kind == 'generated' else 'mutant'} on {target} ({why})."]
    if flags:
        head.append(CASE_FLAGS + " ".join(flags))
    head.append(CASE_EXPECT + expect)
    return "\n".join(head) + "\n" + text


def case_runs(text: str, filename: str = "") -> list[tuple[list[str], str]]:
    """How a case file runs: (ptoc flags, expectation) per run.  Its ``// ptoc-flags:`` lines (one
    run each), else ``--target T --run`` on the target its name ends in (``-a2a3.pto``, as
    ``--save`` names files) or on both, with the scalar inputs a generated kernel states
    (``// inputs:``); its ``// expect:`` line, else PASS."""
    from pto_compiler.fuzz_kernels import INPUTS, kernel_inputs

    lines = text.split("\n")
    flags = [line[len(CASE_FLAGS):].split() for line in lines if line.startswith(CASE_FLAGS)]
    expect = next((line[len(CASE_EXPECT):].strip() for line in lines if line.startswith(CASE_EXPECT)), "PASS")
    if expect not in EXPECTATIONS and not re.fullmatch(r"exit \d+", expect):
        raise ValueError(f"{filename}: unknown expectation '{expect}' (PASS, exit N or no-internal-error)")
    if not flags:
        stem = os.path.basename(filename).rsplit(".", 1)[0]
        targets = [t for t in TARGET_NAMES if stem.endswith("-" + t)] or list(TARGET_NAMES)
        inputs = next((kernel_inputs(line) for line in lines if line.startswith(INPUTS)), {})
        given = [f"--input={name}={value}" for name, value in inputs.items()]
        flags = [["--target", t, "--run", *given] for t in targets]
    return [(f, expect) for f in flags]


def case_problem(o: Outcome, expect: str) -> str | None:
    """Why a case's run ``o`` misses its expectation, or None."""
    if o.timed_out:
        return f"over the time limit ({o.seconds:.1f} CPU s)"
    if o.rc == 70 or "Traceback (most recent call last)" in o.output:
        return f"internal error (exit {o.rc})"
    if expect == "PASS" and not (o.rc == 0 and o.output.startswith("PASS")):
        return f"exit {o.rc}, not PASS"
    if expect.startswith("exit ") and o.rc != int(expect.split()[1]):
        return f"exit {o.rc}, not {expect}"
    return None
