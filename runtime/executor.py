"""The NumPy executor of a2a3 programs (``runtime/program.py``), with hazard checking.

Memory: a byte-addressed Unified Buffer (``numpy.uint8``, 192 KiB on a2a3, 256 KiB on
ascend950, viewed per element type) and one GM array per kernel argument (byte-addressed
too; every GM access is bounds-checked against its argument).  Every micro-instruction is
one vectorised NumPy step: each operand is a strided view of the UB (reference/vector_isa.md
§1.1: ``addr(r, b, e) = X + (r*repStride + b*blkStride)*32 + e*E`` is a view of shape
(repeat, block, element)), computed with the element functions of ``runtime/elementwise.py``
(the golden model's math, so the executor and the golden model agree bit for bit except in
float sums) and written back; masked lanes and overlapping operands gather and scatter by
index, with a per-repeat fallback for the rare instruction whose destination overlaps a
*later* repeat's source (vector_isa.md §1.1: repeats run in order).  A scalar loop whose trips
are independent runs them batched after three exact ones (runtime/loop_batch.py).

Semantics chosen where vector_isa.md leaves a choice (each also stated at its code):

* Initial state: norm mode, full mask (what every header restores); UB filled with ``ub_init``
  (0 by default) at the start of every block.
* Masks (§1.2): norm mode applies the 128-bit mask (bit k = lane k; lo64 holds lanes 0..63) to
  every repeat; count mode runs ``ceil(N/lanes)`` repeats with the first N lanes active, block
  and repeat strides still applying.  Inactive lanes are neither read nor written.  The mask
  is ignored by ``vbrcb`` (§1.5), which always runs its ``repeat`` field.
* Reductions (§1.6-1.8): inactive lanes contribute the identity (0, -inf/+inf, type min/max);
  a result none of whose input lanes is active is not written.  ``vcadd``/``vcgadd``/
  ``vcpadd`` add in a pairwise tree over the lanes (lane 2k with 2k+1, recursively), rounding
  to the element type at every step; ``vcmax``/``vcmin`` ties pick the lowest lane.
  ``vcpadd``'s ``dst_rep_stride`` is in 32 B blocks (the header's reading, §1.8).
* ``vconv``: lanes per repeat = 256 / the wider element size; each operand's blocks hold 32 B
  of its own type; round modes r (nearest-even) a (away) f c z o; float -> int saturates.
* Alignment: vector and copy operands start 32 B-aligned, except reduction destinations and
  scalar accesses (element-aligned).

Hazards.  The pipes run asynchronously.  Each pipe keeps a vector clock ``known[P][Q]``: the
last instruction of pipe Q that P knows to be complete.  Program order orders the S pipe
(synchronous); ``pipe_barrier(P)`` makes every earlier P instruction complete for P;
``set_flag(P1, P2, id)`` snapshots P1's clock with all earlier P1 instructions complete and
``wait_flag`` merges that snapshot into P2's clock (events are counted per (P1, P2, id)).
Per UB byte and GM element the executor knows the last writer and, per pipe, the last
reader since that write (runtime/hazards.py keeps the accesses as footprint intervals).  An access is a **data race** when the earlier conflicting access
(RAW, WAW; WAR from another pipe) is not known complete by the accessing pipe.  Within one
pipe, **RAW and WAW need a pipe_barrier** (vector_isa.md §1.11: "all earlier V instructions
complete before later V instructions start; the headers put one between dependent vector
instructions"): a V instruction reading or overwriting bytes an earlier V instruction wrote,
with no ``pipe_barrier V`` between them, is a race; WAR within a pipe is ordered (in-order
issue reads an instruction's sources before any later instruction writes).  The same rule
applies to MTE2 and MTE3; the cube pipes MTE1, M and FIX run in order (a2a3.IN_ORDER_PIPES:
each instruction sees what the previous one of its pipe wrote).  The cube memories (L1, L0A,
L0B, L0C, BT, FB: ``Target.cube_spaces``) are byte arrays beside the UB, checked the same way;
their instructions are runtime/cube_exec.py's.  Blocks run in turn, each on fresh on-chip
memories, but GM accesses of different blocks that conflict are races (cores run concurrently
on hardware).

Issue model: the scalar unit issues the program in order; S instructions run as they are
issued, others are queued to their pipe and run in order, a ``wait_flag`` blocking its pipe
until a matching ``set_flag`` has run.  A ``wait_flag`` that no issued or issuable
``set_flag`` can satisfy is a **deadlock**.  Operands (loop variables, scalar registers) are
evaluated when the instruction is issued, as the scalar unit passes them.

API: :func:`execute` -> :class:`ExecResult`; :class:`ExecutionError` (a ``PtocError`` with exit
code 4) carrying :class:`Finding` s of kind ``race``, ``deadlock``, ``bounds``, ``align`` or
``invalid``; :data:`ELEMENT_FUNCTIONS` (opcode -> element function name).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import cube_exec, pipes
from . import elementwise as ew
from .cycles import simulate
from .hazards import Footprint, HazardLog
from .kernel_interface import DEFAULT_MAX_STEPS
from .loop_batch import BATCHED as _BATCHED, run_loop
from .program import DTYPE_SIZES, GmAddr, If, Instr, Loop, Program, While, operands

from pto_compiler.diagnostics import Diagnostic, PtocError
from pto_compiler.dialects.a2a3 import IN_ORDER_PIPES, OPCODES, PIPES
from pto_compiler.targets import lookup_target

# ---------------------------------------------------------------------------------------------
# The one table from opcodes to element functions (runtime/elementwise.py, by name)
# ---------------------------------------------------------------------------------------------

ELEMENT_FUNCTIONS = {op: spec.semantics for op, spec in OPCODES.items() if spec.semantics}
"""opcode -> name of its element function in ``runtime/elementwise.py`` (the a2a3 dialect's table)."""

_FN = {op: getattr(ew, name).fn for op, name in ELEMENT_FUNCTIONS.items()}
"""The raw element functions: a block runs under one ``np.errstate`` (run_block), not one per call."""
_ROUND = {"r": "RINT", "a": "ROUND", "f": "FLOOR", "c": "CEIL", "z": "TRUNC", "o": "ODD"}

_PIPE_NAMES = PIPES
_PIPE_IDX = {name: i for i, name in enumerate(_PIPE_NAMES)}
_NP = len(_PIPE_NAMES)
_ORDERED = frozenset(_PIPE_IDX[q] for q in ("S", *IN_ORDER_PIPES))
"""The S pipe and the in-order pipes: each instruction sees what its pipe's previous one did."""
_S, _V, _MTE2, _MTE3 = 0, 1, 2, 3
_EAGER_ORDER = (_V, _MTE2, _MTE3, *range(_MTE3 + 1, _NP))
_REVERSE_ORDER = (_MTE3, _MTE2, _V, *range(_MTE3 + 1, _NP))
"""The queued pipes in the order ``_pump`` runs them (``schedule``: eager or lazy, reverse)."""
_NO_ITEMS = ((),) * _NP
"""What each new queue (and each new clock, :data:`_ZERO_CLOCKS`) starts from."""
_ZERO_CLOCKS = ((0,) * _NP,) * _NP


# ---------------------------------------------------------------------------------------------
# Results and errors
# ---------------------------------------------------------------------------------------------

@dataclass
class Finding:
    kind: str
    """``race``, ``deadlock``, ``bounds``, ``align``, ``invalid`` or ``sync`` (a set_flag never
    waited for); races and ``sync`` findings let the run finish."""
    message: str
    instrs: tuple = ()
    """The instructions involved (the later one last)."""

    @property
    def origin(self):
        for ins in reversed(self.instrs):
            if ins.origin is not None:
                return ins.origin
        return None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class ExecutionError(PtocError):
    """The executor found races, a deadlock or an invalid access; the CLI exits 4.

    ``findings`` lists them; ``result`` is the :class:`ExecResult` so far (complete when the
    findings are only races: the program still ran to its end)."""

    def __init__(self, findings: list[Finding], result: "ExecResult | None" = None):
        self.findings = list(findings)
        self.result = result
        diags = []
        for f in self.findings:
            o = f.origin
            if o is not None:
                diags.append(Diagnostic(f"{f.kind}: {f.message}", o.file, o.line, o.col))
            else:
                diags.append(Diagnostic(f"{f.kind}: {f.message}"))
        super().__init__(diags, 4)
        self.exit_code = 4

    def __str__(self) -> str:
        return "\n".join(str(f) for f in self.findings)

    @property
    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}


@dataclass(init=False)
class TraceEntry:
    """One executed instruction, for the cycle model (its own ``__init__``: the fields most
    entries leave at their defaults are the class's, not set per entry)."""
    seq: int
    pipe: str
    opcode: str
    dtype: str | None
    repeats: int = 0
    """Vector repeats actually run (count mode: ceil(N/lanes))."""
    nbytes: int = 0
    """Bytes moved by a copy."""
    bursts: int = 0
    flag: tuple | None = None
    """(src_pipe, dst_pipe, event_id) of set_flag/wait_flag; (pipe,) of pipe_barrier."""
    origin: object = None
    block: int = 0
    deps: list | None = None
    """Pipe ops of a mixed kernel: the other cores' entries it waits for (a pop: the pushes that
    filled its slot; a push into a full FIFO: the frees that made room; runtime/pipes.py)."""
    vf_log = None
    """A ``vf_call``'s log for the VF cycle model (runtime/vf_executor.py sets it; not a field: the
    class's None spares the cycle model a failed attribute lookup per entry)."""

    def __init__(self, seq: int, pipe: str, opcode: str, dtype: str | None, origin=None, block: int = 0):
        self.seq, self.pipe, self.opcode, self.dtype, self.origin, self.block = seq, pipe, opcode, dtype, origin, block


@dataclass
class TraceRepeat:
    """``times`` more trips of a batched loop (runtime/loop_batch.py): the ``length`` entries from
    ``trace[start]`` (the last exact trip) again, each time ``seq_step`` later.  The cycle model
    extrapolates them (runtime/cycles.py); :func:`expand_trace` spells them out."""
    seq: float
    start: int
    length: int
    times: int
    seq_step: int
    block: int = 0


def expand_trace(trace: list) -> list:
    """``trace`` with every :class:`TraceRepeat` replaced by the entries it stands for."""
    out = []
    for e in trace:
        if not isinstance(e, TraceRepeat):
            out.append(e)
            continue
        period = trace[e.start:e.start + e.length]
        for t in range(1, e.times + 1):
            for x in period:
                c = object.__new__(type(x))
                c.__dict__.update(x.__dict__)
                c.seq = x.seq + t * e.seq_step
                out.append(c)
    return out


@dataclass
class ExecResult:
    outputs: dict
    """Every GM argument after the run, in its declared shape and dtype."""
    findings: list
    trace: list
    counts: dict
    """Executed instructions per opcode (loop bodies counted per trip, all blocks)."""
    ub: np.ndarray
    """The UB bytes at the end of the last block."""
    scalars: dict
    """The scalar registers at the end of the last block."""
    blocks: int = 1
    cores: list | None = None
    """A mixed kernel's cores per block (``AIC``, ``AIV0``, ...): trace block ``b * len(cores) + i``
    is core ``cores[i]`` of block ``b``."""
    replay: object = None
    """The :class:`_Replay` that ran, if one did (its trace is the same every run)."""

    def cycle_stats(self, target: str):
        """The cycle model's stats of the trace (computed once per replayed program)."""
        if self.replay is None:
            return simulate(self.trace, target, cores=self.cores)
        got = self.replay.stats.get(target)
        if got is None:
            got = self.replay.stats[target] = simulate(self.trace, target)
        return got

    @property
    def races(self) -> list:
        return [f for f in self.findings if f.kind == "race"]


