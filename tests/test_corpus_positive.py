"""Positive PTOAS corpus files that ptoc runs: ``ptoc FILE --run`` on the file's target (its RUN
line's ``--pto-arch``, else its ``pto.target_arch``, else a2a3) exits 0 and every output line is
PASS against the golden model (GM outputs, and each ``pto.tprint``'s tile); integer scalar arguments get the values below (a loop bound or
offset is never random).  A file that writes no GM runs in ``--run``'s harness (its tiles are the
inputs and outputs, passes/tile_harness.py); files with no result at all (codegen tests of syncs,
entry selection, empty kernels) compile and run with nothing to compare.  The positive files that
do not run (NOT_RUN) stop with their exit code and a located diagnostic that says why."""

from __future__ import annotations

import pytest

from pto_compiler import cli
from samples import SAMPLES, needs_samples

# file -> (extra ptoc arguments, at least one compared output?)
COMPARED = True
RUNS = {
    "orchestration_example_kernel_add.pto": ((), COMPARED),
    "vadd.pto": ((), COMPARED),
    "test__samples__ControlFlow__control_flow-pto-new.pto": ((), COMPARED),
    "test__samples__ControlFlow__control_flow_nested_vec.pto": ((), COMPARED),
    "test__samples__ControlFlow__control_flow_dynamic_branch.pto": (
        ("--input", "valid_row=32", "--input", "valid_col=32", "--input", "mode=1"), COMPARED),
    "test__samples__FFN__ffn_act_dynamic.pto": (("--input", "valid_row=32", "--input", "valid_col=32"), COMPARED),
    "test__samples__GQA__gqa_softmax.pto": ((), COMPARED),
    "test__samples__PyPTOIRParser__orchestration_example_kernel_add.pto": ((), COMPARED),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_10.pto": (("--input", "arg3=0", "--input", "arg4=0"),
                                                                  COMPARED),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_14.pto": ((), COMPARED),
    "test__samples__Sync__compensation_test.pto": (("--input", "cond=1"), COMPARED),
    "test__samples__Sync__nested_loop_confliect.pto": ((), COMPARED),
    "test__samples__Sync__test_if_else_tile_result.pto": (("--input", "arg2=1"), COMPARED),
    "test__samples__VectorAddition__vadd.pto": ((), COMPARED),
    "tools__ptobc__testdata__trowexpandsub_v0_roundtrip.pto": ((), COMPARED),
    "test__basic__tcvt_e2e.pto": (("--entry", "tcvt_f32_to_f16_run"), COMPARED),
    "test__samples__TPushTPop__test4__kernel.pto": ((), COMPARED),
    "test__basic__test_tpush_tpop_roundtrip_nosplit_a5.pto": ((), COMPARED),
    "test__basic__plan_memory_reserve_buffer_prefix.pto": ((), COMPARED),
    # the vector core's tprint of the popped tile, compared with the golden model's
    "test__samples__TPushTPop__test1__kernel.pto": ((), COMPARED),
    "test__samples__TPushTPop__test3__kernel.pto": ((), COMPARED),
    # each core pushes a tile nothing computes (seeded by the harness) and moves what it pops into a
    # tile; the popped tiles and those are compared (the cube's L0A tile through a window)
    "test__basic__tpush_tpop_frontend_lowering_a3.pto": ((), COMPARED),
    "test__basic__tpush_tpop_frontend_lowering_a5.pto": ((), COMPARED),
    # PTOAS's internal pipe form, run in the frontend form (passes/raise_pipes.py); the cube pushes an
    # acc tile nothing writes (seeded), each vector sub-block pops its half: the popped tiles compared
    "test__basic__tpush_tpop_emitc.pto": (("--input", "c2v_consumer_buf=0"), COMPARED),
    "tools__ptobc__testdata__add_static_multicore.pto": (("--input", "arg3=32", "--input", "arg4=32"), COMPARED),
    "test__samples__Qwen3DecodeA3__qwen3_decode_incore_0.pto": (("--input", "arg3=0"), COMPARED),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_0.pto": (("--input", "arg3=0"), COMPARED),
    # PTOAS's memref form (pto-raise-memref); their 16x16x16 GM memrefs, which PTOAS tags NZ, read ND
    "test__basic__plan_memory_for_iter_args_yield.pto": ((), COMPARED),
    "test__basic__plan_memory_if_in_loop.pto": ((), COMPARED),
    "test__basic__plan_memory_if_yield.pto": ((), COMPARED),
    "test__basic__plan_memory_loop_in_if.pto": ((), COMPARED),
    "test__basic__plan_memory_loop_no_reuse_outer_live.pto": ((), COMPARED),
    "test__basic__plan_memory_nested_loops.pto": ((), COMPARED),
    "test__basic__plan_memory_no_reuse_overlap.pto": ((), COMPARED),
    "test__basic__plan_memory_peak_8_overlapping.pto": ((), COMPARED),
    "test__basic__plan_memory_reuse_sequential.pto": ((), COMPARED),
    "test__basic__tinsert_a5_pipe_selection.pto": ((), COMPARED),
    "test__basic__tmov_acc_mat_pipe_selection.pto": ((), COMPARED),
    "test__basic__tinsert_a5_vec_mat_mode_lowering.pto": (("--entry", "tinsert_vec_mat_nd"), COMPARED),
    # scf.if yielding GM views (pto-fold-view-yields); incore_5 (A3/A5) needs 128 MiB of GM: BIG_GM
    "test__samples__Qwen3DecodeA3__qwen3_decode_incore_2.pto": (("--input", "arg5=0", "--input", "arg6=0"), COMPARED),
    "test__samples__Sync__test_inject_sync_intra_pipe_barrier.pto": ((), COMPARED),
    "compact_left_blayout_parser_a3.pto": ((), False),
    "empty_func.pto": ((), False),
    "record_wait_event.pto": ((), False),
    "pto_entry_multifunc.pto": (("--input", "arg1=3"), False),
    "test__basic__compact_left_blayout_parser_a3.pto": ((), False),
    "test__basic__empty_func.pto": ((), False),
    "test__basic__pto_entry_single_func_default.pto": ((), False),
    "test__basic__pto_entry_multifunc.pto": (("--input", "arg1=3"), False),
    "test__basic__pto_entry_multifunc_no_entry.pto": (("--input", "arg1=3"), False),
    "test__basic__record_wait_event.pto": ((), False),
    "test__basic__eventid_array_dyn_sync.pto": ((), False),
    "test__samples__SCF__scf_for_break_like.pto": ((), COMPARED),
    "test__samples__Sync__rar_optimization_test.pto": ((), COMPARED),
    # a tassign address computed at run time (scf.if in a loop); the tile is only printed (compared)
    "tassign_level3_loop_rebind.pto": (("--pto-level=level3",), COMPARED),
    "test__basic__tassign_level3_loop_rebind.pto": (("--pto-level=level3",), COMPARED),
    "tprint_alloc_tile_no_rebind.pto": ((), COMPARED),
    "test__basic__tprint_alloc_tile_no_rebind.pto": ((), COMPARED),
    "test__basic__tile_compact_mode_emitc.pto": ((), COMPARED),
    "test__basic__tinsert_a5_vec_pipe_selection.pto": ((), COMPARED),  # vec -> vec tinsert
    # codegen tests of one op on tiles nothing loads: run in passes/tile_harness.py's harness
    "test__basic__taxpy_emitc.pto": ((), COMPARED),
    "test__basic__tcolargmax_emitc.pto": ((), COMPARED),
    "trem_emitc.pto": ((), COMPARED),
    "test__basic__trem_emitc.pto": ((), COMPARED),
    "test__basic__trowargmin_emitc.pto": ((), COMPARED),
    "test__basic__trsqrt_emitc.pto": ((), COMPARED),
    # tmrgsort's executed list: a vector<4xi16> argument, dense vector constants (read by no op)
    "test__basic__tmrgsort_executed_constant_emitc.pto": ((), COMPARED),
    "test__basic__tmrgsort_variants_emitc.pto": ((), COMPARED),
    "test__basic__ttri_emitc.pto": (("--input", "diag=3"), COMPARED),
    "test__basic__issue487_tsel_i8_parser_arch_scope.pto": (("--entry", "f0"), COMPARED),  # A5 (its A3 RUN: negative)
    "test__basic__issue454_loop_if_else_loop_carried_sync_regression.pto": ((), COMPARED),
    "test__basic__issue454_nested_loop_same_pipe_pair_regression.pto": ((), COMPARED),
    # their only result is in an L0A / L1 tile, which no instruction moves to GM, and the acc tile
    # tinsert_verify reads nothing computes: seeded and compared through the harness's windows
    "test__basic__left_blayout_parser_a3.pto": ((), COMPARED),
    "test__basic__left_blayout_parser_a5.pto": ((), COMPARED),
    "test__basic__tinsert_verify_a5_f32_ok.pto": ((), COMPARED),
    # 32 f16 values sorted into a 1x64 dst: 128 elements of pairs a row, the last 64 past the tile (kept
    # for it by pto-plan-memory, Sort32Op.dst_bytes_written); the harness seeds src/idx, compares dst
    "test__basic__tsort32_emitc.pto": ((), COMPARED),
    # its RUN line's level 3 (addresses by hand, none checked): %rhs_mat is loaded over live %lhs_mat's L1 bytes
    # before the tmov reads %lhs_mat; ptoc warns and both the golden model and the executor read those bytes
    "test__samples__TPushTPop__test5__kernel.pto": (("--pto-level=level3",), COMPARED),
}


