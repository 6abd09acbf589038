"""``KernelBuilder``: build a PTO kernel with Python calls instead of PTO-AS text.

    kb = KernelBuilder("vadd")
    x, y, z = (kb.gm(n, "f32", (32, 32)) for n in "xyz")   # GM pointer arguments, row-major views
    a, b = kb.tile("f32", (32, 32)), kb.tile("f32", (32, 32))
    kb.tload(x, out=a)                      # a GM argument is its whole view; x[0:16, :] a partition
    kb.tload(y, out=b)
    s = kb.tadd(a, b)                       # no out=: a new tile shaped like the first tile operand
    kb.tstore(kb.trelu(s), out=z)
    module = kb.finish()

Every tile op of the ISA (``pto.TILE_OPS``) is a method named as the op without ``pto.``
(``kb.op("tmatmul.acc", ...)`` for names with a dot).  Python numbers become ``arith.constant`` s of
the destination's element type.  Each op is located at the Python line that built it (the first
caller outside this file and the files in ``internal``), or at ``loc=(file, line, col)``, and is
verified as it is built, so a broken rule is a :class:`PtocError` pointing at that line.  The
module carries the Python sources, so later errors (target checks, lowering) quote them too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pto_compiler.diagnostics import SOURCES_ATTR, PtocError, add_sources, api_boundary, error_at, quoting

_HERE = __file__


@dataclass
class GM:
    """A GM argument's row-major tensor view; ``gm[r0:r1, c0:c1]`` is a partition of it."""
    builder: KernelBuilder
    view: object
    dtype: str
    shape: tuple[int, ...]

    def __getitem__(self, key) -> Partition:
        key = key if isinstance(key, tuple) else (key,)
        key = key + (slice(None),) * (len(self.shape) - len(key))
        if len(key) != len(self.shape) or not all(isinstance(k, slice) and k.step in (None, 1) for k in key):
            raise self.builder._error(f"a GM partition takes {len(self.shape)} slices without a step")
        ranges = [k.indices(n)[:2] for k, n in zip(key, self.shape)]
        return self.builder._partition(self, [lo for lo, _ in ranges], [hi - lo for lo, hi in ranges])


@dataclass
class Partition:
    value: object


