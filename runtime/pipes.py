"""Mixed cube/vector kernels: one cube core (AIC) and its vector cores (AIV) run as concurrent
agents that talk through the cube<->vector pipe (``tpush_to_aiv``/``tpop_from_aic`` C2V,
``tpush_to_aic``/``tpop_from_aiv`` V2C, ``tfree_from_*``), over one shared GM.

Facts used (sources in the comments):

* **Cores.** One AIC and two AIV sub-blocks (``get_subblock_idx`` 0 and 1) per block, on both
  targets: pto-isa TPUSH/TPOP pages ("On A2A3, [TILE_NO_SPLIT] requires AIV0 and AIV1 to
  participate"; A5: "vector subblocks map to row halves").  On ascend950 a vector kernel whose
  pipe ops are all ``split = 0`` runs on sub-block 0 only: PTOAS wraps its body in
  ``if (get_subblockid() == 0)`` (corpus tpush_tpop_frontend_lowering_a5 CHECK lines).
* **Split** (``TileSplitAxis``, ptoas-tpush-tpop-design.md §3.3): 0 no split (every sub-block
  gets / gives the whole tile), 1 TILE_UP_DOWN (sub-block s has rows ``[s*R/2, (s+1)*R/2)``),
  2 TILE_LEFT_RIGHT (columns likewise).
* **FIFO** (design §4.4): ``dir_mask`` 1 (C2V) or 2 (V2C) give one pipe of 8 slots, 3 (DIR_BOTH)
  one of each direction with 4 slots each.  TPUSH waits for a free slot, stores the tile and
  records data-ready; TPOP waits for data-ready and loads the slot (pto-isa TPUSH/TPOP pages).
  ptoc frees a slot at the consumer's ``tfree_from_*`` (the frontend's free op; every consumer
  sub-block must free it), so a producer more than ``slot_num`` tiles ahead of the frees waits.

On A2/A3 the hardware FIFO lives in GM (``gm_slot_buffer``, PTOAS's ``initialize_l2g2l_pipe``) and on
A5 in the consumer's local memory (``initialize_l2l_pipe``); ptoc models both as the same FIFO of
slots between the cores (GM is not touched by the pipe), with the consumer's copy landing in its
reserve_buffer slot on both targets.

Model: values move as the logical (row, column) elements of the valid region (the layouts of
the two tiles may differ: the FIX / MTE paths convert); the element types must match.  The
popped tile lives in the consumer's reserve_buffer (passes/resolve_reserved_buffers.py gives
each pop op a slot) and the data lands there when the pop runs (on MTE2 in the executor, so the
consumer's readers need the MTE2 sync as on A2/A3, whose TPOP is a GM -> local DMA).

Agents run as threads that hand one baton around (deterministic: an agent runs until it blocks
on the pipe or ends, then the next one in AIC, AIV0, AIV1 order that can go on runs).  A pop
with no push left to feed it, or a push with no free left to make room, is a located
**deadlock** (every blocked agent named), never a hang.  GM accesses of different agents that
conflict are **races** unless a pipe hand-off orders them (the producer's access before its
push, the consumer's after the matching pop; a push orders what its core has *executed*).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from xdsl.ir import BlockArgument

PIPE_OPS = {"pto.tpush_to_aiv": ("c2v", "push"), "pto.tpush_to_aic": ("v2c", "push"),
            "pto.tpop_from_aic": ("c2v", "pop"), "pto.tpop_from_aiv": ("v2c", "pop"),
            "pto.tfree_from_aic": ("c2v", "free"), "pto.tfree_from_aiv": ("v2c", "free")}
"""frontend pipe op -> (direction, action)."""
INIT_OPS = ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe")
BUFFER_OPS = ("pto.reserve_buffer", "pto.import_reserved_buffer")
SPLITS = {0: "no split", 1: "up/down", 2: "left/right"}
CONSUMER = {"c2v": "vector", "v2c": "cube"}


INTERNAL_PIPE_INITS = ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe")
"""PTOAS's internal pipe form (what its pto-lower-frontend-pipe-ops makes of aic/aiv_initialize_pipe,
ptoas-tpush-tpop-design.md §5): operands ``(gm_addr, local_addr[, peer_local_addr])`` (L2G2L, A2/A3)
or ``(local_addr[, peer_local_addr])`` (L2L, A5)."""


def internal_pipe_error(op) -> str:
    """Why ptoc does not run PTOAS's internal pipe form: its pops land at the consumer addresses the
    init takes, and ptoc places pipe slots itself (pto.reserve_buffer, pto-resolve-reserved-buffers)."""
    local = op.operands[1 if op.name == "pto.initialize_l2g2l_pipe" else 0:]
    args = [v for v in local if isinstance(v, BlockArgument)]
    if args:
        name = args[0].name_hint or f"arg{args[0].index}"
        return (f"is PTOAS's internal pipe form with its consumer slot buffer at %{name}, a kernel argument: "
                "where the popped tiles land in the consumer's local memory is known only at run time, and "
                "ptoc places pipe slots at static addresses; write the pipe as aic/aiv_initialize_pipe with "
                "pto.reserve_buffer / pto.import_reserved_buffer")
    return ("is PTOAS's internal pipe form (the output of its pto-lower-frontend-pipe-ops); ptoc runs the "
            "frontend form: aic/aiv_initialize_pipe, tpush_to_*, tpop_from_*, tfree_from_*")


def internal_pipe_init(op):
    """The internal-form pipe init a ``pto.declare_tile`` is popped from (``pto.tpop(%tile, %pipe)``),
    else None."""
    for r in op.results:
        for u in r.uses:
            user = u.operation
            if user.name == "pto.tpop" and len(user.operands) > 1:
                init = getattr(user.operands[1].owner, "name", None)
                if init in INTERNAL_PIPE_INITS:
                    return user.operands[1].owner
    return None


def slot_num(dir_mask: int) -> int:
    """Slots per direction (design §4.4): 8 for one direction, 4 each for DIR_BOTH."""
    return 4 if dir_mask == 3 else 8


# ---------------------------------------------------------------------------------------------
# Which functions run on which core
# ---------------------------------------------------------------------------------------------

def kernel_kind(fn) -> str | None:
    """``cube`` / ``vector`` of ``attributes {pto.kernel_kind = #pto.kernel_kind<...>}``."""
    a = fn.attributes.get("pto.kernel_kind")
    if a is None:
        return None
    text = str(a)
    return "cube" if "cube" in text else "vector" if "vector" in text else None


def has_reserve(module) -> bool:
    """The kernel reserves a pipe slot buffer (pto-resolve-reserved-buffers places it)."""
    return any(op.name == "pto.reserve_buffer" for op in module.walk())


def is_mixed(module) -> bool:
    """The kernel uses the cube<->vector pipe (its agents run concurrently)."""
    return any(op.name in PIPE_OPS for op in module.walk())


def _functions(module):
    from pto_compiler.runtime.kernel_interface import _functions

    return [f for f in _functions(module) if f.body.blocks]


def peer_pair(module):
    """With no ``pto.entry``: the one cube and one vector function a pipe links (PTOAS's
    frontend tests give both as public kernels), cube first; else None."""
    if not is_mixed(module):
        return None
    public = [f for f in _functions(module) if getattr(f.sym_visibility, "data", None) != "private"]
    kinds = sorted((kernel_kind(f), f) for f in public if kernel_kind(f))
    if len(public) == 2 and [k for k, _ in kinds] == ["cube", "vector"]:
        return kinds[0][1], kinds[1][1]
    return None


def agent_root(module, entry_fn, kind: str):
    """The function agent ``kind`` runs: the entry unless it is the other kind's kernel, then
    its peer (the function of ``kind`` a reserve/import names, else the only one)."""
    own = kernel_kind(entry_fn)
    if own in (None, kind):
        return entry_fn
    funcs = {f.sym_name.data: f for f in _functions(module)}
    for op in entry_fn.walk():
        peer = op.attributes.get("peer_func") if op.name in BUFFER_OPS else None
        if peer is not None and kernel_kind(funcs.get(peer.root_reference.data, entry_fn)) == kind:
            return funcs[peer.root_reference.data]
    of_kind = [f for f in funcs.values() if kernel_kind(f) == kind]
    return of_kind[0] if len(of_kind) == 1 else None


@dataclass
class AgentPlan:
    kind: str
    """``cube`` (the AIC) or ``vector`` (each AIV sub-block runs it)."""
    module: object
    """A clone of the kernel's module: ``root`` is its ``pto.entry``, calls of the other kind's
    functions and its ``pto.section`` are gone."""
    root: str


def agent_plans(module, entry_fn) -> list[AgentPlan]:
    """The cube and vector agents of a mixed kernel (a kind with nothing to run is left out)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import UnitAttr

    plans = []
    for kind in ("cube", "vector"):
        root = agent_root(module, entry_fn, kind)
        if root is None:
            continue
        clone = module.clone()
        fns = {f.sym_name.data: f for f in _functions(clone)}
        other = {n for n, f in fns.items() if kernel_kind(f) not in (None, kind)}
        r = fns[root.sym_name.data]
        for f in fns.values():
            f.attributes.pop("pto.entry", None)
        r.attributes["pto.entry"] = UnitAttr()
        for op in list(r.walk()):
            drop = (isinstance(op, func.CallOp) and op.callee.root_reference.data in other) or \
                op.name == f"pto.section.{'vector' if kind == 'cube' else 'cube'}"
            if drop:
                op.detach()
                op.erase()
        for n in other:
            if n != r.sym_name.data:
                fns[n].detach()
                fns[n].erase()
        plans.append(AgentPlan(kind, clone, r.sym_name.data))
    return plans


def vector_subblocks(plan: AgentPlan, target_name: str) -> int:
    """AIV sub-blocks that run the vector agent: 2, or 1 on ascend950 when its pipe is no-split."""
    if target_name == "ascend950":
        splits = {int(op.attributes["split"].value.data) for op in plan.module.walk()
                  if op.name in PIPE_OPS and "split" in op.attributes}
        if splits <= {0}:
            return 1
    return 2


def agent_names(plans: list[AgentPlan], target_name: str) -> list[tuple[str, AgentPlan, int]]:
    """(name, plan, sub-block) of every core: AIC, AIV0, AIV1."""
    out = []
    for p in plans:
        if p.kind == "cube":
            out.append(("AIC", p, 0))
        else:
            out += [(f"AIV{s}", p, s) for s in range(vector_subblocks(p, target_name))]
    return out


# ---------------------------------------------------------------------------------------------
# The baton: agents as threads, one running at a time
# ---------------------------------------------------------------------------------------------

class Deadlock(Exception):
    """Raised in a blocked agent when no agent can go on (``blocked``: name -> what it waits on)."""

    def __init__(self, blocked: dict):
        super().__init__("deadlock")
        self.blocked = blocked


class Group:
    """One cube core and its vector cores, run concurrently (the pipe's FIFOs live here)."""

    def __init__(self, names: list[str], n_vector: int, block: int = 0, gm_log: dict | None = None):
        self.names = names
        self.block = block
        self.n_vector = n_vector
        self.cv = threading.Condition()
        self.turn: str | None = None
        self.done: set[str] = set()
        self.blocked: dict[str, tuple] = {}
        """name -> (predicate, description of what it waits for)."""
        self.dead: Deadlock | None = None
        self.errors: list[BaseException] = []
        self.fifos: dict[str, Fifo] = {}
        self.pushes: dict[str, int] = {n: 0 for n in names}
        """Pipe hand-offs each agent has made (the generation of its GM accesses)."""
        self.knows: dict[str, dict[str, int]] = {n: {} for n in names}
        """name -> for each other agent, how many of its hand-offs it is ordered after."""
        self.gm_log: dict[str, list] = {} if gm_log is None else gm_log
        """GM name -> [(block, agent, generation, write, footprint, atomic)]: every core's GM accesses (shared
        by the groups of all blocks: cores of different blocks are never ordered)."""

    # -- running ---------------------------------------------------------------------------
    def run(self, bodies: dict) -> None:
        """Run ``bodies`` (name -> callable) as agents; re-raise the first error of any."""
        threads = [threading.Thread(target=self._agent, args=(n, bodies[n]), daemon=True) for n in self.names]
        for t in threads:
            t.start()
        with self.cv:
            self.turn = self.names[0]
            self.cv.notify_all()
        for t in threads:
            t.join()
        if self.errors:
            raise self.errors[0]

    def _agent(self, name: str, body) -> None:
        with self.cv:
            while self.turn != name and self.dead is None and not self.errors:
                self.cv.wait()
        try:
            if self.dead is None and not self.errors:
                body()
        except Deadlock:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the caller of run()
            with self.cv:
                self.errors.append(e)
        finally:
            with self.cv:
                self.done.add(name)
                self.blocked.pop(name, None)
                self._pass_on(name)

    def _pass_on(self, me: str) -> None:
        """Give the baton to the next agent that can run (called with the lock held)."""
        i = self.names.index(me)
        for n in self.names[i + 1:] + self.names[:i + 1]:
            if n in self.done:
                continue
            w = self.blocked.get(n)
            if w is None or w[0]():
                self.turn = n
                self.cv.notify_all()
                return
        if self.blocked and self.dead is None and not self.errors:
            self.dead = Deadlock({n: w[1] for n, w in self.blocked.items()})
        self.turn = None
        self.cv.notify_all()

    def wait_until(self, me: str, ready, what) -> None:
        """Block agent ``me`` until ``ready()``; ``what`` names the op it waits in (for the
        deadlock finding).  Raises :class:`Deadlock` when no agent can go on."""
        with self.cv:
            while not ready():
                if self.dead is not None or self.errors:
                    raise self.dead or Deadlock({})
                self.blocked[me] = (ready, what)
                self._pass_on(me)
                while self.turn != me and self.dead is None and not self.errors:
                    self.cv.wait()
            self.blocked.pop(me, None)

    # -- ordering across cores -----------------------------------------------------------------
    def ordered_before(self, writer: str, gen: int, reader: str) -> bool:
        """Is the access ``writer`` made at hand-off generation ``gen`` ordered before what
        ``reader`` does now?"""
        return writer == reader or gen < self.knows[reader].get(writer, 0)

    def hand_off(self, producer: str) -> dict:
        """A push: the producer's knowledge, including all it has done so far."""
        self.pushes[producer] += 1
        return {**self.knows[producer], producer: self.pushes[producer]}

    def gm_access(self, me: str, space: str, write: bool, fp, atomic: bool = False) -> str | None:
        """Record an access of agent ``me`` to GM argument ``space``; a message when it conflicts
        with another core's access no pipe hand-off orders before it (a race across cores).  Two
        ``atomic`` adds commute, so they never conflict."""
        log = self.gm_log.setdefault(space, [])
        found = None
        for blk, who, gen, w, other, at in log:
            if (blk, who) == (self.block, me) or not (w or write) or (atomic and at):
                continue
            if (blk != self.block or not self.ordered_before(who, gen, me)) and other.overlaps(fp):
                kind = "RAW" if w and not write else "WAR" if write and not w else "WAW"
                them = who if blk == self.block else f"{who} of block {blk}"
                found = (f"{kind} race across cores on @{space}: {me} {'writes' if write else 'reads'} elements "
                         f"{them} {'wrote' if w else 'read'} with no pipe hand-off (tpush -> tpop) between "
                         "them (the cores run concurrently)")
                break
        log.append((self.block, me, self.pushes[me], write, fp, atomic))
        return found

    def learn(self, consumer: str, snap: dict) -> None:
        k = self.knows[consumer]
        for n, g in snap.items():
            if n != consumer:
                k[n] = max(k.get(n, 0), g)


# ---------------------------------------------------------------------------------------------
# The FIFO of one direction
# ---------------------------------------------------------------------------------------------

class PipeError(ValueError):
    """A pipe op whose tile does not fit what was pushed / popped (an ``invalid`` finding)."""


def part(x: np.ndarray, split: int, sub: int, subs: int) -> np.ndarray:
    """Sub-block ``sub``'s part of a pushed tile's valid region under ``split``."""
    if split == 0 or subs == 1:
        return x
    axis = split - 1
    n = x.shape[axis]
    if n % 2:
        raise PipeError(f"a {SPLITS[split]} split needs an even number of {('rows', 'columns')[axis]} "
                        f"(the tile has {n})")
    h = n // 2
    return x[h * sub:h * (sub + 1)] if axis == 0 else x[:, h * sub:h * (sub + 1)]


@dataclass
class _Entry:
    parts: dict = field(default_factory=dict)
    """producer sub-block -> values (C2V: the cube's whole tile under key 0)."""
    split: int = 0
    snaps: list = field(default_factory=list)
    pushes: list = field(default_factory=list)
    """The executor's trace entries of the pushes that filled the slot (the cycle model's pops wait
    for them)."""


class Fifo:
    """One direction of the pipe: ``slots`` entries between producers and consumers."""

    def __init__(self, direction: str, slots: int, producers: list[str], consumers: list[str]):
        self.direction = direction
        self.slots = slots
        self.producers = producers
        self.consumers = consumers
        self.entries: dict[int, _Entry] = {}
        self.pushed = {p: 0 for p in producers}
        self.popped = {c: 0 for c in consumers}
        self.freed = {c: 0 for c in consumers}
        self.frees: dict = {c: [] for c in consumers}
        """consumer -> the trace entries of its frees, in order (the cycle model's pushes into a
        full FIFO wait for the free that made room)."""
        self.pops: dict = {c: [] for c in consumers}
        """consumer -> the trace entries of its pops, in order (a free waits for its slot's pop)."""

    def _sub(self, name: str) -> int:
        return int(name[3:]) if name.startswith("AIV") else 0

    def can_push(self, name: str) -> bool:
        return self.pushed[name] - min(self.freed.values()) < self.slots

    def push(self, group: Group, name: str, values: np.ndarray, split: int, dtype: str, te=None) -> None:
        i = self.pushed[name]
        if te is not None:
            te.deps = [self.frees[c][i - self.slots] for c in self.consumers] if i >= self.slots else []
        e = self.entries.setdefault(i, _Entry(split=split))
        e.pushes.append(te)
        if len(self.producers) > 1 and split != e.split:
            raise PipeError(f"sub-blocks push slot {i} with different splits ({e.split} and {split})")
        import numpy as np  # the run time's, not the compile's (pto-plan-memory imports this module)

        e.parts[self._sub(name)] = (np.array(values, copy=True), dtype)
        e.snaps.append(group.hand_off(name))
        self.pushed[name] = i + 1

    def can_pop(self, name: str) -> bool:
        e = self.entries.get(self.popped[name])
        return e is not None and len(e.parts) == len(self.producers)

    def pop(self, group: Group, name: str, split: int, subs: int, te=None) -> tuple[np.ndarray, str, str | None]:
        """(values, dtype, a race message or None) of the consumer's next slot."""
        i = self.popped[name]
        e = self.entries[i]
        self.pops[name].append(te)
        if te is not None:
            te.deps = list(e.pushes)
        for s in e.snaps:
            group.learn(name, s)
        self.popped[name] = i + 1
        race = None
        if len(self.producers) == 1:
            x, dt = e.parts[0]
            return part(x, split, self._sub(name), subs), dt, None
        import numpy as np

        parts = [e.parts[s] for s in sorted(e.parts)]
        dt = parts[0][1]
        if e.split == 0:  # both sub-blocks wrote the whole slot (A2/A3 no-split): the same bytes
            x = parts[0][0]
            if any(p[0].shape != x.shape or p[1] != dt or
                   not np.array_equal(p[0].view(np.uint8), x.view(np.uint8)) for p in parts[1:]):
                race = (f"AIV0 and AIV1 both push slot {i} unsplit (split = 0) with different data: the "
                        "slot holds whichever lands last")
            return x, dt, race
        return np.concatenate([p[0] for p in parts], axis=e.split - 1), dt, None

    def can_free(self, name: str) -> bool:
        return self.freed[name] < self.popped[name]

    def free(self, name: str, te=None) -> None:
        if te is not None:
            te.deps = [self.pops[name][self.freed[name]]]
        self.freed[name] += 1
        self.frees[name].append(te)


def fifo_for(group: Group, direction: str, slots: int) -> Fifo:
    """The group's FIFO of ``direction`` (made at its first init or use)."""
    f = group.fifos.get(direction)
    if f is None:
        aivs = [n for n in group.names if n.startswith("AIV")]
        prod, cons = (["AIC"], aivs) if direction == "c2v" else (aivs, ["AIC"])
        f = group.fifos[direction] = Fifo(direction, slots, prod, cons)
    return f


class AgentPipe:
    """One agent's end of the pipe: what its init ops configured and its pipe ops do."""

    def __init__(self, group: Group, name: str):
        self.group = group
        self.name = name
        self.sub = int(name[3:]) if name.startswith("AIV") else 0
        self.slots: dict[str, int] = {}
        self.gm: dict = {}
        """GM name -> [(agent, generation, write, footprint)] shared by the group (see gm_access)."""

    def init(self, dir_mask: int) -> None:
        if dir_mask not in (1, 2, 3):
            raise PipeError(f"dir_mask {dir_mask} is not 1 (C2V), 2 (V2C) or 3 (both)")
        for bit, d in ((1, "c2v"), (2, "v2c")):
            if dir_mask & bit:
                self.slots[d] = slot_num(dir_mask)
                fifo_for(self.group, d, slot_num(dir_mask))

    def _fifo(self, direction: str, role: str) -> Fifo:
        if direction not in self.slots:
            raise PipeError(f"no {direction.upper()} pipe is initialised in this kernel "
                            f"(aic/aiv_initialize_pipe with dir_mask {1 if direction == 'c2v' else 2} or 3)")
        f = self.group.fifos[direction]
        if self.name not in (f.producers if role == "push" else f.consumers):
            core = "vector (pto.kernel_kind<vector>)" if self.name == "AIC" else "cube (pto.kernel_kind<cube>)"
            raise PipeError(f"a {role} of the {direction.upper()} pipe runs on the other core, but this "
                            f"kernel runs on {self.name}: mark the function that uses it as {core}")
        return f

    def push(self, direction: str, values: np.ndarray, split: int, dtype: str, what, te=None) -> None:
        """``te``: the executor's trace entry, given the entries it waits for (``deps``)."""
        f = self._fifo(direction, "push")
        self.group.wait_until(self.name, lambda: f.can_push(self.name), what)
        f.push(self.group, self.name, values, split, dtype, te)

    def pop(self, direction: str, split: int, what, te=None) -> tuple[np.ndarray, str, str | None]:
        f = self._fifo(direction, "pop")
        self.group.wait_until(self.name, lambda: f.can_pop(self.name), what)
        return f.pop(self.group, self.name, split, self.group.n_vector, te)

    def free(self, direction: str, te=None) -> None:
        f = self._fifo(direction, "pop")
        if not f.can_free(self.name):
            raise PipeError(f"frees a {direction.upper()} slot it has not popped "
                            f"({f.freed[self.name]} freed, {f.popped[self.name]} popped)")
        f.free(self.name, te)


# ---------------------------------------------------------------------------------------------
# The golden model of a mixed kernel
# ---------------------------------------------------------------------------------------------

def golden_pipe_op(ev, op, env) -> None:
    """A pipe op in the golden model (runtime/reference.py's Evaluator with ``ev.pipe`` set)."""
    from pto_compiler.diagnostics import op_error
    from pto_compiler.runtime import reference as R

    if op.name in BUFFER_OPS:
        env[op.results[0]] = 0  # an address: the pipe carries the data itself
        return
    if ev.pipe is None:
        raise op_error(op, "is a cube<->vector pipe op outside a mixed kernel's agents")
    try:
        if op.name in INIT_OPS:
            ev.pipe.init(int(op.attributes["dir_mask"].value.data))
            return
        direction, action = PIPE_OPS[op.name]
        split = int(op.attributes["split"].value.data) if "split" in op.attributes else 0
        if action == "push":
            tile = ev.tile(op, op.ins[0], env)
            ev.warn_unwritten(op, [op.ins[0]], env)
            ev.pipe.push(direction, tile.region(), split, tile.type.dtype, op)
        elif action == "pop":
            x, dt, _ = ev.pipe.pop(direction, split, op)
            t = op.res[0].type
            check_pop(t, x, dt)
            tile = R.new_tile(t, x.shape)
            tile.data[: x.shape[0], : x.shape[1]] = x
            env[op.res[0]] = tile
        else:
            ev.pipe.free(direction)
    except PipeError as e:
        raise op_error(op, str(e)) from None


def check_pop(t, x: np.ndarray, dtype: str) -> None:
    """The popped tile ``t`` must take the part it gets: the same element type and shape."""
    if t.dtype != dtype:
        raise PipeError(f"pops a {t.dtype} tile but the producer pushed {dtype}")
    vr, vc = t.valid_row, t.valid_col
    if (vr, vc) != tuple(x.shape) and vr >= 0 and vc >= 0:
        raise PipeError(f"pops a {vr}x{vc} tile but its part of the pushed tile is "
                        f"{x.shape[0]}x{x.shape[1]}")


def _deadlock_error(dead: Deadlock):
    from pto_compiler.diagnostics import Diagnostic, PtocError, location_of

    diags = []
    for name, op in dead.blocked.items():
        filename, line, col = location_of(op)
        waits = "a tile no push is left to send" if PIPE_OPS.get(op.name, ("", ""))[1] == "pop" else \
            "a free slot no consumer is left to free"
        diags.append(Diagnostic(f"deadlock: {op.name} on {name} waits forever for {waits}",
                                filename, line, col))
    return PtocError(diags)


def evaluate_agents(module, inputs, kernel, block_idx: int, block_num: int, max_steps, target_name: str):
    """The golden model of a mixed kernel (``kernel``: reference._Kernel): its agents run
    concurrently on one GM; returns the GM outputs by name, as ``reference.evaluate`` does."""
    import numpy as np

    from pto_compiler.runtime import reference as R
    from pto_compiler.targets import lookup_target

    entry_fn = kernel.fn
    plans = agent_plans(module, entry_fn)
    cores = agent_names(plans, target_name)
    group = Group([n for n, _, _ in cores], sum(1 for n, _, _ in cores if n.startswith("AIV")))
    specs = kernel.specs
    args, gms = R._bind_inputs(kernel, inputs)
    shared = {s.name: a for s, a in zip(specs, args)}
    bodies, stored = {}, set()
    for name, plan, sub in cores:
        fn = R.select_entry(plan.module, plan.root)
        own = R.kernel_args(fn)
        missing = [s.name for s in own if s.name not in shared]
        if missing:
            raise R.usage_error(f"the {plan.kind} kernel @{plan.root} has argument(s) {', '.join(missing)} that "
                                f"@{entry_fn.sym_name.data} has not: the cores share their arguments by name")
        args = [shared[s.name] for s in own]
        stored |= {own[i].name for i in R._stored_params(fn)}
        ev = R.Evaluator(plan.module, block_idx, block_num, max_steps, lookup_target(target_name).ub_bytes,
                         target=target_name)
        ev.pipe = AgentPipe(group, name)
        ev.subblock = (sub, group.n_vector if plan.kind == "vector" else 1)
        bodies[name] = (lambda ev=ev, fn=fn, args=args: ev.call(fn, args))
    with np.errstate(all="ignore"):
        group.run(bodies)
    if group.dead is not None:
        raise _deadlock_error(group.dead)
    return {n: g.own().reshape(g.shape) for n, g in shared.items()
            if isinstance(g, R.GMArray) and (n in stored or g.written)}


# ---------------------------------------------------------------------------------------------
# The executor of a mixed kernel
# ---------------------------------------------------------------------------------------------

@dataclass
class AgentsProgram:
    """A mixed kernel's programs: the cube core's and the vector cores' (each AIV sub-block runs
    the vector program), with the GM and scalar arguments of all of them (shared by name)."""

    target: str
    name: str
    agents: list
    """[(kind, Program)]: ``cube`` and/or ``vector``."""
    gm_args: list = field(default_factory=list)
    scalar_args: list = field(default_factory=list)
    vector_cores: int = 2
    """AIV sub-blocks that run the vector program (:func:`vector_subblocks`)."""

    def to_text(self) -> str:
        return "\n".join(f"; ---- {kind} core{'s' if kind == 'vector' and self.vector_cores > 1 else ''} "
                         f"({'AIC' if kind == 'cube' else ', '.join(f'AIV{s}' for s in range(self.vector_cores))})\n"
                         + p.to_text() for kind, p in self.agents)

    def instructions(self) -> list:
        return [i for _, p in self.agents for i in p.instructions()]

    def walk(self):
        for _, p in self.agents:
            yield from p.walk()


def agents_program(plans: list[AgentPlan], programs: list, target_name: str) -> AgentsProgram:
    gm, sc = {}, {}
    for prog in programs:
        for g in prog.gm_args:  # the core that views an argument knows its shape
            if g.name not in gm or math.prod(g.shape or ()) > math.prod(gm[g.name].shape or ()):
                gm[g.name] = g
        for a in prog.scalar_args:
            sc.setdefault(a.name, a)
    vec = [p for p in plans if p.kind == "vector"]
    return AgentsProgram(target_name, programs[0].name, [(p.kind, prog) for p, prog in zip(plans, programs)],
                         list(gm.values()), list(sc.values()), vector_subblocks(vec[0], target_name) if vec else 0)


def _X():
    from . import executor

    return executor


def _pipe_of_machine(m, d):
    X = _X()
    if m.agent_pipe is None:
        m.fail("invalid", f"{X._desc(d)}: a cube<->vector pipe instruction outside a mixed kernel's cores", d)
    return m.agent_pipe


def _push(m, d, p: int, te) -> None:
    from .cube_exec import _Operand

    X = _X()
    a = d.args
    ap = _pipe_of_machine(m, d)
    rows, cols = X._ints(m, d, a, ["rows", "cols"])
    src = _Operand(m, d, a, "src", a["dtype"], rows, cols)
    if te is not None:
        te.nbytes, te.bursts = rows * cols * src.esize, rows
    m._accesses(d, p, [src.access(m, False, "src")])
    try:
        ap.push("c2v" if d.ins.opcode == "tpush_cc" else "v2c", src.read(m), int(X._int(a.get("split", 0))),
                a["dtype"], d, te)
    except PipeError as e:
        m.fail("invalid", f"{X._desc(d)}: {e}", d)


def _pop(m, d, p: int, te) -> None:
    from .cube_exec import _Operand

    X = _X()
    a = d.args
    ap = _pipe_of_machine(m, d)
    rows, cols = X._ints(m, d, a, ["rows", "cols"])
    try:
        x, dt, race = ap.pop("c2v" if d.ins.opcode == "tpop_ub" else "v2c", int(X._int(a.get("split", 0))), d, te)
        if dt != a["dtype"]:
            raise PipeError(f"pops {a['dtype']} but the producer pushed {dt}")
        if x.shape != (rows, cols):
            raise PipeError(f"pops a {rows}x{cols} tile but its part of the pushed tile is {x.shape[0]}x{x.shape[1]}")
    except PipeError as e:
        m.fail("invalid", f"{X._desc(d)}: {e}", d)
    if race:
        m.findings.append(X.Finding("race", f"{X._desc(d)}{X._ctx_text(d)}: {race}", (d.ins,)))
    dst = _Operand(m, d, a, "dst", a["dtype"], rows, cols)
    if te is not None:
        te.nbytes, te.bursts = rows * cols * dst.esize, rows
    m._accesses(d, p, [dst.access(m, True, "dst")])
    dst.write(m, x)


def _free(m, d, p: int, te) -> None:
    X = _X()
    ap = _pipe_of_machine(m, d)
    direction = d.ins.opcode.removeprefix("tfree_")
    f = ap.group.fifos.get(direction)
    if f is None or not f.can_free(ap.name):
        m._pump()  # the scalar unit's free follows the pop it frees, which may still sit in MTE2's queue
    try:
        ap.free(direction, te)
    except PipeError as e:
        m.fail("invalid", f"{X._desc(d)}: {e}", d)


def _init(m, d, p: int, te) -> None:
    X = _X()
    try:
        _pipe_of_machine(m, d).init(int(X._int(d.args["dir_mask"])))
    except PipeError as e:
        m.fail("invalid", f"{X._desc(d)}: {e}", d)


HANDLERS = {"pipe_push": _push, "pipe_pop": _pop, "pipe_free": _free, "pipe_init": _init}
"""family -> handler (runtime/executor.py merges these into its table)."""


def check_gm_across_cores(m, d, accs) -> None:
    """The executor's hook: GM accesses of one core checked against the other cores'."""
    X = _X()
    ap = m.agent_pipe
    atomic = X._atomic(d)
    for acc in accs:
        if acc.space in m.gm and not acc.fp.empty:
            msg = ap.group.gm_access(ap.name, acc.space, acc.write, acc.fp, atomic)
            if msg is not None:
                m.findings.append(X.Finding("race", f"{X._desc(d)}{X._ctx_text(d)}: {msg}", (d.ins,)))


def execute_agents(program: AgentsProgram, inputs, scalars, *, blocks: int, check: bool, raise_on_findings: bool,
                   ub_init: int, trace: bool, max_races: int, max_steps: int, schedule: str):
    """runtime/executor.py ``execute`` for a mixed kernel: per block, one machine per core (own
    UB and cube memories, shared GM), run concurrently through the pipe."""
    from pto_compiler.targets import lookup_target

    X = _X()
    t = lookup_target(program.target)
    gm = X.make_inputs(program, inputs)
    sc = dict(scalars or {})
    for s in program.scalar_args:
        sc[s.name] = X._py(X.ew.scalar_to(sc[s.name], s.dtype))
    findings, traces, counts, last, gm_log = [], [], {}, None, {}
    cores = [("AIC", prog, 0) for kind, prog in program.agents if kind == "cube"] + \
        [(f"AIV{s}", prog, s) for kind, prog in program.agents if kind == "vector" for s in range(program.vector_cores)]
    for b in range(blocks):
        group = Group([n for n, _, _ in cores], program.vector_cores, b, gm_log)
        machines = {}
        for i, (name, prog, sub) in enumerate(cores):
            own = {k: gm[k] for k in (g.name for g in prog.gm_args)}
            m = X._Machine(prog, own, {k: v for k, v in sc.items() if k in {a.name for a in prog.scalar_args}},
                           blocks, t.ub_bytes, check, ub_init, trace, max_races, max_steps, schedule, t.cube_spaces)
            m.subblock = (sub, program.vector_cores if name.startswith("AIV") else 1)
            m.agent_pipe = AgentPipe(group, name)
            machines[name] = (m, i)

        def body(m=None):
            try:
                m.run_block(b)
            except X._Abort:
                pass
        group.run({n: (lambda m=m: body(m)) for n, (m, _) in machines.items()})
        if group.dead is not None:
            for name, d in group.dead.blocked.items():
                waits = ("a tile no push is left to send" if d.ins.spec.family == "pipe_pop"
                         else "a free slot no consumer is left to free")
                machines[name][0].findings.append(X.Finding(
                    "deadlock", f"{X._desc(d)}{X._ctx_text(d)} on {name} waits forever for {waits} "
                                f"(every core is blocked or done)", (d.ins,)))
        for name, (m, i) in machines.items():
            findings += m.findings
            for e in m.trace:
                e.block = b * len(cores) + i
            traces += m.trace
            for k, v in m.counts.items():
                counts[k] = counts.get(k, 0) + v
            last = m
        if any(f.kind not in ("race", "sync") for f in findings):
            break
    result = X.ExecResult(outputs=gm, findings=findings, trace=traces, counts=counts, ub=last.ub,
                          scalars=dict(getattr(last, "env", {})), blocks=blocks * len(cores),
                          cores=[n for n, _, _ in cores])
    if findings and raise_on_findings:
        raise X.ExecutionError(findings, result)
    return result
