"""Every per-target fact in one object (DESIGN.md §8), so no pass asks ``if target == ...``."""

from __future__ import annotations

from dataclasses import dataclass


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


A2A3 = Target("a2a3", ub_bytes=192 * 1024, has_vf=False, mode1_needs_broadcast_buffer=True,
              scratch_offset=184 * 1024, scratch_bytes=8 * 1024)
ASCEND950 = Target("ascend950", ub_bytes=256 * 1024, has_vf=True, mode1_needs_broadcast_buffer=False)

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