BIG_GM = {
    # GM beyond the 64 MiB default (a 128 x 524288 or 25600 x 8192 bf16 weight): a minute or two
    # each, so only under -m full; the scalars make every loop trip do its matmul and store.
    "test__samples__Qwen3DecodeA3__qwen3_decode_incore_5.pto": (
        "--max-gm-bytes", "200000000", "--input", "arg3=1", "--input", "arg4=64", "--input", "arg5=1",
        "--input", "arg6=0"),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_5.pto": (
        "--max-gm-bytes", "200000000", "--input", "arg3=1", "--input", "arg4=64", "--input", "arg5=1",
        "--input", "arg6=0"),
    "test__samples__Qwen3DecodeA3__qwen3_decode_incore_15.pto": ("--max-gm-bytes", "500000000", "--input", "arg3=128"),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_15.pto": ("--max-gm-bytes", "500000000", "--input", "arg3=128"),
    "test__samples__Qwen3DecodeA5__qwen3_decode_incore_13.pto": ("--max-gm-bytes", "500000000", "--input", "arg3=256"),
    # two 1x1x16x1024x1024 f32 views (128 MiB); the partition [1, 1, 4, 64, 16] fills the 256x16 tile
    "test__basic__insert_sync_level3_enable.pto": (
        "--max-gm-bytes", "140000000", "--input", "arg2=1", "--input", "arg3=1", "--input", "arg4=4",
        "--input", "arg5=64", "--input", "arg6=16"),
}
"""file -> ptoc arguments of the corpus files whose GM needs a raised ``--max-gm-bytes`` (compared)."""


