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

    def select_expand_mode():
        from pto_compiler.passes.select_expand_mode import SelectExpandModePass

        return SelectExpandModePass

    def tmp_strategy():
        from pto_compiler.passes.tmp_strategy import TmpStrategyPass

        return TmpStrategyPass

    def plan_memory():
        from pto_compiler.passes.plan_memory import PlanMemoryPass

        return PlanMemoryPass

    def lower_a2a3():
        from pto_compiler.passes.lower_a2a3 import LowerA2A3Pass

        return LowerA2A3Pass

    def complete_barriers():
        from pto_compiler.passes.a2a3_complete_barriers import CompleteBarriersPass

        return CompleteBarriersPass

    def lower_vf():
        from pto_compiler.passes.lower_vf import LowerVfPass

        return LowerVfPass

    def insert_sync():
        from pto_compiler.passes.insert_sync import InsertSyncPass

        return InsertSyncPass

    def vf_multi_accumulator():
        from pto_compiler.passes.vf_multi_accumulator import VfMultiAccumulatorPass

        return VfMultiAccumulatorPass

    def vf_pairwise_fold():
        from pto_compiler.passes.vf_pairwise_fold import VfPairwiseFoldPass

        return VfPairwiseFoldPass

    def vf_loop_order():
        from pto_compiler.passes.vf_loop_order import VfLoopOrderPass

        return VfLoopOrderPass

    def vf_fuse_launches():
        from pto_compiler.passes.vf_fuse_launches import VfFuseLaunchesPass

        return VfFuseLaunchesPass

    def resolve_reserved_buffers():
        from pto_compiler.passes.resolve_reserved_buffers import ResolveReservedBuffersPass

        return ResolveReservedBuffersPass

    def inline_calls():
        from pto_compiler.passes.inline_calls import InlineCallsPass

        return InlineCallsPass

    def raise_memref():
        from pto_compiler.passes.raise_memref import RaiseMemrefPass

        return RaiseMemrefPass

    def fold_view_yields():
        from pto_compiler.passes.fold_view_yields import FoldViewYieldsPass

        return FoldViewYieldsPass

    def set_validshape():
        from pto_compiler.passes.set_validshape import SetValidshapePass

        return SetValidshapePass

    return {"pto-verify-target": verify_target, "pto-inline-calls": inline_calls, "pto-raise-memref": raise_memref,
            "pto-fold-view-yields": fold_view_yields, "pto-set-validshape": set_validshape,
            "pto-bufferize": bufferize,
            "pto-select-expand-mode": select_expand_mode, "pto-tmp-strategy": tmp_strategy,
            "pto-plan-memory": plan_memory, "pto-lower-a2a3": lower_a2a3, "pto-insert-sync": insert_sync,
            "a2a3-complete-barriers": complete_barriers, "pto-lower-vf": lower_vf,
            "vf-fuse-launches": vf_fuse_launches, "vf-loop-order": vf_loop_order, "vf-pairwise-fold": vf_pairwise_fold,
            "vf-multi-accumulator": vf_multi_accumulator, "pto-resolve-reserved-buffers": resolve_reserved_buffers}