class _Abort(Exception):
    pass


class StepLimitError(ValueError):
    """The run took more than ``max_steps`` steps (instructions issued plus loop trips)."""


# ---------------------------------------------------------------------------------------------
# Address helpers
# ---------------------------------------------------------------------------------------------

_FOOTPRINTS: dict = {}
"""(base, element size, shape, strides) -> the operand's Footprint."""


class _SV:
    """An operand as a strided view of the UB: element ``(i0, i1, ...)`` at byte
    ``base + sum(i_k * strides[k])`` (vector_isa.md §1.1: a vector operand is
    ``(repeat, block, element)`` with strides ``(rep*32, blk*32, E)``)."""
    __slots__ = ("base", "esize", "shape", "strides", "_fp")

    def __init__(self, base: int, esize: int, shape: tuple, strides: tuple):
        self.base, self.esize, self.shape, self.strides = base, esize, shape, strides
        self._fp = None

    @classmethod
    def vector(cls, base: int, esize: int, nrep: int, blk: int, rep: int, lanes: int) -> "_SV":
        epb = 32 // esize
        return cls(base, esize, (nrep, lanes // epb, epb), (rep * 32, blk * 32, esize))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def idx(self) -> np.ndarray:
        """Element indices, shape ``(shape[0], rest)``."""
        e = self.esize
        out = np.full(self.shape, self.base // e, np.int64)
        for k, (n, st) in enumerate(zip(self.shape, self.strides)):
            sh = [1] * len(self.shape)
            sh[k] = n
            out = out + (np.arange(n, dtype=np.int64) * (st // e)).reshape(sh)
        return out.reshape(self.shape[0], -1)

    def footprint(self) -> Footprint:
        """The UB bytes it covers (computed once per operand shape: loops repeat them)."""
        fp = self._fp
        if fp is None:
            key = (self.base, self.esize, self.shape, self.strides)
            fp = self._fp = _FOOTPRINTS.get(key)
            if fp is None:
                if len(_FOOTPRINTS) > 4096:
                    _FOOTPRINTS.clear()
                fp = self._fp = _FOOTPRINTS[key] = self._footprint()
        return fp

    def _footprint(self) -> Footprint:
        if self.size == 0:
            return Footprint((), ())
        run, k = self.esize, len(self.shape)
        while k and (self.shape[k - 1] == 1 or self.strides[k - 1] == run):
            run *= self.shape[k - 1]
            k -= 1
        outer = []  # (a loop, not a comprehension: see _Machine._vector)
        for n, st in zip(self.shape[:k], self.strides[:k]):
            if n > 1 and st:
                outer.append((n, st))
        if not outer:
            fp = Footprint.span(self.base, self.base + run)
        elif len(outer) == 1 and outer[0][1] > 0:  # one run, or runs in ascending order
            fp = Footprint.strided(self.base, outer[0][0], run, outer[0][1])
        else:
            starts = [self.base]
            for n, st in outer:
                starts = [s + k * st for s in starts for k in range(n)]
            fp = Footprint.runs(starts, run)
        return fp

    def distinct(self) -> bool:
        """No two elements share a byte (a destination written in one go)."""
        return self.footprint().total() == self.size * self.esize

    def same(self, o: "_SV") -> bool:
        return (self.base, self.esize, self.shape, self.strides) == (o.base, o.esize, o.shape, o.strides)

    def view(self, ub: np.ndarray, dtype) -> np.ndarray:
        """The elements as a NumPy view of ``ub`` (bounds already checked)."""
        return np.ndarray(self.shape, dtype, buffer=ub, offset=self.base, strides=self.strides)


def _atomic(d: _Dyn) -> bool:
    """An atomic-add GM store (TSTORE ``atomicType = atomic_add``): its GM accesses commute with
    another atomic add's, so unordered ones are no race (other blocks', other cores', other pipes')."""
    return d.args.get("atomic") == "add"


class _Acc:
    """One memory access of an instruction: units (UB bytes, GM elements) of a space."""
    __slots__ = ("space", "write", "fp", "what")

    def __init__(self, space, write, fp: Footprint, what=""):
        self.space, self.write, self.fp, self.what = space, write, fp, what


class _Prep:
    """An instruction with its operands decoded: the accesses it makes (reads first), what the
    trace counts and its NumPy step ``run(machine, dyn)``.  Made once per instruction and mask state when the
    operands are constants (:class:`Plan`), else at every issue.  ``bounded``: the memory sizes
    (``_Machine.sizes``) its accesses were last found inside."""
    __slots__ = ("accs", "run", "vectorised", "repeats", "nbytes", "bursts", "bounded")

    def __init__(self, accs: list, run, vectorised: bool = True, repeats: int = 0, nbytes: int = 0, bursts: int = 0):
        self.accs, self.run, self.vectorised, self.repeats, self.nbytes, self.bursts = \
            accs, run, vectorised, repeats, nbytes, bursts
        self.bounded = None

    def counting(self, repeats: int, nbytes: int = 0, bursts: int = 0) -> "_Prep":
        self.repeats, self.nbytes, self.bursts = repeats, nbytes, bursts
        return self


_WRITES = attrgetter("write")


def _nothing(m, d):
    pass


def _ub_elems(esize: int, idx=None, lo: int = 0, hi: int = 0) -> Footprint:
    """The UB bytes of element indices ``idx`` (or the element range ``[lo, hi)``) of size ``esize``."""
    if idx is None:
        return Footprint.span(lo * esize, hi * esize)
    return Footprint.of_units(idx, esize)


# ---------------------------------------------------------------------------------------------
# Shadow memory for hazard checking
# ---------------------------------------------------------------------------------------------

class _Shadow:
    """Per GM element: last writer token and last reader token per pipe (runs of several
    blocks only: a GM access conflicting with another block's races whatever the clocks say,
    so every earlier block's access counts, not only the unordered ones)."""

    def __init__(self, n: int):
        self.w = np.zeros(n, np.int32)
        self.r = np.zeros((len(_PIPE_NAMES), n), np.int32)


_SPACE_SIZES: dict = {}
"""id of a target's cube spaces -> (the spaces, bytes per memory name) (:class:`_Memories`; by id:
hashing the tuple hashes each Space dataclass field by field, in Python)."""


class _Memories(dict):
    """The on-chip memories by name: the UB, and each cube memory zeroed when first touched (a
    vector kernel never pays for the 0.8 MiB of L1 and L0).  ``sizes``: bytes per cube memory
    (shared by the machines of these spaces: never changed)."""

    def __init__(self, ub: np.ndarray, spaces: tuple):
        self["UB"] = ub
        got = _SPACE_SIZES.get(id(spaces))
        if got is None or got[0] is not spaces:
            got = _SPACE_SIZES[id(spaces)] = (spaces, {sp.name: sp.bytes for sp in spaces})
        self.sizes = got[1]

    def __missing__(self, name: str) -> np.ndarray:
        mem = self[name] = np.zeros(self.sizes[name], np.uint8)
        return mem

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self.sizes

    def get(self, name, default=None):
        return self[name] if name in self else default


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------

class _Dyn:
    __slots__ = ("ins", "args", "ctx", "seq")

    def __init__(self, ins, args, ctx, seq):
        self.ins, self.args, self.ctx, self.seq = ins, args, ctx, seq


SCHEDULES = ("eager", "reverse", "lazy")
"""Legal pipe schedules (``execute(schedule=...)``): ``eager`` runs each queued pipe as soon as its
flags allow, V before MTE2 before MTE3; ``reverse`` the same with MTE3 first; ``lazy`` runs the
queued pipes only when something waits for them (a scalar wait_flag, a PIPE_ALL barrier, the
kernel's end).  A program whose findings are empty computes the same under every one of them:
the sync mutation test (tests/test_sync_mutation.py) runs mutants under all three."""


def _fresh_ub(ub_bytes: int, ub_init: int) -> np.ndarray:
    """The UB at the start of a block: every byte ``ub_init``."""
    return np.full(ub_bytes, ub_init & 0xFF, dtype=np.uint8) if ub_init & 0xFF else np.zeros(ub_bytes, np.uint8)


class _GmBytes(dict):
    """The GM arguments' bytes by name (``uint8`` views of the arrays), each made when an
    instruction first asks for it."""

    def __init__(self, gm: dict):
        self.gm = gm  # (dict's own __init__ has nothing to do: no super() call)

    def __missing__(self, name: str) -> np.ndarray:
        b = self[name] = self.gm[name].reshape(-1).view(np.uint8)
        return b


class _Machine:
    """One core running a program.  Besides the run's options: ``local``, the on-chip memories by
    name (targets.py Space: the UB and the cube memories); ``log``, the hazard records
    (runtime/hazards.py); ``space_sizes``, units (bytes, GM elements) per memory, and ``sizes``
    the same as a tuple (an access inside them once is inside them again)."""
    # the state most runs leave as it starts (the class's, not set per run)
    seq = 0
    block = 0
    _race_keys = None
    """The (earlier, later instruction, space) of the races reported (a set once one is)."""
    ub_image = None
    batch = None
    """While runtime/loop_batch.py runs trips of a loop at once: their private UBs."""
    tape = None
    """While loop_batch.py records a trip: [(dyn, pipe, accesses, vectorised)] as executed."""
    subblock = (0, 1)
    """(get_subblock_idx, get_subblock_num) of the core this machine is."""
    agent_pipe = None
    """A mixed kernel's agent: its end of the cube<->vector pipe (runtime/pipes.py)."""
    dry: list | None = None
    """In the first checked run of a replayable program: its NumPy steps in execution order
    (:func:`_recorded`)."""

    def __init__(self, program: Program, gm: dict, scalars: dict, blocks: int, ub_bytes: int,
                 check: bool, ub_init: int, trace: bool, max_races: int, max_steps: int = DEFAULT_MAX_STEPS,
                 schedule: str = "eager", cube_spaces: tuple = (), plan: "Plan | None" = None):
        self.p = program
        self.schedule = schedule
        self.steps_left = max_steps
        self.max_steps = max_steps
        self.blocks = blocks
        self.ub = _fresh_ub(ub_bytes, ub_init)
        self.ub_init = ub_init
        self._views: dict = {}
        self.gm = gm                     # name -> ndarray (contiguous)
        self.gm_bytes = _GmBytes(gm)
        self.arg_scalars = scalars
        self.check = check
        self.want_trace = trace
        self.max_races = max_races
        self.findings: list[Finding] = []
        self.trace: list[TraceEntry] = []
        self.counts: dict[str, int] = {}
        self.local = _Memories(self.ub, cube_spaces)
        self.log = HazardLog(_NP)
        self.gm_shadow = {k: _Shadow(v.size) for k, v in gm.items()} if check and blocks > 1 else {}
        self.epoch = [0] * _NP
        self.known = list(map(list, _ZERO_CLOCKS))
        self.plan = plan or (plan_of(program) if program is not None else Plan(None))
        self.gm_esize, self.space_sizes = {}, {"UB": ub_bytes, **self.local.sizes}
        for k, v in gm.items():
            self.gm_esize[k], self.space_sizes[k] = v.dtype.itemsize, v.size
        self.sizes = tuple(self.space_sizes.items())

    # -- views -----------------------------------------------------------------------------
    def view(self, dtype: str):
        v = self._views.get(dtype)
        if v is None:
            v = self.ub.view(ew.np_dtype(dtype))
            self._views[dtype] = v
        return v

    def ub_view(self, sv: "_SV", dtype) -> np.ndarray:
        """The elements of ``sv`` (a leading trip axis while trips run batched)."""
        b = self.batch
        if b is None:
            return sv.view(self.ub, dtype)
        flat = b.ub.reshape(-1).view(dtype)
        return as_strided(flat[(sv.base - b.lo) // sv.esize:], (b.n,) + sv.shape, (b.row,) + sv.strides,
                          writeable=True)

    def ub_bytes(self, bursts: "_Bursts") -> np.ndarray:
        b = self.batch
        if b is None:
            return bursts.view(self.ub)
        return as_strided(b.ub.reshape(-1)[bursts.base - b.lo:], (b.n, bursts.n, bursts.length),
                          (b.row, bursts.stride, 1), writeable=True)

    def gm_bytes_of(self, bursts: "_Bursts", name: str, d) -> np.ndarray:
        b = self.batch
        if b is None:
            return bursts.view(self.gm_bytes[name])
        delta = b.deltas[id(d.ins)]
        return as_strided(self.gm_bytes[name][bursts.base + b.c0 * delta:], (b.n, bursts.n, bursts.length),
                          (delta, bursts.stride, 1), writeable=True)

    # -- findings ----------------------------------------------------------------------------
    def fail(self, kind: str, msg: str, dyn: _Dyn | None):
        self.findings.append(Finding(kind, msg + (_ctx_text(dyn) if dyn else ""),
                                     (dyn.ins,) if dyn else ()))
        raise _Abort()

    # -- running -----------------------------------------------------------------------------
    def run(self):
        for b in range(self.blocks):
            self.run_block(b)

    def run_block(self, b: int):
        """Block ``b`` (one core; a mixed kernel's agents each run their core's program:
        runtime/pipes.py sets ``subblock``)."""
        self.block = b
        self.env = {"block_idx": b, "block_num": self.blocks, "subblock_idx": self.subblock[0],
                    "subblock_num": self.subblock[1], **self.arg_scalars}
        if b:
            self.ub.fill(self.ub_init & 0xFF)
            if self.ub_image is not None:
                self.ub[: self.ub_image.size] = self.ub_image
            for name, mem in self.local.items():
                if name != "UB":
                    mem.fill(0)
            self.log.reset()  # fresh on-chip memories; GM conflicts across blocks: gm_shadow
        self.mask_mode, self.mask_hi, self.mask_lo = "norm", -1, -1
        self.queues = dict(zip(_REVERSE_ORDER if self.schedule == "reverse" else _EAGER_ORDER, map(deque, _NO_ITEMS)))
        self.flags: dict = {}
        self.ctx: tuple = ()
        with np.errstate(all="ignore"):
            self._body(self.p.body)
            self._drain_or_deadlock(None)
        self._unwaited_flags()

    def _unwaited_flags(self):
        """A set_flag nothing waited for by the kernel's end: the event stays pending on the
        hardware (the next kernel's first wait on it passes too early), so it is a finding."""
        for key, q in self.flags.items():
            if q:
                _, d = q[0]
                self.findings.append(Finding(
                    "sync", f"{_desc(d)}{_ctx_text(d)} is never waited for: the kernel ends with "
                            f"{len(q)} set_flag {key[0]}->{key[1]} id={key[2]} pending", (d.ins,)))

    def _body(self, body):
        for n in body:
            if isinstance(n, Instr):  # issued: S runs it, the other pipes queue it
                self.steps_left -= 1
                if self.steps_left < 0:
                    self._step()  # reports it
                args = self.args_of(n) if n.dyn else n.args
                self.seq += 1
                dyn = _Dyn(n, args, self.ctx, self.seq)
                p = _PIPE_IDX[n.pipe]
                if p:
                    q = self.queues[p]
                    if q or self.schedule == "lazy" or (n.opcode == "wait_flag" and not self.flags.get(_flag_key(args))):
                        q.append(dyn)  # behind a queue blocked at a wait_flag (only a set_flag can free it), or waiting
                        continue
                    self._exec(dyn, p)
                    if n.opcode == "set_flag" and any(self.queues.values()):
                        self._pump()  # it may free a waiting pipe
                else:
                    self._exec(dyn, p)
            elif isinstance(n, Loop):
                try:
                    start, stop, step = (_int(v) for v in n.bounds(self.env))
                except KeyError as e:
                    self.findings.append(Finding("invalid", f"loop %{n.var}: undefined scalar %{e.args[0]}", ()))
                    raise _Abort() from None
                except (TypeError, ValueError) as e:
                    self.findings.append(Finding("invalid", f"loop %{n.var}: {e}", ()))
                    raise _Abort() from None
                if step == 0:
                    self.findings.append(Finding("invalid", f"loop %{n.var} has step 0", ()))
                    raise _Abort()
                run_loop(self, n, range(start, stop, step))
            elif isinstance(n, If):
                self._body(n.then_body if self._cond(n, "if") else n.else_body)
            elif isinstance(n, While):
                while True:
                    self._step()
                    self._body(n.cond_body)
                    if not self._cond(n, "while"):
                        break
                    self._body(n.body)

    def _cond(self, n, what: str):
        try:
            return n.test(self.env)
        except KeyError as e:
            self.findings.append(Finding("invalid", f"{what}: undefined scalar %{e.args[0]}", ()))
            raise _Abort() from None

    def trip(self, n: Loop, v: int, outer: tuple):
        """One trip of loop ``n`` with its variable at ``v``, run instruction by instruction."""
        self._step()
        self.env[n.var] = v
        self.ctx = outer + ((n.var, v),)
        if self.want_trace:
            self.seq += 1
            self.trace.append(TraceEntry(self.seq, "S", "loop_trip", None, origin=n.origin, block=self.block))
        self._body(n.body)

    def _step(self):
        self.steps_left -= 1
        if self.steps_left < 0:
            raise StepLimitError(f"the run exceeded {self.max_steps} steps (instructions issued plus "
                                 "loop trips); raise the limit with --max-steps N")

    def args_of(self, ins: Instr) -> dict:
        """The instruction's operands evaluated as the scalar unit issues it."""
        try:
            return operands(ins, self.env)
        except KeyError as e:
            self.findings.append(Finding("invalid", f"'{ins}': undefined scalar %{e.args[0]}", (ins,)))
            raise _Abort() from None

    def _pump(self) -> bool:
        """Run every queued instruction that can run; True if any ran."""
        any_ran = False
        progress = any(self.queues.values())
        while progress:
            progress = False
            for p, q in self.queues.items():
                while q:
                    d = q[0]
                    if d.ins.opcode == "wait_flag" and not self.flags.get(_flag_key(d.args)):
                        break
                    q.popleft()
                    self._exec(d, p)
                    progress = any_ran = True
        return any_ran

    def _drain_or_deadlock(self, waiter: _Dyn | None):
        self._pump()
        if not any(self.queues.values()):
            return  # (the usual end: every queue drained)
        stuck = sorted((q[0] for q in self.queues.values() if q), key=lambda d: d.seq)
        if stuck:
            first = stuck[0]
            k = _flag_key(first.args)
            msg = (f"{_desc(first)}{_ctx_text(first)} waits forever: no set_flag {k[0]}->{k[1]} "
                   f"id={k[2]} is left to satisfy it")
            if waiter is not None:
                msg += f" (reached {_desc(waiter)})"
            if len(stuck) > 1:
                msg += "; also blocked behind it: " + ", ".join(_desc(d) for d in stuck[1:])
            self.findings.append(Finding("deadlock", msg, tuple(d.ins for d in stuck)))
            raise _Abort()

    # -- execution of one instruction --------------------------------------------------------
    def _exec(self, d: _Dyn, p: int):
        ins = d.ins
        op = ins.opcode
        self.counts[op] = self.counts.get(op, 0) + 1
        if p in _ORDERED:  # in order: each sees what its pipe's previous one did
            self.known[p][p] = self.epoch[p]
        self.epoch[p] += 1
        if self.want_trace:
            te = TraceEntry(d.seq, ins.pipe, op, d.args.get("dtype"), ins.origin, self.block)
            self.trace.append(te)
        else:
            te = None
        if self.tape is not None:
            self.tape.append([d, p, [], ins.spec.family in _BATCHED, 0])
        _OP_HANDLERS[op](self, d, p, te)

    def _mask(self, d: _Dyn, p=None, te=None):
        op = d.ins.opcode
        a = d.args
        if op == "set_mask_norm":
            self.mask_mode = "norm"
        elif op == "set_mask_count":
            self.mask_mode = "count"
        elif op == "set_vector_mask":
            self.mask_hi, self.mask_lo = _int(a["hi"]), _int(a["lo"])
        elif op == "set_vector_count":
            self.mask_hi, self.mask_lo = 0, _int(a["count"])

    # -- hazard checking -------------------------------------------------------------------------
    def _accesses(self, d: _Dyn, p: int, accs: list[_Acc], bounded: bool = False, ordered: bool = False):
        """Bounds-check every access (unless ``bounded``: checked at an earlier issue), then check
        and record hazards (reads first; ``ordered``: ``accs`` lists them so, as a :class:`_Prep`
        does)."""
        if self.batch is not None:
            return  # loop_batch.py checked the batched trips beforehand
        if self.tape is not None:
            self.tape[-1][2].extend(accs)
        if not bounded:
            sizes = self.space_sizes
            for acc in accs:
                fp = acc.fp
                if not (fp.lo >= 0 and fp.hi <= sizes.get(acc.space, -1)) and fp.hi > fp.lo:
                    self._bounds(d, acc)
        if not self.check:
            return
        if self.agent_pipe is not None:
            pipes.check_gm_across_cores(self, d, accs)
        log = self.log
        cands = log.unordered(self.known[p])
        rec = log.new(p, self.epoch[p], self.block, d)
        if self.tape is not None:
            self.tape[-1][4] = rec.tok
        shadow = self.gm_shadow
        for acc in accs if ordered else sorted(accs, key=_WRITES):  # reads first
            if acc.fp.hi > acc.fp.lo:
                if (shadow and acc.space in shadow) or (cands and log.may_race(cands, acc.space, acc.write, p, acc.fp)):
                    self._hazard(d, p, rec.tok, acc)
                rec.accs.append(acc)

    def _bounds(self, d: _Dyn, acc: _Acc):
        """Report ``acc`` (non-empty) if it leaves its memory."""
        lo, hi = acc.fp.lo, acc.fp.hi
        mem = self.local.get(acc.space)
        if mem is not None:
            if lo < 0 or hi > mem.size:
                self.fail("bounds", f"{_desc(d)}: {acc.what} touches {acc.space} bytes "
                          f"[{_h(lo)}, {_h(hi)}) outside the {mem.size // 1024} KiB {acc.space}", d)
        else:
            arr = self.gm[acc.space]
            size = arr.size
            if lo < 0 or hi > size:
                self.fail("bounds", f"{_desc(d)}: {acc.what} accesses elements [{lo}, {hi}) of GM "
                          f"argument @{acc.space}, which has {size} elements "
                          f"({ew.dtype_name(arr.dtype)}{list(arr.shape)})", d)

    def _hazard(self, d: _Dyn, p: int, tok: int, acc: _Acc):
        """Report the races of ``acc``: its units' last writer and readers are rebuilt, from GM's
        shadow (runs of several blocks) or by painting the log's records over them."""
        krow = self.known[p]
        kind = "RAW" if not acc.write else "WAW"
        first = self.log.first_unordered(krow, len(self.log.toks))
        sh = self.gm_shadow.get(acc.space)
        if sh is not None:  # several blocks: GM per element, every block's accesses
            sel = acc.fp.units()
            cross_block = self.block > 0
            self._conflicts(d, p, sh.w[sel], krow, kind, acc, sel, cross_block, first)
            if acc.write:
                for q in range(len(_PIPE_NAMES)):
                    if q != p:  # WAR within a pipe: in-order issue
                        self._conflicts(d, p, sh.r[q][sel], krow, "WAR", acc, sel, cross_block, first)
                sh.w[sel] = tok
                sh.r[:, sel] = 0
            else:
                sh.r[p][sel] = tok
            return
        w, r = self.log.paint(first, acc.space, acc.fp)
        sel = acc.fp.units()
        loc = sel - acc.fp.lo
        self._conflicts(d, p, w[loc], krow, kind, acc, sel, False, first)
        if acc.write:
            for q in range(len(_PIPE_NAMES)):
                if q != p:
                    self._conflicts(d, p, r[q][loc], krow, "WAR", acc, sel, False, first)

    def _conflicts(self, d, p, toks, krow, kind, acc, sel, cross_block, first_unordered):
        if not cross_block and toks.max() < first_unordered:
            return  # every token is ordered before this access (the usual case)
        recs = self.log.toks
        uniq, inv = np.unique(toks, return_inverse=True)
        seen = [recs[t] for t in uniq.tolist()]  # (the records these units name, not every record)
        bad = np.array([r.epoch for r in seen]) > np.asarray(krow)[[r.pipe for r in seen]]
        if cross_block:
            bad |= (np.array([r.block for r in seen]) != self.block) & (uniq != 0)
        bad = bad[inv.reshape(-1)].reshape(toks.shape)
        if not bad.any():
            return
        atomic = _atomic(d) and acc.space in self.gm
        for t in np.unique(toks[bad]):
            rec = recs[int(t)]
            if atomic and _atomic(rec.d):
                continue  # two atomic adds to GM commute: whichever lands first, the sum is the same
            units = sel[np.nonzero(bad & (toks == t))[0]]
            first, last = int(units.min()), int(units.max())
            self._race(d, rec.d, p, rec.pipe, kind, acc, first, last, rec.block)

    def _race(self, d, other, p, q, kind, acc, first, last, other_block):
        key = (id(other.ins), id(d.ins), acc.space)  # one finding per pair (RAW wins: reads go first)
        if self._race_keys is None:
            self._race_keys = set()
        elif key in self._race_keys:
            return
        self._race_keys.add(key)
        if len([f for f in self.findings if f.kind == "race"]) >= self.max_races:
            return
        if acc.space in self.local:
            where = f"{acc.space} bytes [{_h(first)}, {_h(last + 1)})"
        else:
            where = f"GM @{acc.space} elements [{first}, {last + 1})"
        verb = {"RAW": "reads what {a} wrote", "WAW": "overwrites what {a} wrote",
                "WAR": "overwrites what {a} reads"}[kind].format(a=_desc(other) + _ctx_text(other))
        if other_block != self.block:
            why = (f"they run in different blocks ({other_block} and {self.block}), "
                   f"which run concurrently on hardware")
        elif p == q:
            why = f"no pipe_barrier {_PIPE_NAMES[p]} between them"
        else:
            why = (f"no set_flag/wait_flag chain from {_PIPE_NAMES[q]} to {_PIPE_NAMES[p]} "
                   f"orders them")
        self.findings.append(Finding(
            "race", f"data race ({kind}) on {where}: {_desc(d)}{_ctx_text(d)} {verb}; {why}",
            (other.ins, d.ins)))

    # -- vector instructions -----------------------------------------------------------------
    def _active(self, d: _Dyn, lanes: int, repeat: int):
        """(number of repeats, active mask (nrep, lanes) or None when every lane is active)."""
        if self.mask_mode == "count":
            n = self.mask_lo
            if self.mask_hi not in (0,) or n < 0:
                self.fail("invalid", f"{_desc(d)}: count mode needs set_vector_mask hi=0 lo=N "
                          f"(got hi={_h(self.mask_hi)})", d)
            nrep = -(-n // lanes)
            if n % lanes == 0:
                return nrep, None
            act = (np.arange(nrep * lanes) < n).reshape(nrep, lanes)
            return nrep, act
        if lanes > 128:
            self.fail("invalid", f"{_desc(d)}: 8-bit element types have 256 lanes, more than the "
                      "128-bit mask covers (a2a3 processes b8 data as b16, vector_isa.md §1.4)", d)
        bits = (self.mask_lo & ((1 << 64) - 1)) | ((self.mask_hi & ((1 << 64) - 1)) << 64)
        full = (1 << lanes) - 1
        if bits & full == full:
            return repeat, None
        row = _mask_row(bits & full, lanes)
        return repeat, np.broadcast_to(row, (repeat, lanes))

    def _align(self, d, what, addr, align):
        if addr % align:
            self.fail("align", f"{_desc(d)}: {what} address {_h(addr)} is not {align}-byte aligned", d)

    def _vector(self, d: _Dyn, srcs, dst, compute, view_dtype, out_dtype=None, lanewise=False) -> "_Prep":
        """Generic vector step, prepared (its accesses and its NumPy step).

        srcs: list of (_SV, act or None, dtype, name); dst: (_SV, act or None, name); act: the
        active lanes ``(nrep, lanes)``.  compute(list of gathered (n, L) arrays, slice of
        repeats) -> (n, Lo) results; ``lanewise``: compute maps lane to lane, so it takes the
        operands in any shape shared by all of them (no slice).
        """
        dsv, dact, dname = dst
        out_dt = ew.np_dtype(out_dtype or view_dtype)
        # one pass over the sources (plain loops: each comprehension is a function call, and a
        # fresh process pays for each one's first run): their accesses, and whether every lane is
        # active, whether the operands share one shape and are rows (or repeated blocks)
        accs, every_lane, flat, rows = [], dact is None, lanewise, _rows(dsv)
        for sv, act, dt, name in srcs:
            accs.append(_Acc("UB", False, sv.footprint() if act is None else _ub_elems(sv.esize, sv.idx()[act]),
                             what=name))
            every_lane = every_lane and act is None
            flat = flat and sv.shape == dsv.shape
            rows = rows and (_rows(sv) or _repeated_block(sv))
        accs.append(_Acc("UB", True, dsv.footprint() if dact is None else
                         _ub_elems(dsv.esize, dsv.idx()[dact]), what=dname))
        nrep = dsv.shape[0]
        if nrep == 0:
            return _Prep(accs, _nothing)
        dfp = accs[-1].fp
        views, as_views = [], every_lane and dsv.distinct()
        if as_views:
            for (sv, _, dt, _), acc in zip(srcs, accs):
                if not sv.same(dsv) and acc.fp.overlaps(dfp):
                    as_views = False
                    break
                views.append((sv, ew.np_dtype(dt)))
        if as_views:
            # every lane active, no source read after the destination overwrote it: NumPy views
            if flat and rows:
                return _Prep(accs, _lanes_run(views, dsv, out_dt, compute))
            widths = [sv.size // nrep for sv, _ in views]

            def run(m, d):
                g = [m.ub_view(sv, dt) for sv, dt in views]
                dv = m.ub_view(dsv, out_dt)
                if flat:  # any shape will do: no reshape
                    dv[...] = compute(g, None)
                    return
                g = [v.reshape(-1, w) for v, w in zip(g, widths)]
                rows = nrep * (m.batch.n if m.batch is not None else 1)
                dv[...] = np.asarray(compute(g, slice(0, rows))).reshape(dv.shape)
            return _Prep(accs, run)
        didx = dsv.idx()
        sidx = [(sv.idx(), act, ew.np_dtype(dt), name) for sv, act, dt, name in srcs]
        if _needs_sequential(sidx, (didx, dact, dname), dsv.esize):
            def run(m, d):
                outv = m.view(out_dt)
                for r in range(nrep):
                    g = []
                    for idx, act, dt, _ in sidx:
                        v = m.view(dt)
                        g.append(v[idx[r:r + 1] if act is None else np.where(act[r:r + 1], idx[r:r + 1], 0)])
                    res = compute(g, slice(r, r + 1))
                    if dact is None:
                        outv[didx[r:r + 1]] = res
                    else:
                        outv[didx[r:r + 1][dact[r:r + 1]]] = res[dact[r:r + 1]]
            return _Prep(accs, run, vectorised=False)
        gidx = [idx if act is None else np.where(act, idx, 0) for idx, act, _, _ in sidx]
        dsel = didx if dact is None else didx[dact]

        def run(m, d):
            res = compute([m.view(dt)[i] for i, (_, _, dt, _) in zip(gidx, sidx)], slice(0, nrep))
            m.view(out_dt)[dsel] = res if dact is None else res[dact]
        return _Prep(accs, run, vectorised=False)


def _merge_clock(row: list, other) -> None:
    """``row`` = the element-wise max of ``row`` and ``other`` (vector clocks), in place."""
    row[:] = map(max, row, other)


def _rows(sv: "_SV") -> bool:
    """Is ``sv`` a vector operand whose blocks are contiguous (each repeat one run of lanes)?"""
    return len(sv.shape) == 3 and sv.strides[1] == sv.shape[2] * sv.strides[2]


def _repeated_block(sv: "_SV") -> bool:
    """Does every block of a repeat of ``sv`` read the same 32 B (block stride 0)?"""
    return len(sv.shape) == 3 and sv.strides[1] == 0


def _lanes_run(views, dsv: "_SV", out_dt, compute):
    """A lane-wise step on (repeat, lanes) arrays: NumPy's inner loop runs over a whole repeat, not
    over one 8- or 16-element block (a block-stride-0 operand is spread over the repeat first, by
    ``ndarray.repeat``: whole blocks copied, where a copy of the stride-0 view goes lane by lane)."""
    nblk = dsv.shape[1]
    lanes = nblk * dsv.shape[2]
    spread = []
    for sv, _ in views:
        spread.append(_repeated_block(sv) and not _rows(sv))

    def run(m, d):
        g = []
        for (sv, dt), sp in zip(views, spread):
            v = m.ub_view(sv, dt)
            if sp:
                v = v[..., :1, :].repeat(nblk, axis=-2)
            g.append(v.reshape(v.shape[:-2] + (lanes,)))
        dv = m.ub_view(dsv, out_dt)
        dv.reshape(dv.shape[:-2] + (lanes,))[...] = compute(g, None)
    return run


def _needs_sequential(srcs, dst, desize) -> bool:
    """Does some element written by repeat r feed a source lane of a later repeat?"""
    didx, dact, _ = dst
    if didx.shape[0] <= 1:
        return False
    dsel = didx if dact is None else didx[dact]
    if dsel.size == 0:
        return False
    dlo, dhi = int(dsel.min()) * desize, (int(dsel.max()) + 1) * desize
    for idx, act, dt, _ in srcs:
        e = dt.itemsize
        ssel = idx if act is None else idx[act]
        if ssel.size == 0:
            continue
        slo, shi = int(ssel.min()) * e, (int(ssel.max()) + 1) * e
        if shi <= dlo or slo >= dhi:
            continue
        if e != desize:
            return True  # mixed-size overlap: be exact the slow way
        if idx.shape == didx.shape and np.array_equal(idx, didx) and (
                (act is None and dact is None) or
                (act is not None and dact is not None and np.array_equal(act, dact))):
            flat = dsel.reshape(-1)
            if flat.size < 2 or bool((flat[1:] > flat[:-1]).all()) or \
                    np.unique(flat).size == flat.size:
                continue  # lane-for-lane in place, no element written twice
        # exact: first repeat writing each element vs last repeat reading it
        nrep = didx.shape[0]
        drep = np.broadcast_to(np.arange(nrep)[:, None], didx.shape)
        drep = drep if dact is None else drep[dact]
        srep = np.broadcast_to(np.arange(nrep)[:, None], idx.shape)
        srep = srep if act is None else srep[act]
        lo = min(int(dsel.min()), int(ssel.min()))
        hi = max(int(dsel.max()), int(ssel.max())) + 1
        fw = np.full(hi - lo, nrep, np.int64)
        np.minimum.at(fw, (dsel - lo).reshape(-1), drep.reshape(-1))
        lr = np.full(hi - lo, -1, np.int64)
        np.maximum.at(lr, (ssel - lo).reshape(-1), srep.reshape(-1))
        if (lr > fw).any():
            return True
    return False


def _mask_row(bits: int, lanes: int) -> np.ndarray:
    b = np.frombuffer(bits.to_bytes(32, "little"), dtype=np.uint8)
    return np.unpackbits(b, bitorder="little")[:lanes].astype(bool)


def _flag_key(a) -> tuple:
    e = a["event_id"]
    return (a["src_pipe"], a["dst_pipe"], e if type(e) is int else _int(e))


def _int(v) -> int:
    if type(v) is int:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise ValueError(f"expected an integer, got {v!r}")
    return int(v)


def _h(v: int) -> str:
    return hex(v) if v >= 0 else f"-{hex(-v)}"


def _desc(d: _Dyn) -> str:
    ins = d.ins
    text = ins.to_text(0, origin=False, args=d.args) if isinstance(ins, Instr) else ins.to_text(0, origin=False)
    s = "'" + " ".join(text.split()) + "'"  # an instruction with its operands as issued
    return s if ins.origin is None else f"{s} (from {ins.origin})"


def _ctx_text(d: _Dyn | None) -> str:
    if d is None or not d.ctx:
        return ""
    return " [" + ", ".join(f"%{k}={v}" for k, v in d.ctx) + "]"


# ---------------------------------------------------------------------------------------------
# Instruction families
# ---------------------------------------------------------------------------------------------

def _esize(m: _Machine, d: _Dyn, dt: str | None) -> int:
    if not dt:
        m.fail("invalid", f"{_desc(d)}: needs an element type", d)
    return DTYPE_SIZES[dt]


def _scalar_value(m: _Machine, d: _Dyn, v, dt: str) -> np.ndarray:
    try:
        return ew.scalar_to(v, dt)
    except Exception as e:  # noqa: BLE001
        m.fail("invalid", f"{_desc(d)}: scalar {v!r} is not a {dt} value ({e})", d)


def _ub_addr(m: _Machine, d: _Dyn, a: dict, name: str, align: int) -> int:
    v = a[name]
    if type(v) is int and not v % align:
        return v  # the usual case
    if isinstance(v, GmAddr):
        m.fail("invalid", f"{_desc(d)}: operand {name} must be a UB address", d)
    try:
        v = _int(v)
    except ValueError as e:
        m.fail("invalid", f"{_desc(d)}: operand {name}: {e}", d)
    m._align(d, name, v, align)
    return v


_INT = {int}


def _ints(m, d, a, names):
    out = list(map(a.__getitem__, names))
    if {*map(type, out)} == _INT and min(out) >= 0:
        return out  # the usual case: non-negative ints
    out = []
    for n in names:
        try:
            v = _int(a[n])
        except ValueError as e:
            m.fail("invalid", f"{_desc(d)}: operand {n}: {e}", d)
        if v < 0:
            m.fail("invalid", f"{_desc(d)}: operand {n} is negative ({v})", d)
        out.append(v)
    return out


_VECTOR_OPERANDS = {fam: tuple((o, (f"{o}_blk_stride", f"{o}_rep_stride")) for o in ops)
                    for fam, ops in (("binary", ("dst", "src0", "src1")), ("scalar", ("dst", "src")),
                                     ("unary", ("dst", "src")), ("dup", ("dst",)))}
"""Family -> its UB operands (the destination first), each with its (block, repeat) stride fields."""


def _elementwise(m: _Machine, d: _Dyn) -> "_Prep":
    """vadd..vmin, vadds..vmins, vexp..vrelu, vector_dup: lane-wise under the mask."""
    a = d.args
    op = d.ins.opcode
    fam = d.ins.spec.family
    dt = a.get("dtype")
    e = _esize(m, d, dt)
    lanes = 256 // e
    (repeat,) = _ints(m, d, a, ("repeat",))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    nrep, act = m._active(d, lanes, repeat)
    srcs = []
    for o, strides in _VECTOR_OPERANDS[fam]:
        sv = _SV.vector(_ub_addr(m, d, a, o, 32), e, nrep, *_ints(m, d, a, strides), lanes)
        if o == "dst":
            dsv = sv
        else:
            srcs.append((sv, act, dt, o))
    on = (lambda rs: None) if act is None else (lambda rs: act[rs])  # noqa: E731
    if fam == "binary":
        fn = _FN[op]
        compute = lambda g, rs: ew.on_active(fn, on(rs), g[0], g[1])  # noqa: E731
    elif fam == "scalar":
        fn = _FN[op]
        s = _scalar_value(m, d, a["scalar"], dt)
        compute = lambda g, rs: ew.on_active(fn, on(rs), g[0], np.broadcast_to(s, g[0].shape))  # noqa: E731
    elif fam == "unary":
        fn = _FN[op]
        compute = lambda g, rs: ew.on_active(fn, on(rs), g[0])  # noqa: E731
    else:
        s = _scalar_value(m, d, a["scalar"], dt)
        compute = lambda g, rs: np.broadcast_to(s, (rs.stop - rs.start, lanes))  # noqa: E731
    return m._vector(d, srcs, (dsv, act, "dst"), compute, dt, lanewise=fam != "dup").counting(nrep)


def _vbrcb(m: _Machine, d: _Dyn) -> "_Prep":
    """vector_isa.md §1.5: dst[(r*dstRep + b*dstBlk)*EPB + e] = src[r*8 + b]; no mask."""
    a = d.args
    dt = a.get("dtype")
    e = _esize(m, d, dt)
    if e not in (2, 4):
        m.fail("invalid", f"{_desc(d)}: vbrcb takes 16- or 32-bit elements", d)
    repeat, blk, rep = _ints(m, d, a, ("repeat", "dst_blk_stride", "dst_rep_stride"))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    blk = blk or 1  # "dst blk stride 0 is treated as 1" [AC 0089]
    dst = _ub_addr(m, d, a, "dst", 32)
    src = _ub_addr(m, d, a, "src", 32)
    lanes = 256 // e
    epb = 32 // e
    didx = _SV.vector(dst, e, repeat, blk, rep, lanes)
    sidx = _SV(src, e, (repeat, 8), (8 * e, e))
    if sidx.footprint().overlaps(didx.footprint()):
        m.fail("invalid", f"{_desc(d)}: vbrcb dst and src must not overlap [AC 0089]", d)
    udt = {2: "u16", 4: "u32"}[e]
    if didx.distinct():  # each source element assigned to its block (a view of it per lane)
        accs = [_Acc("UB", False, sidx.footprint(), what="src"), _Acc("UB", True, didx.footprint(), what="dst")]
        npd = ew.np_dtype(udt)

        def run(m, d):
            m.ub_view(didx, npd)[...] = m.ub_view(sidx, npd)[..., None]
        return _Prep(accs, run).counting(repeat)
    return m._vector(d, [(sidx, None, udt, "src")], (didx, None, "dst"),
                     lambda g, rs: np.repeat(g[0], epb, axis=1), udt).counting(repeat)


def _identity(op: str, dt: str):
    npd = ew.np_dtype(dt)
    if op in ("vcadd", "vcgadd", "vcpadd"):
        return np.zeros((), npd)
    is_max = op in ("vcmax", "vcgmax")
    if ew.is_float_dtype(npd):
        return np.array(-np.inf if is_max else np.inf).astype(npd)
    info = np.iinfo(npd)
    return np.array(info.min if is_max else info.max, dtype=npd)


def _reduce(m: _Machine, d: _Dyn) -> "_Prep":
    """vcadd/vcmax/vcmin (§1.6, one result per repeat) and vcgadd/vcgmax/vcgmin (§1.7, one per
    32 B block, 8 consecutive results per repeat)."""
    a = d.args
    op = d.ins.opcode
    grouped = d.ins.spec.family == "greduce"
    dt = a.get("dtype")
    e = _esize(m, d, dt)
    lanes = 256 // e
    epb = 32 // e
    repeat, drep, sblk, srep = _ints(m, d, a, ("repeat", "dst_rep_stride", "src_blk_stride",
                                                "src_rep_stride"))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    nrep, act = m._active(d, lanes, repeat)
    dst = _ub_addr(m, d, a, "dst", e)
    src = _ub_addr(m, d, a, "src", 32)
    sidx = _SV.vector(src, e, nrep, sblk, srep, lanes)
    fn = _FN[op]
    ident = _identity(op, dt)
    value_index = a.get("order") == "value_index"
    if grouped:
        didx = _SV(dst, e, (nrep, 8), (drep * 8 * e, e))
        dact = None if act is None else act.reshape(nrep, 8, epb).any(axis=2)
    elif value_index:
        didx = _SV(dst, e, (nrep, 2), (drep * 2 * e, e))
        dact = None if act is None else np.repeat(act.any(axis=1, keepdims=True), 2, axis=1)
    else:
        didx = _SV(dst, e, (nrep, 1), (drep * e, e))
        dact = None if act is None else act.any(axis=1, keepdims=True)

    def compute(g, rs):
        v = g[0]
        ac = None if act is None else act[rs]
        if ac is not None:
            v = np.where(ac, v, ident)
        if grouped:
            return ew.tree(fn, v.reshape(v.shape[0], 8, epb))
        res = ew.tree(fn, v)
        if not value_index:
            return res[:, None]
        # VALUE_INDEX: (value, index of the first lane holding it) as element bits
        u = ew._UINT_OF_SIZE[e]
        vb, rb = v.view(u), res.view(u)[:, None]
        eq = vb == rb
        if ew.is_float_dtype(ew.np_dtype(dt)):
            eq |= np.isnan(v.astype(np.float32)) & np.isnan(res.astype(np.float32))[:, None]
        if ac is not None:
            eq &= ac
        index = np.argmax(eq, axis=1).astype(u)
        return np.stack([res.view(u), index], axis=1)

    out_dt = {2: "u16", 4: "u32", 1: "u8", 8: "u64"}[e] if value_index else dt
    return m._vector(d, [(sidx, act, dt, "src")], (didx, dact, "dst"), compute, dt,
                     out_dtype=out_dt).counting(nrep)


def _vcpadd(m: _Machine, d: _Dyn) -> "_Prep":
    """§1.8: per repeat out[k] = src[2k] + src[2k+1], EPR inputs -> EPR/2 contiguous outputs at
    dst + r*dst_rep_stride*32 B; a pair with no active lane is not written, inactive lanes 0."""
    a = d.args
    dt = a.get("dtype")
    e = _esize(m, d, dt)
    lanes = 256 // e
    repeat, drep, sblk, srep = _ints(m, d, a, ("repeat", "dst_rep_stride", "src_blk_stride",
                                                "src_rep_stride"))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    nrep, act = m._active(d, lanes, repeat)
    dst = _ub_addr(m, d, a, "dst", 32)
    src = _ub_addr(m, d, a, "src", 32)
    sidx = _SV.vector(src, e, nrep, sblk, srep, lanes)
    didx = _SV(dst, e, (nrep, lanes // 2), (drep * 32, e))
    dact = None if act is None else (act[:, 0::2] | act[:, 1::2])
    zero = np.zeros((), ew.np_dtype(dt))

    def compute(g, rs):
        v = g[0]
        if act is not None:
            v = np.where(act[rs], v, zero)
        return ew.add(v[:, 0::2], v[:, 1::2])

    return m._vector(d, [(sidx, act, dt, "src")], (didx, dact, "dst"), compute, dt).counting(nrep)


def _vbitsort(m: _Machine, d: _Dyn) -> "_Prep":
    """VBS32 (TSORT32.md): ``repeat`` blocks of 32 values at src0 with their u32 indices at src1, each
    sorted into 256 bytes of (value, index) pairs at dst (elementwise.sort_pairs); no mask."""
    a = d.args
    dt = a.get("dtype")
    e = _esize(m, d, dt)
    (repeat,) = _ints(m, d, a, ("repeat",))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    dst, s0, s1 = (_ub_addr(m, d, a, o, 32) for o in ("dst", "src0", "src1"))
    srcs = [(_SV(s0, e, (repeat, 32), (32 * e, e)), None, dt, "src0"),
            (_SV(s1, 4, (repeat, 32), (128, 4)), None, "u32", "src1")]
    return m._vector(d, srcs, (_SV(dst, 1, (repeat, 256), (256, 1)), None, "dst"),
                     lambda g, rs: ew.sort_pairs(g[0], g[1]), dt, out_dtype="u8").counting(repeat)


def _vmrgsort4(m: _Machine, d: _Dyn) -> "_Prep":
    """VMS4 (TMRGSORT.md): n0..n3 pairs at src0..src3 merged into dst (elementwise.merge_pairs); with
    ``exhausted`` the pairs after the stop keep dst's bytes (dst is read too)."""
    a = d.args
    dt = a.get("dtype")
    _esize(m, d, dt)
    ns = _ints(m, d, a, ("n0", "n1", "n2", "n3"))
    total = sum(ns)
    dsv = _SV(_ub_addr(m, d, a, "dst", 32), 1, (1, 8 * total), (8 * total, 1))
    srcs = [(_SV(_ub_addr(m, d, a, f"src{k}", 32), 1, (1, 8 * n), (8 * n, 1)), None, "u8", f"src{k}")
            for k, n in enumerate(ns) if n]
    exhausted = a.get("exhausted") == "yes"
    if exhausted:
        srcs.append((dsv, None, "u8", "dst"))

    def compute(g, rs):
        merged, _ = ew.merge_pairs([x.reshape(-1) for x in g[:len(g) - exhausted]], dt, exhausted)
        out = g[-1].reshape(-1).copy() if exhausted else merged
        out[:merged.size] = merged
        return out[None]
    return m._vector(d, srcs, (dsv, None, "dst"), compute, "u8").counting(total)


def _vconv(m: _Machine, d: _Dyn) -> "_Prep":
    a = d.args
    dt, st = a.get("dtype"), a.get("src_dtype")
    de, se = _esize(m, d, dt), _esize(m, d, st)
    lanes = 256 // max(de, se)
    (repeat,) = _ints(m, d, a, ("repeat",))
    if repeat > 255:
        m.fail("invalid", f"{_desc(d)}: repeat {repeat} exceeds 255", d)
    nrep, act = m._active(d, lanes, repeat)
    dblk, sblk, drep, srep = _ints(m, d, a, ("dst_blk_stride", "src_blk_stride", "dst_rep_stride",
                                             "src_rep_stride"))
    didx = _SV.vector(_ub_addr(m, d, a, "dst", 32), de, nrep, dblk, drep, lanes)
    sidx = _SV.vector(_ub_addr(m, d, a, "src", 32), se, nrep, sblk, srep, lanes)
    mode = _ROUND[a.get("round", "r")]
    return m._vector(d, [(sidx, act, st, "src")], (didx, act, "dst"),
                     lambda g, rs: ew.convert(g[0], ew.np_dtype(dt), mode), dt).counting(nrep)


# -- copies -----------------------------------------------------------------------------------

class _Bursts:
    """``n`` runs of ``length`` bytes, ``stride`` bytes apart, from byte ``base``."""
    __slots__ = ("base", "n", "length", "stride")

    def __init__(self, base: int, n: int, length: int, stride: int):
        self.base, self.n, self.length, self.stride = base, n, length, stride

    def footprint(self, unit: int = 1) -> Footprint:
        """The units of ``unit`` bytes touched (GM: elements)."""
        if self.n == 0 or self.length == 0:
            return Footprint((), ())
        if self.stride == self.length or self.n == 1:
            hi = self.base + (self.n - 1) * self.stride + self.length
            return Footprint.span(self.base // unit, -(-hi // unit))
        if self.stride > 0 and not (self.base % unit or self.length % unit or self.stride % unit):
            return Footprint.strided(self.base // unit, self.n, self.length // unit, self.stride // unit)
        starts = self.base + np.arange(self.n, dtype=np.int64) * self.stride
        if unit == 1:
            return Footprint.of_starts(starts, self.length)
        return Footprint.of_ranges(starts // unit, -(-(starts + self.length) // unit))

    def view(self, arr: np.ndarray) -> np.ndarray:
        """The bytes as an ``(n, length)`` view of the byte array ``arr`` (bounds checked)."""
        if self.stride == self.length or self.n == 1:  # one run: a slice (NumPy's buffer constructor costs ~6x more)
            return arr[self.base:self.base + self.n * self.length].reshape(self.n, self.length)
        return np.ndarray((self.n, self.length), np.uint8, buffer=arr, offset=self.base, strides=(self.stride, 1))


def _gm_base(m, d, a, name):
    v = a[name]
    if not isinstance(v, GmAddr):
        m.fail("invalid", f"{_desc(d)}: operand {name} must be a GM address @arg", d)
    if v.arg not in m.gm:
        m.fail("invalid", f"{_desc(d)}: unknown GM argument @{v.arg}", d)
    try:
        return v.arg, _int(v.offset)
    except ValueError as e:
        m.fail("invalid", f"{_desc(d)}: operand {name}: {e}", d)


def _copy_in(m: _Machine, d: _Dyn) -> "_Prep":
    """copy_gm_to_ubuf (§1.10): burst i reads len_burst bytes at src + i*(len_burst+src_gap) and
    writes them at dst + i*(ceil(len_burst/32)+dst_gap)*32, then right_pad pad elements."""
    a = d.args
    n, length, sgap, dgap, rpad = _ints(m, d, a, ("n_burst", "len_burst", "src_gap", "dst_gap",
                                                  "right_pad"))
    name, off = _gm_base(m, d, a, "src")
    dst = _ub_addr(m, d, a, "dst", 32)
    dstride = (-(-length // 32) + dgap) * 32
    g, u = _Bursts(off, n, length, length + sgap), _Bursts(dst, n, length, dstride)
    accs = [_Acc(name, False, g.footprint(m.gm_esize[name]), what="src"),
            _Acc("UB", True, u.footprint(), what="dst")]
    if rpad:
        pad = _Bursts(dst + length, n, rpad * _esize(m, d, a.get("dtype")), dstride)
        accs.append(_Acc("UB", True, pad.footprint(), what="right pad"))
        pv = _scalar_value(m, d, a.get("pad_value", 0), a["dtype"])
        pad_bytes = np.frombuffer(np.repeat(pv.reshape(1), rpad).tobytes(), np.uint8)

    def run(m, d):
        if n and length:
            m.ub_bytes(u)[...] = m.gm_bytes_of(g, name, d)
        if rpad and n:
            m.ub_bytes(pad)[...] = pad_bytes
    return _Prep(accs, run, True, 0, n * length, n)


def _copy_out(m: _Machine, d: _Dyn) -> "_Prep":
    """copy_ubuf_to_gm (§1.10, the mirror image): burst i reads len_burst bytes at
    src + i*(ceil(len_burst/32)+src_gap)*32 and writes them at dst + i*(len_burst+dst_gap)."""
    a = d.args
    n, length, sgap, dgap = _ints(m, d, a, ("n_burst", "len_burst", "src_gap", "dst_gap"))
    name, off = _gm_base(m, d, a, "dst")
    src = _ub_addr(m, d, a, "src", 32)
    u, g = _Bursts(src, n, length, (-(-length // 32) + sgap) * 32), _Bursts(off, n, length, length + dgap)
    gfp = g.footprint(m.gm_esize[name])
    atomic = a.get("atomic") == "add"

    def run(m, d):
        if not (n and length):
            return
        out = m.gm_bytes_of(g, name, d)
        if atomic:  # GM += the bytes read as GM's element type (pto_isa.md §4.8 TSTORE AtomicAdd)
            dt = m.gm[name].dtype
            out[...] = ew.add(out.view(dt), m.ub_bytes(u).view(dt)).view(np.uint8)
        else:
            out[...] = m.ub_bytes(u)
    return _Prep([_Acc("UB", False, u.footprint(), what="src"),
                  *([_Acc(name, False, gfp, what="dst")] if atomic else []), _Acc(name, True, gfp, what="dst")],
                 run, True, 0, n * length, n)


def _copy_ub(m: _Machine, d: _Dyn) -> "_Prep":
    """copy_ubuf_to_ubuf (§1.10): everything in 32 B blocks; burst i copies len_burst*32 bytes
    from src + i*(len_burst+src_gap)*32 to dst + i*(len_burst+dst_gap)*32."""
    a = d.args
    n, length, sgap, dgap = _ints(m, d, a, ("n_burst", "len_burst", "src_gap", "dst_gap"))
    dst = _ub_addr(m, d, a, "dst", 32)
    src = _ub_addr(m, d, a, "src", 32)
    sb, db = _Bursts(src, n, length * 32, (length + sgap) * 32), _Bursts(dst, n, length * 32, (length + dgap) * 32)

    def run(m, d):
        if n and length:
            m.ub_bytes(db)[...] = m.ub_bytes(sb).copy()  # the source as it was before the copy
    return _Prep([_Acc("UB", False, sb.footprint(), what="src"), _Acc("UB", True, db.footprint(), what="dst")],
                 run, True, 0, n * length * 32, n)


# -- scalar unit ----------------------------------------------------------------------------------

def _py(v):
    """A scalar register's value as a Python number: an integer element stays an ``int``."""
    x = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
    if isinstance(x, float) or isinstance(x, int):
        return x
    return float(x)


def _sload(m: _Machine, d: _Dyn, p: int, te):
    a = d.args
    dt = a["dtype"]
    e = _esize(m, d, dt)
    addr = _ub_addr(m, d, a, "addr", e)
    m._accesses(d, p, [_Acc("UB", False, Footprint.span(addr, addr + e), what="addr")])
    m.env[a["dst"]] = _py(m.view(dt)[addr // e])


def _sstore(m: _Machine, d: _Dyn, p: int, te):
    a = d.args
    dt = a["dtype"]
    e = _esize(m, d, dt)
    addr = _ub_addr(m, d, a, "addr", e)
    m._accesses(d, p, [_Acc("UB", True, Footprint.span(addr, addr + e), what="addr")])
    m.view(dt)[addr // e] = _scalar_value(m, d, a["src"], dt)


def _gm_element(m: _Machine, d: _Dyn, p: int, write: bool) -> tuple[np.ndarray, int]:
    """ld_gm/st_gm's element: (the GM argument's bytes viewed as the op's dtype, its index), the
    access checked (bounds, hazards) in GM elements."""
    a = d.args
    dt = a["dtype"]
    e = _esize(m, d, dt)
    name, off = _gm_base(m, d, a, "addr")
    if off % e:
        m.fail("invalid", f"{_desc(d)}: GM byte offset {off} is not a multiple of {e}", d)
    ge = m.gm_esize[name]
    m._accesses(d, p, [_Acc(name, write, Footprint.span(off // ge, -(-(off + e) // ge)), what="addr")])
    return m.gm_bytes[name].view(ew.np_dtype(dt)), off // e


def _sload_gm(m: _Machine, d: _Dyn, p: int, te):
    arr, i = _gm_element(m, d, p, False)
    m.env[d.args["dst"]] = _py(arr[i])


def _sstore_gm(m: _Machine, d: _Dyn, p: int, te):
    arr, i = _gm_element(m, d, p, True)
    arr[i] = _scalar_value(m, d, d.args["src"], d.args["dtype"])


def _smov(m: _Machine, d: _Dyn, p: int, te):
    a = d.args
    v = a["src"]
    if a.get("dtype"):
        v = _py(_scalar_value(m, d, v, a["dtype"]))
    m.env[a["dst"]] = v


def _salu(m: _Machine, d: _Dyn, p: int, te):
    a = d.args
    dt = a["dtype"]
    x, y = _scalar_value(m, d, a["src0"], dt), _scalar_value(m, d, a["src1"], dt)
    try:
        m.env[a["dst"]] = _py(_FN[d.ins.opcode](x, y))
    except ew.ElementwiseError as ex:
        m.fail("invalid", f"{_desc(d)}: {ex}", d)


def _block(m: _Machine, d: _Dyn, p: int, te):
    m.env[d.args["dst"]] = m.block if d.ins.opcode == "get_block_idx" else m.blocks


def _print_ub(m: _Machine, d: _Dyn, p: int, te):
    """TPRINT (print_ub): reads rows x cols elements and prints them to stderr."""
    a = d.args
    dt = a["dtype"]
    e = _esize(m, d, dt)
    base = _ub_addr(m, d, a, "src", e) // e
    rows, cols, rs, cs = _ints(m, d, a, ("rows", "cols", "row_stride", "col_stride"))
    idx = base + np.arange(rows)[:, None] * rs + np.arange(cols)[None, :] * cs
    m._accesses(d, p, [_Acc("UB", False, _ub_elems(e, idx.reshape(-1)), what="src")])
    o = d.ins.origin
    ew.print_tile(f"{o.file}:{o.line}:{o.col}" if o else "?", m.view(dt)[idx])


def _barrier(m: _Machine, d: _Dyn, p: int, te):
    pipe = d.args["pipe"]
    if te is not None:
        te.flag = (pipe,)
    if pipe == "ALL":
        m._drain_or_deadlock(d)
        for q in range(_NP):
            _merge_clock(m.known[q], m.epoch)
    else:
        q = _PIPE_IDX[pipe]
        m.known[q][q] = m.epoch[q]


def _event(m: _Machine, d: _Dyn, te) -> tuple:
    """A set_flag's or wait_flag's :func:`_flag_key`, its event id checked."""
    key = _flag_key(d.args)
    if not (0 <= key[2] < 8):
        m.fail("invalid", f"{_desc(d)}: event id {key[2]} out of range 0..7", d)
    if te is not None:
        te.flag = key
    return key


def _set_flag(m: _Machine, d: _Dyn, p: int, te):
    key = _event(m, d, te)
    snap = m.known[p][:]
    snap[p] = m.epoch[p]
    q = m.flags.get(key)
    if q is None:
        q = m.flags[key] = deque()
    q.append((snap, d))


def _wait_flag(m: _Machine, d: _Dyn, p: int, te):
    key = _event(m, d, te)
    q = m.flags.get(key)
    if not q:
        m._pump()  # only the S pipe gets here with no flag: the queued pipes block in _pump
        q = m.flags.get(key)
        if not q:
            m.findings.append(Finding(
                "deadlock", f"{_desc(d)} waits forever: no set_flag {key[0]}->{key[1]} id={key[2]} "
                            f"was issued before it (the scalar unit stops here)" + _ctx_text(d), (d.ins,)))
            raise _Abort()
    _merge_clock(m.known[p], q.popleft()[0])


def _vf_call(m: _Machine, d: _Dyn, p: int, te):
    """ascend950 ``vf_call``: runs the callee on the UB (runtime/vf_executor.py)."""
    import pto_compiler.runtime.vf_executor as vx  # (no ``from``: a from-import costs more per call)

    vx.exec_vf_call(m, d, p, te)


_PREPARE = {
    "binary": _elementwise, "scalar": _elementwise, "unary": _elementwise, "dup": _elementwise,
    "vbrcb": _vbrcb, "reduce": _reduce, "greduce": _reduce, "pair": _vcpadd, "conv": _vconv, "sort": _vbitsort, "merge": _vmrgsort4,
    "copy_in": _copy_in, "copy_out": _copy_out, "copy_ub": _copy_ub,
}
"""Families whose instructions decode into a :class:`_Prep` (the vector and copy instructions)."""
_UNMASKED = frozenset({"vbrcb", "sort", "merge", "copy_in", "copy_out", "copy_ub"})
"""Prepared families the mask does not affect (vbrcb ignores it, §1.5; vbitsort and vmrgsort4 take whole lists)."""


def _prep_of(m, d: _Dyn) -> "_Prep":
    """The :class:`_Prep` of an issued vector or copy instruction: the plan's when its operands
    are constants (made at plan time or at the first issue under this mask), else a fresh one."""
    ins = d.ins
    fam = ins.spec.family
    key = (id(ins), None if fam in _UNMASKED else (m.mask_mode, m.mask_hi, m.mask_lo))
    got = m.plan.prep.get(key)
    if got is not None and got[0] is ins:
        return got[1]
    pr = _PREPARE[fam](m, d)
    if d.args is ins.args:  # constant operands: the same every issue
        m.plan.prep[key] = (ins, pr)
    return pr


def _prepared(m: _Machine, d: _Dyn, p: int, te):
    pr = _prep_of(m, d)
    if te is not None:
        te.repeats, te.nbytes, te.bursts = pr.repeats, pr.nbytes, pr.bursts
    if m.tape is not None:
        m.tape[-1][3] = pr.vectorised and m.tape[-1][3]
    m._accesses(d, p, pr.accs, pr.bounded == m.sizes, True)
    pr.bounded = m.sizes
    if m.dry is not None:  # the run a replay repeats (_recorded): this instruction's data step
        m.dry.append((pr.run, d))
    try:
        pr.run(m, d)
    except ew.ElementwiseError as ex:
        m.fail("invalid", f"{_desc(d)}: {ex}", d)


def _sync(m: _Machine, d: _Dyn, p: int, te):
    _SYNC[d.ins.opcode](m, d, p, te)


_SYNC = {"pipe_barrier": _barrier, "set_flag": _set_flag, "wait_flag": _wait_flag}
_HANDLERS = {
    "vf": _vf_call, **{fam: _prepared for fam in _PREPARE}, "sync": _sync, "mask": _Machine._mask,
    **cube_exec.HANDLERS, **pipes.HANDLERS,
    "sload": _sload, "sstore": _sstore, "sload_gm": _sload_gm, "sstore_gm": _sstore_gm, "smov": _smov, "salu": _salu, "block": _block, "print": _print_ub,
}
_OP_HANDLERS = {op: _SYNC.get(op) or _HANDLERS[spec.family] for op, spec in OPCODES.items()}
"""opcode -> its handler (:data:`_HANDLERS` by family; the sync ops each their own)."""


# ---------------------------------------------------------------------------------------------
# The plan: a program decoded once
# ---------------------------------------------------------------------------------------------

_GM_SOURCES = frozenset({("copy_in", "src"), ("cube_copy", "src"), ("sload_gm", "addr")})
"""(family, GM operand field) that an instruction only reads."""
_GM_WRITTEN = {op: fields for op, spec in OPCODES.items()
               if (fields := tuple(f for f, k in spec.kinds.items() if k == "gm" and (spec.family, f) not in _GM_SOURCES))}
"""opcode -> its GM operand fields that it may write, for the opcodes with any (:attr:`Plan.gm_written`)."""


class Plan:
    """What the executor decodes of a program once, kept with the program: the :class:`_Prep` of
    each vector or copy instruction with constant operands (``Instr.dyn`` empty) under
    the mask state it runs with (guessed in program order here; an issue under another mask
    state decodes again and keeps that too)."""
    replay: _Replay | None = None
    """A straight-line program's run, kept from its first checked run (:func:`_recorded`)."""
    replayable = False
    """Straight-line, every operand a constant, no scalar-unit or cube work, a known target and no
    kernel scalars: its schedule, hazard findings, trace and counts do not depend on the data, so
    one checked run decides the rest."""
    gm_written = frozenset()
    """The GM arguments an instruction may write (a GM operand other than a source: the others
    are read-only views of the inputs, not copies; a VF reads and writes only the UB)."""

    def __init__(self, program: Program | None):
        self.prep: dict = {}
        """(id of an instruction, mask state or None) -> (the instruction, its :class:`_Prep`)."""
        self.loops: dict = {}
        """id of a loop -> (the loop, may runtime/loop_batch.py batch its trips?)."""
        if program is None:  # a machine that runs no program (runtime/vf_executor.py's checker)
            return
        body = program.body
        if all(type(n) is Instr for n in body):  # straight-line: replayable unless an instruction says no
            instrs, replay = body, not program.scalar_args
        else:
            instrs, replay = program.instructions(), False
        shim = None
        writes = set()
        prep = self.prep
        for ins in instrs:
            if ins.opcode in _PLAIN and not ins.dyn:
                continue  # (a flag, a barrier, a VF call: nothing to decode, no GM written, replayable)
            gm = _GM_WRITTEN.get(ins.opcode)
            if gm:
                for f in gm:
                    if type(ins.args.get(f)) is GmAddr:
                        writes.add(ins.args[f].arg)
            fam = ins.spec.family
            if ins.dyn:
                replay = False
                continue
            if fam not in _PREPARE and fam != "mask":
                if fam not in _REPLAYABLE:
                    replay = False
                continue
            if shim is None:
                shim = _PlanMachine(program, self)
            d = _Dyn(ins, ins.args, (), 0)
            if fam == "mask":
                _Machine._mask(shim, d)
                continue
            key = (id(ins), None if fam in _UNMASKED else (shim.mask_mode, shim.mask_hi, shim.mask_lo))
            try:  # (as _prep_of keeps it: constant operands)
                prep[key] = (ins, _PREPARE[fam](shim, d))
            except (_Abort, ValueError, KeyError, TypeError):
                pass  # the issue reports it, with the machine's state
        self.gm_written = frozenset(writes)
        self.replayable = replay and lookup_target(program.target) is not None


class _PlanMachine:
    """The part of a machine that decoding an instruction reads (masks, GM element sizes)."""
    tape = None

    def __init__(self, program: Program, plan: Plan):
        self.plan = plan
        self.mask_mode, self.mask_hi, self.mask_lo = "norm", -1, -1
        self.gm: dict = {}
        """The GM arguments by name (no arrays: a decoded step reads its run's)."""
        self.gm_esize: dict = {}
        for g in program.gm_args:
            self.gm[g.name], self.gm_esize[g.name] = None, DTYPE_SIZES[g.dtype]

    def fail(self, kind, msg, dyn):
        raise _Abort()

    _active = _Machine._active
    _align = _Machine._align
    _vector = _Machine._vector


def plan_of(program: Program) -> Plan:
    """The program's :class:`Plan`, made on first use: its first run, or the compile when a run
    follows (pipeline.compile_module ``decode=True``).  It decodes operands only: nothing of it
    runs the program, checks hazards or times it (the first checked run does, :func:`_recorded`)."""
    plan = program.__dict__.get("_plan")
    if plan is None:
        plan = program.__dict__["_plan"] = Plan(program)
        if program.vf_funcs:  # ascend950: its VFs' bodies too (runtime/vf_executor.py vf_plan)
            from .vf_executor import vf_plan

            for fn in program.vf_funcs.values():
                vf_plan(fn)
    return plan


_REPLAYABLE = frozenset(_PREPARE) | {"sync", "mask", "vf"}
_PLAIN = frozenset(op for op, spec in OPCODES.items() if spec.family in ("sync", "vf") and op not in _GM_WRITTEN)
"""Opcodes the plan has nothing to decode of (their operands are read at issue) and that write no GM."""


class _Replay:
    """The run of a straight-line program whose operands are all constants: its schedule, hazard
    findings, trace and counts do not depend on the data, so its first checked run decides them
    and every later execution runs only the NumPy steps, in that run's order.  ``stats``: target ->
    the cycle model's stats of ``trace``."""

    def __init__(self, body: tuple, steps: list, trace: list, counts: dict, nsteps: int, ub_bytes: int):
        self.body, self.steps, self.trace, self.counts = body, steps, trace, counts
        self.nsteps, self.ub_bytes, self.stats = nsteps, ub_bytes, {}


def _recorded(program: Program, m: "_Machine", ub_bytes: int) -> "_Replay | None":
    """The :class:`_Replay` of a replayable program from its first checked, traced run ``m`` (which
    kept its data steps in ``m.dry``), or None when that run found anything (then every execution
    runs instruction by instruction and reports it)."""
    if m.findings:
        return None
    return _Replay(tuple(program.body), m.dry, list(m.trace), dict(m.counts), m.max_steps - m.steps_left,
                   ub_bytes)


class _ReplayMachine:
    """The memories a replayed step reads and writes."""
    batch = None
    view, ub_view, ub_bytes, gm_bytes_of = _Machine.view, _Machine.ub_view, _Machine.ub_bytes, _Machine.gm_bytes_of

    def __init__(self, ub: np.ndarray, gm: dict):
        self.ub, self._views = ub, {}
        self.gm_bytes = _GmBytes(gm)


def _replayed(rp: _Replay, ub: np.ndarray, gm: dict, scalars: dict, trace: bool) -> "ExecResult | None":
    """The run of ``rp`` on these memories; None when a step fails on the data (an integer
    division by zero): the caller runs the program instruction by instruction to report it."""
    m = _ReplayMachine(ub, gm)
    try:
        with np.errstate(all="ignore"):
            for run, d in rp.steps:
                run(m, d)
    except ew.ElementwiseError:
        return None
    env = {"block_idx": 0, "block_num": 1, "subblock_idx": 0, "subblock_num": 1, **scalars}
    return ExecResult(outputs=gm, findings=[], trace=list(rp.trace) if trace else [], counts=dict(rp.counts),
                      ub=ub, scalars=env, blocks=1, replay=rp if trace else None)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

def make_inputs(program: Program, inputs: dict | None = None, written=None, checked: bool = False) -> dict:
    """GM arrays for every argument: the given ones (any shape with the right element count,
    converted to the argument's dtype) and zeros for the rest; with ``written`` (the arguments
    the run may write), the others are read-only views of the inputs, not copies.  ``checked``:
    ``inputs`` holds only GM arguments, each an array of its type and shape already
    (pipeline.program_inputs)."""
    inputs = inputs or {}
    out = {}
    for g in program.gm_args:
        name = g.name
        if name in inputs:
            arr = inputs[name]
            if not checked and not (type(arr) is np.ndarray and arr.dtype == ew.np_dtype(g.dtype)
                                    and arr.shape == g.shape):
                arr = np.asarray(arr)
                n = math.prod(g.shape)
                if arr.size != n:
                    raise ValueError(f"input @{name}: {arr.size} elements given, the program's "
                                     f"argument {g.dtype}{list(g.shape)} has {n}")
                arr = np.asarray(arr, ew.np_dtype(g.dtype)).reshape(g.shape)
            if written is None or name in written:
                out[name] = arr.copy()  # the run writes GM
            else:
                out[name] = view = arr.view()
                view.flags.writeable = False
        else:
            out[name] = np.zeros(g.shape, ew.np_dtype(g.dtype))
    if not checked and len(out) != len(inputs):
        unknown = inputs.keys() - out.keys()
        if unknown:
            raise ValueError(f"unknown GM argument(s): {', '.join(sorted(unknown))}")
    return out


def execute(program: Program, inputs: dict | None = None, scalars: dict | None = None, *,
            blocks: int = 1, target: str | None = None, check: bool = True,
            raise_on_findings: bool = True, ub_init: int = 0, ub=None, trace: bool = True,
            max_races: int = 20, max_steps: int = DEFAULT_MAX_STEPS, schedule: str = "eager",
            checked_inputs: bool = False) -> ExecResult:
    """Run ``program`` on GM arrays made from ``inputs`` (name -> array; missing ones are zero).

    ``scalars`` gives the kernel scalars (``.scalar`` arguments).  ``blocks`` runs block_idx
    0..blocks-1 in turn on the same GM.  With ``check`` the hazard checker runs.  Races do not
    stop the run; a deadlock or an invalid/out-of-bounds access stops it.  Findings raise
    :class:`ExecutionError` (carrying the result) unless ``raise_on_findings`` is False.
    ``ub_init`` is the byte every UB byte starts as; ``ub`` (bytes or a uint8 array, at most
    the UB size) overrides the first bytes of the initial UB of every block (for tests).
    More than ``max_steps`` instructions plus loop trips raise :class:`StepLimitError`.
    ``schedule`` is one of :data:`SCHEDULES`.  ``checked_inputs``: ``inputs`` are
    pipeline.program_inputs's GM arrays (:func:`make_inputs` need not check them again).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule '{schedule}' (choose from {', '.join(SCHEDULES)})")
    if isinstance(program, pipes.AgentsProgram):  # cube and vector cores run concurrently
        return pipes.execute_agents(program, inputs, scalars, blocks=blocks, check=check,
                                    raise_on_findings=raise_on_findings, ub_init=ub_init, trace=trace,
                                    max_races=max_races, max_steps=max_steps, schedule=schedule)
    t = lookup_target(target or program.target)
    if t is None:
        raise ValueError(f"unknown target '{target or program.target}'")
    ub_bytes = t.ub_bytes
    plan = plan_of(program)
    gm = make_inputs(program, inputs, plan.gm_written, checked_inputs)
    sc = dict(scalars or {})
    if program.scalar_args:
        missing = [s.name for s in program.scalar_args if s.name not in sc]
        if missing:
            raise ValueError(f"missing kernel scalar(s): {', '.join('%' + n for n in missing)}")
        for s in program.scalar_args:
            sc[s.name] = _py(ew.scalar_to(sc[s.name], s.dtype))
    if blocks < 1:
        raise ValueError("blocks must be >= 1")
    init = None
    if ub is not None:
        init = np.frombuffer(bytes(ub), np.uint8) if not isinstance(ub, np.ndarray) \
            else np.ascontiguousarray(ub).reshape(-1).view(np.uint8)
        if init.size > ub_bytes:
            raise ValueError(f"initial UB image of {init.size} bytes exceeds the {ub_bytes}-byte UB")
    rp = plan.replay
    plain = blocks == 1 and schedule == "eager"
    if rp is not None and plain and rp.ub_bytes == ub_bytes and rp.nsteps <= max_steps and rp.body == tuple(program.body):
        mem = _fresh_ub(ub_bytes, ub_init)
        if init is not None:
            mem[: init.size] = init
        result = _replayed(rp, mem, gm, sc, trace)
        if result is not None:
            return result
        gm = make_inputs(program, inputs)  # the replay wrote GM before it failed: start again
    m = _Machine(program, gm, sc, blocks, ub_bytes, check, ub_init, trace, max_races, max_steps, schedule,
                 t.cube_spaces, plan)
    if init is not None:
        m.ub_image = init.copy()
        m.ub[: init.size] = init
    if rp is None and plain and plan.replayable and check and trace and ub_init == 0 and init is None:
        m.dry = []  # the run a replay repeats (recorded if it finds nothing)
    try:
        m.run()
    except _Abort:
        pass
    if m.dry is not None:
        rp = plan.replay = _recorded(program, m, ub_bytes)
    result = ExecResult(outputs=m.gm, findings=m.findings, trace=m.trace, counts=m.counts,
                        ub=m.ub, scalars=dict(getattr(m, "env", {})), blocks=blocks,
                        replay=rp if m.dry is not None else None)
    if m.findings and raise_on_findings:
        raise ExecutionError(m.findings, result)
    return result
