"""Every per-target fact in one object (DESIGN.md §8), so no pass asks ``if target == ...``."""

from __future__ import annotations

from dataclasses import dataclass


ADDRESS_ALIGN = 32
"""Every tile address is a multiple of 32 bytes (TASSIGN SA-0354, reference/pto_isa.md §4.8)."""


@dataclass(frozen=True)
class Space:
    """One on-chip memory of a core: the tile locations it holds, its capacity and the alignment
    pto-plan-memory places tiles at."""
    name: str
    """The hardware name: UB, L1, L0A, L0B, L0C, BT (bias table), FB (fixpipe buffer)."""
    locs: tuple[str, ...]
    """The ``loc=`` values of the tiles it holds."""
    bytes: int
    align: int
    """Auto placement granule (bytes); a manual address needs only 32-byte alignment (TASSIGN
    SA-0354, reference/pto_isa.md §4.8)."""


# Capacities: reference/pto_isa.md §4.8 (pto-isa TASSIGN table, ``buffer_limits.hpp``);
# alignments: ptoas_peer.md §1.9 (PTOAS PlanMemory MemSpec tables: 256 bits for UB/L1/bias/
# scaling, 4096 bits = one 512-byte fractal for L0A/L0B/L0C).
_CUBE_A2A3 = (Space("L1", ("mat",), 512 * 1024, 32), Space("L0A", ("left",), 64 * 1024, 512),
              Space("L0B", ("right",), 64 * 1024, 512), Space("L0C", ("acc",), 128 * 1024, 512),
              Space("BT", ("bias",), 1024, 32), Space("FB", ("scaling",), 2 * 1024, 32))
_CUBE_A5 = (Space("L1", ("mat",), 512 * 1024, 32), Space("L0A", ("left",), 64 * 1024, 512),
            Space("L0B", ("right",), 64 * 1024, 512), Space("L0C", ("acc",), 256 * 1024, 512),
            Space("BT", ("bias",), 4 * 1024, 32), Space("FB", ("scaling",), 4 * 1024, 32))


@dataclass(frozen=True)
class Target:
    name: str
    """Canonical name: ``a2a3`` or ``ascend950``."""
    ub_bytes: int
    """Unified Buffer capacity."""
    has_vf: bool
    """Register-level vector functions (the ``vf`` dialect) exist only on ascend950."""
    mode1_needs_broadcast_buffer: bool
    """a2a3 broadcasts Mode-1 row scalars with vbrcb into a buffer; ascend950 uses vlds BRC."""
    scratch_offset: int = 0
    """The hidden TMP_UB_OFFSET scratch the 3-operand Mode-1 form uses (a2a3 only)."""
    scratch_bytes: int = 0
    cube_spaces: tuple[Space, ...] = ()
    """The cube core's memories (L1, L0A, L0B, L0C, bias table, fixpipe buffer)."""
    vec_to_mat: bool = False
    """TMOV vec -> mat exists (ascend950 only, reference/pto_isa.md §3 "Data movement")."""

    @property
    def spaces(self) -> tuple[Space, ...]:
        return (Space("UB", ("vec",), self.ub_bytes, 32), *self.cube_spaces)

    def space_of(self, loc: str) -> Space | None:
        """The memory a tile of ``loc`` lives in (None: no such memory on this target)."""
        return next((s for s in self.spaces if loc in s.locs), None)


A2A3 = Target("a2a3", ub_bytes=192 * 1024, has_vf=False, mode1_needs_broadcast_buffer=True,
              scratch_offset=184 * 1024, scratch_bytes=8 * 1024, cube_spaces=_CUBE_A2A3)
ASCEND950 = Target("ascend950", ub_bytes=256 * 1024, has_vf=True, mode1_needs_broadcast_buffer=False,
                   cube_spaces=_CUBE_A5, vec_to_mat=True)

TARGETS = {"a2a3": A2A3, "ascend950": ASCEND950}
ALIASES = {
    "a2a3": "a2a3", "a2": "a2a3", "a3": "a2a3",
    "ascend950": "ascend950", "a5": "ascend950", "950pr": "ascend950", "950dt": "ascend950",
}
DEFAULT_TARGET = A2A3


def lookup_target(name: str) -> Target | None:
    """The target an alias names (case-insensitive), or None."""
    canonical = ALIASES.get(name.strip().lower())
    return TARGETS[canonical] if canonical else None