NOT_RUN = {
    # a genuine deadlock of the file (PTOAS compiles it, as ptoc does): eventid_array_set changes slot 0
    # between the two gets, so the set_flag raises event 1 and the wait_flag waits for event 2
    "test__basic__eventid_array_get_set_get.pto": (("--run",), 4, "deadlock: 'MTE3 wait_flag MTE2->MTE3 id=2'"),
    # a faulty sample: a 32x16 f32 tile (2 KiB) popped into the 1 KiB slots its own pipe init declares (PTOAS
    # does not check the slot size; pto-isa's TPUSH.md requires it to hold one entry)
    "test__basic__tpush_tpop_dir_both.pto": ((), 1, "pops a 2048-byte tile into a 1024-byte slot: no semantics: "
                                                    "TPUSH.md: 'SlotSize must be large enough"),
    # no semantics: a 16x16 NZ vec tile moved from or to a 16x16x16 GM memref PTOAS tags NZ (pto-isa's NZ load
    # then needs 256 valid rows)
    "test__basic__plan_memory_bind_tile_alias_liveness.pto": (
        (), 1, "16x16x16 GM memref PTOAS's pto-infer-layout tags NZ (InferPTOLayout.cpp: right-aligned to 5-D "
               "1x1x16x16x16): pto-isa's NZ move needs the tile's valid rows to be shape2 x shape3 = 256"),
    # its nz entry: PTOAS's GlobalTensor of the 32x32 memref is 1x1x1x32x32 NZ, which pto-isa's A5 TLOAD refuses
    "test__basic__tinsert_a5_vec_mat_mode_lowering.pto": (
        (), 1, "no semantics: pto-isa moves an NZ vec tile only with an NZ GlobalTensor whose last two dims are 16 rows "
               "of 32 bytes"),
}
"""Positive corpus files that do not run: (ptoc arguments, exit code, the reason its first located
diagnostic gives)."""


@needs_samples
@pytest.mark.parametrize("name", sorted(NOT_RUN))
def test_corpus_file_that_does_not_run_says_why_located(name, capsys):
    import re

    flags, code, why = NOT_RUN[name]
    path = next(p for p in SAMPLES if p.name == name)
    rc = cli.main([str(path), *_target(path), *flags])
    _, err = capsys.readouterr()
    first = err.splitlines()[0]
    assert rc == code and re.match(rf"{re.escape(str(path))}:\d+:\d+: error: ", first) and why in first, err


@needs_samples
@pytest.mark.parametrize("name", sorted(RUNS))
def test_corpus_file_runs_and_passes(name, capsys):
    flags, compared = RUNS[name]
    _runs_and_passes(name, flags, compared, capsys)


@needs_samples
@pytest.mark.full
@pytest.mark.parametrize("name", sorted(BIG_GM))
def test_big_gm_corpus_file_runs_and_passes(name, capsys):
    _runs_and_passes(name, BIG_GM[name], COMPARED, capsys)


def _target(path) -> tuple:
    """``--target`` of the file's RUN line's ``--pto-arch``, if it has one."""
    import re

    arch = re.search(r"RUN: ptoas[^|]*--pto-arch[= ](\w+)", path.read_text())
    return ("--target", arch.group(1)) if arch else ()


def _runs_and_passes(name, flags, compared, capsys):
    path = next(p for p in SAMPLES if p.name == name)
    rc = cli.main([str(path), "--run", *_target(path), *flags])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    lines = out.splitlines()
    assert all(line.startswith("PASS ") for line in lines), out
    assert bool(lines) == compared, out