class KernelBuilder:
    """One kernel function in its own module; see the module doc."""

    def __init__(self, name: str, *, target_arch: str | None = None, internal: tuple[str, ...] = ()):
        from xdsl.ir import Block

        from pto_compiler import api

        self.name = name
        self.target_arch = target_arch
        from pto_compiler import diagnostics

        self.internal = {_HERE, diagnostics.__file__, *internal}  # (api_boundary's wrapper is there)
        self.ctx = api.context()
        self.block = Block()
        self.sources: dict[str, str] = {}
        self._constants: dict[tuple, object] = {}
        self._last_constant = None
        self._names: set[str] = set()
        self._finished = False
        setattr(self, SOURCES_ATTR, self.sources)  # what api_boundary quotes
        self._func_loc = self._location()  # the function is located where the builder was made

    # ---- locations and errors ------------------------------------------------------------
    def _location(self, loc=None):
        from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

        if loc is None:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename in self.internal:
                frame = frame.f_back
            if frame is None:
                return None
            positions = list(frame.f_code.co_positions())  # one per 2-byte code unit
            i = frame.f_lasti // 2
            line, _, col, _ = positions[i] if i < len(positions) else (None, None, None, None)
            loc = (frame.f_code.co_filename, line or frame.f_lineno, (col or 0) + 1)
        filename, line, col = loc
        if filename not in self.sources:
            try:
                with open(filename, encoding="utf-8") as f:
                    self.sources[filename] = f.read()
            except (OSError, UnicodeDecodeError):
                self.sources[filename] = ""
        return FileLineColLoc(StringAttr(filename), IntAttr(int(line)), IntAttr(int(col)))

    def _error(self, message: str, loc=None) -> PtocError:
        at = self._location(loc)
        if at is None:
            return error_at(message)
        return error_at(message, at.filename.data, at.line.data, at.column.data).quote(self.sources)

    def _add(self, op, loc=None, constant: bool = False):
        """Append ``op`` located at the caller (constants go first, so one serves every use) and
        verify it as the front end's ops are verified."""
        from pto_compiler.verify import op_diagnostic

        if self._finished:
            raise self._error("the kernel is finished; build ops before finish()", loc)
        op.location = self._location(loc) or op.location
        if constant:
            if self._last_constant is None:
                first = self.block.first_op
                self.block.insert_op_before(op, first) if first is not None else self.block.add_op(op)
            else:
                self.block.insert_op_after(op, self._last_constant)
            self._last_constant = op
        else:
            self.block.add_op(op)
        diag = op_diagnostic(op)
        if diag is not None:
            raise PtocError([diag]).quote(self.sources)
        return op

    def _type(self, text: str):
        return self._parse(text, "parse_type")

    def _parse(self, text: str, what: str):
        """A type or attribute from its text; a bad one is an error at the caller."""
        from xdsl.parser import Parser
        from xdsl.utils.exceptions import ParseError

        try:
            return getattr(Parser(self.ctx, text), what)()
        except ParseError as e:
            raise self._error(f"'{text}': {e.msg}") from None

    def _name(self, value, name: str | None, prefix: str):
        if name is None:
            n = 0
            while f"{prefix}{n}" in self._names:
                n += 1
            name = f"{prefix}{n}"
        self._names.add(name)
        value.name_hint = name
        return value

    # ---- arguments, views, tiles, constants ------------------------------------------------
    @api_boundary
    def gm(self, name: str, dtype: str, shape: tuple[int, ...], *, loc=None) -> GM:
        """A ``!pto.ptr<dtype>`` argument and its row-major tensor view of ``shape``."""
        from pto_compiler.dialects import pto

        with quoting(self.sources):
            ptr = self.block.insert_arg(self._type(f"!pto.ptr<{dtype}>"), len(self.block.args))
            self._name(ptr, name, "arg")
            strides = [1] * len(shape)
            for i in range(len(shape) - 2, -1, -1):
                strides[i] = strides[i + 1] * shape[i + 1]
            dims = "x".join("?" for _ in shape)
            op = pto.MakeTensorViewOp(ptr, [self.index(n, loc=loc) for n in shape],
                                      [self.index(s, loc=loc) for s in strides],
                                      self._type(f"!pto.tensor_view<{dims}x{dtype}>"))
            self._add(op, loc)
        self._name(op.result, f"{name}_view", "v")
        return GM(self, op.result, dtype, tuple(shape))

    @api_boundary
    def scalar(self, name: str, dtype: str):
        """A scalar kernel argument (``f32``, ``i32``, ``index``, ...)."""
        arg = self.block.insert_arg(self._type(dtype), len(self.block.args))
        return self._name(arg, name, "arg")

    def _partition(self, gm: GM, offsets, sizes, loc=None) -> Partition:
        from pto_compiler.dialects import pto

        t = self._type(f"!pto.partition_tensor_view<{'x'.join(map(str, sizes))}x{gm.dtype}>")
        op = pto.PartitionViewOp(gm.view, [self.index(o, loc=loc) for o in offsets],
                                 [self.index(s, loc=loc) for s in sizes], t)
        self._add(op, loc)
        return Partition(self._name(op.result, None, "p"))

    @api_boundary
    def tile(self, dtype: str, shape: tuple[int, int], *, loc_space: str = "vec", blayout: str | None = None,
             name: str | None = None, loc=None, **keys):
        """A ``pto.alloc_tile`` of ``!pto.tile_buf<loc_space, RxCxdtype, ...>`` (placed by pto-plan-memory)."""
        from pto_compiler.dialects import pto

        extra = "".join(f", {k}={v}" for k, v in (("blayout", blayout), *keys.items()) if v is not None)
        op = pto.AllocTileOp(self._type(f"!pto.tile_buf<{loc_space}, {shape[0]}x{shape[1]}x{dtype}{extra}>"))
        self._add(op, loc)
        return self._name(op.result, name, "t")

    @api_boundary
    def constant(self, value, type_text: str, *, loc=None):
        """An ``arith.constant`` (one per value and type, at the top of the kernel)."""
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import FloatAttr, IntegerAttr

        key = (type(value), value, type_text)
        if key not in self._constants:
            t = self._type(type_text)
            attr = FloatAttr(float(value), t) if type_text.startswith(("f", "bf")) else IntegerAttr(int(value), t)
            op = arith.ConstantOp(attr, t)
            self._add(op, loc, constant=True)
            self._constants[key] = self._name(op.result, None, "c")
        return self._constants[key]

    @api_boundary
    def index(self, value: int, *, loc=None):
        return self.constant(int(value), "index", loc=loc)

    # ---- tile ops -----------------------------------------------------------------------------
    @api_boundary
    def op(self, name: str, *ins, out=None, loc=None, **attrs):
        """Tile op ``pto.NAME`` on ``ins`` (tiles, GM views/partitions, SSA scalars or Python numbers)
        writing ``out`` (a tile or a GM view; default: a new tile like the first tile operand).
        ``attrs`` are xDSL attributes or their text (``rmode="#pto<round_mode CAST_RINT>"``).
        Returns the destination."""
        from xdsl.ir import Attribute, SSAValue

        from pto_compiler.dialects import pto

        cls = pto.TILE_OPS.get(f"pto.{name}")
        if cls is None:
            from pto_compiler.diagnostics import did_you_mean

            names = [n[4:] for n in pto.TILE_OPS]
            raise self._error(f"unknown tile op '{name}'{did_you_mean(name, names)}", loc)
        tiles = [v for v in ins if isinstance(v, SSAValue) and isinstance(v.type, pto.TileLikeType)]
        if out is None:
            if not tiles:
                raise self._error(f"pto.{name} needs out= (no tile operand to shape the destination like)", loc)
            out = self.tile(tiles[0].type.dtype, (tiles[0].type.rows, tiles[0].type.cols), loc=loc,
                            **_layout_keys(tiles[0].type))
        elem = out.type.dtype if isinstance(out, SSAValue) and isinstance(out.type, pto.TileLikeType) else \
            (tiles[0].type.dtype if tiles else "f32")
        operands = [self._operand(v, elem, loc) for v in ins]
        attributes = {k: v if isinstance(v, Attribute) else self._parse(str(v), "parse_attribute")
                      for k, v in attrs.items()}
        self._add(cls(operands, [self._operand(out, elem, loc)], [], attributes), loc)
        return out

    def _operand(self, v, elem: str, loc):
        if isinstance(v, GM):
            return self._partition(v, [0] * len(v.shape), list(v.shape), loc).value
        if isinstance(v, Partition):
            return v.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return self.constant(v, elem if not elem.startswith("ui") else "i" + elem[2:], loc=loc)

    def __getattr__(self, name: str):
        from pto_compiler.dialects import pto

        if f"pto.{name}" not in pto.TILE_OPS:
            raise AttributeError(name)

        def build(*ins, out=None, loc=None, **attrs):
            return self.op(name, *ins, out=out, loc=loc, **attrs)  # (self.op keeps the API's error contract)

        build.__name__ = name
        return build

    # ---- the module ----------------------------------------------------------------------------
    @api_boundary
    def finish(self):
        """The ``builtin.module`` holding the kernel (structure verified; the target's checks run
        when it is compiled).  It carries the Python sources its ops are located in."""
        from xdsl.dialects import func
        from xdsl.dialects.builtin import ModuleOp, StringAttr
        from xdsl.ir import Region

        from pto_compiler.verify import op_diagnostics

        if self._finished:
            raise self._error("finish() was called already")
        ret = func.ReturnOp()
        ret.location = self._location()
        self.block.add_op(ret)  # verified with its function below
        self._finished = True
        fn = func.FuncOp(self.name, ([a.type for a in self.block.args], []), Region(self.block))
        fn.location = self._func_loc or fn.location
        attrs = {} if self.target_arch is None else {"pto.target_arch": StringAttr(self.target_arch)}
        module = ModuleOp([fn], attributes=attrs)
        diags = op_diagnostics(module)
        if diags:
            raise PtocError(diags).quote(self.sources)
        add_sources(module, self.sources)
        return module


def _layout_keys(t) -> dict:
    """The non-default layout keys of a tile type, for a new tile shaped like it."""
    from pto_compiler.dialects import pto

    return {"blayout": t.blayout.data} if t.blayout.data != pto.TILE_DEFAULTS["blayout"] else {}
