"""``pto-resolve-reserved-buffers{target=...}``: the consumer slot buffers of the cube<->vector
pipe, after pto-plan-memory (PTOAS's pass of the same name, ptoas-tpush-tpop-design.md §7).

* ``%b = pto.reserve_buffer {name, size, location, auto = true}`` gets ``base``: the first hole of
  ``size`` bytes (aligned as its memory) that no planned tile of the function touches (design
  §7.4: "plan the ordinary buffers first, then find a hole", so that the producer's writes into
  the slots never land on a live tile); ``auto = false`` keeps its ``base``, checked against the
  capacity.  No hole, or a base past the end, is a located error.
* ``reserve_buffer.size`` must hold ``slot_size * slot_num`` bytes of the pipe it backs (design
  §3.5 asks for equality, §4.4 gives DIR_BOTH "2 x 4 x SLOT_SIZE" and the corpus's dir_both test
  reserves that: ptoc asks for at least one direction's slots), a located error otherwise.
* Each ``%t = pto.tpop_from_aic / tpop_from_aiv`` becomes ``%t = pto.alloc_tile`` at its slot of
  the consumer buffer (the C2V buffer for a vector pop, the V2C buffer for a cube pop) plus the
  pop in destination style, ``pto.tpop_from_* outs(%t)``: the n-th pop op of the function
  (program order) owns slot ``n mod slot_num`` at ``base + slot * slot_size`` (ptoc's static
  reading of the FIFO rotation; the executor moves the data when the pop runs).

``import_reserved_buffer`` is left alone: ptoc's pipe carries the data between cores itself, so
the producer never needs the consumer's address.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from pto_compiler.diagnostics import op_error
from pto_compiler.dialects import pto
from pto_compiler.passes.tile_access import UB_ADDR
from pto_compiler.passes.tmp_strategy import resolve_target
from pto_compiler.runtime.pipes import INIT_OPS, PIPE_OPS, slot_num


def _int(op, key: str) -> int | None:
    a = op.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else None


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def _loc(op) -> str:
    body = getattr(getattr(op.attributes.get("location"), "body", None), "data", "vec")
    return body.strip()


class _Function:
    def __init__(self, fn: func.FuncOp, target):
        self.fn, self.target = fn, target
        self.inits = {op.name: op for op in fn.walk() if op.name in INIT_OPS}
        """The function's pipe inits: a kernel with both sections has the cube's and the vector's."""
        self.bases: dict = {}
        """reserve_buffer op -> its base."""

    def init_of(self, direction: str):
        """The consumer's init of ``direction``: the vector's for C2V, the cube's for V2C (else the
        function's only init)."""
        own = self.inits.get("pto.aiv_initialize_pipe" if direction == "c2v" else "pto.aic_initialize_pipe")
        return own or next(iter(self.inits.values()), None)

    def buffer_of(self, direction: str):
        """The reserve_buffer backing this function's consumer side of ``direction``."""
        init = self.init_of(direction)
        if init is None:
            return None
        # operands: (gm_slot_buffer on A2/A3,) c2v_consumer_buf, v2c_consumer_buf
        bufs = [v for v in init.operands if not isinstance(v.type, pto.PtrType)]
        idx = 0 if direction == "c2v" else 1
        if idx >= len(bufs):
            return None
        owner = bufs[idx].owner
        return owner if getattr(owner, "name", "") == "pto.reserve_buffer" else None

    def place(self, op) -> int:
        space = self.target.space_of(_loc(op))
        size = _int(op, "size") or 0
        base = _int(op, "base")
        if space is None:
            raise op_error(op, f"reserves a buffer in loc={_loc(op)}, which is no memory of "
                               f"{self.target.name}")
        if base is None:
            busy = sorted((_int(a, UB_ADDR), _int(a, UB_ADDR) + a.result.type.nbytes)
                          for a in self.fn.walk() if isinstance(a, pto.AllocTileOp)
                          and _int(a, UB_ADDR) is not None and a.result.type.loc.data in space.locs)
            at = 0
            for lo, hi in busy:
                if at + size <= lo:
                    break
                at = max(at, _align(hi, space.align))
            base = at
            if base + size > space.bytes:
                raise op_error(op, f"has no {size}-byte hole left in the {space.bytes}-byte {self.target.name} "
                                   f"{space.name} after pto-plan-memory placed the function's tiles")
            op.attributes["base"] = IntegerAttr(base, 64)
        elif base < 0 or base + size > space.bytes or base % space.align:
            raise op_error(op, f"base {base:#x} + size {size} does not fit the {space.bytes}-byte "
                               f"{self.target.name} {space.name} at its {space.align}-byte alignment")
        return base

    def run(self) -> None:
        for op in self.fn.walk():
            if op.name == "pto.reserve_buffer":
                self.bases[op] = self.place(op)
        pops = [op for op in self.fn.walk() if PIPE_OPS.get(op.name, ("", ""))[1] == "pop" and op.res]
        for n, op in enumerate(pops):
            self.lower_pop(op, n)

    def lower_pop(self, op, n: int) -> None:
        direction = PIPE_OPS[op.name][0]
        init = self.init_of(direction)
        if init is None:
            raise op_error(op, "pops from a pipe this function never initialises "
                               "(pto.aic_initialize_pipe / pto.aiv_initialize_pipe)")
        buf = self.buffer_of(direction)
        if buf is None:
            raise op_error(op, f"pops {direction.upper()} but the pipe's {direction}_consumer_buf is not a "
                               "pto.reserve_buffer of this function")
        slots = slot_num(_int(init, "dir_mask") or 1)
        slot_size = _int(init, "slot_size") or 0
        size = _int(buf, "size")
        if size is None or size < slot_size * slots:
            raise op_error(buf, f"reserves {size} bytes, but its pipe needs slot_size x slot_num = "
                                f"{slot_size} x {slots} = {slot_size * slots}")
        t = op.res[0].type
        if t.nbytes > slot_size:
            raise op_error(op, f"pops a {t.nbytes}-byte tile into a {slot_size}-byte slot: no semantics: TPUSH.md: "
                               "'SlotSize must be large enough for one logical FIFO entry' (PTOAS does not check it; "
                               "the entry would run into the next slot)")
        addr = self.bases[buf] + (n % slots) * slot_size
        alloc = pto.AllocTileOp(t, attributes={UB_ADDR: IntegerAttr(addr, 64)})
        dps = type(op)(outs=[alloc.result], attributes=dict(op.attributes))
        alloc.location = dps.location = op.location
        Rewriter.insert_op(alloc, InsertPoint.before(op))
        Rewriter.insert_op(dps, InsertPoint.before(op))
        op.res[0].replace_all_uses_with(alloc.result)
        Rewriter.erase_op(op)


@dataclass(frozen=True)
class ResolveReservedBuffersPass(ModulePass):
    name = "pto-resolve-reserved-buffers"

    target: str = "a2a3"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target)
        for fn in list(op.walk()):
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                _Function(fn, target).run()
