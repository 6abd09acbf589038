"""ptoc's passes, one ModulePass a file; ``get_all_passes`` is the registry ptoc-opt uses.

Factories are lazy (xDSL's own ``get_all_passes`` style) so start-up imports nothing unused.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def verify_target():
        from pto_compiler.passes.verify_target import VerifyTargetPass

        return VerifyTargetPass

    def bufferize():
        from pto_compiler.passes.bufferize import BufferizePass

        return BufferizePass

    return {"pto-verify-target": verify_target, "pto-bufferize": bufferize}
