"""Every negative file of the PTOAS corpus (``RUN: not ptoas``, or a file whose CHECK is an error)
is rejected by ``ptoc --emit pto`` with exit 1, a located diagnostic, and the rule PTOAS names
(its CHECK line's wording)."""

from __future__ import annotations

import re

import pytest

from pto_compiler import cli
from samples import SAMPLES, is_negative, needs_samples

# file -> [(extra ptoc flags, the rule the diagnostic must name)], one entry per negative RUN line
NEGATIVE = {
    "test__basic__async_put_invalid_non_1d.pto": [
        ((), "'pto.tput_async' op expects dst to be a static flat contiguous logical 1D GM memref")],
    "test__basic__issue487_tsel_i8_parser_arch_scope.pto": [
        (("--pto-arch=a3",), "'pto.tsel' op expects A2/A3 tsel src0, src1, and dst element type to be "
                             "i16/i32/f16/f32")],
    "test__basic__pto_entry_nonvoid_rejected.pto": [((), "PTO entry functions must return void")],
    "test__basic__pto_entry_single_nonvoid_rejected.pto": [((), "PTO entry functions must return void")],
    "test__basic__resolve_reserved_buffers_reject_incomplete_peer_group_a5.pto": [
        (("--pto-arch=a5",), "'pto.initialize_l2l_pipe' op requires a complete peer init pair when local_addr "
                             "comes from pto.reserve_buffer or pto.import_reserved_buffer")],
    "test__basic__resolve_reserved_buffers_reject_non_peer_init_a5.pto": [
        (("--pto-arch=a5",), "'pto.initialize_l2l_pipe' op requires local_addr to come from pto.reserve_buffer "
                             "or pto.import_reserved_buffer when 'flag_base' is not explicit")],
    "test__basic__tcvt_verify_invalid.pto": [
        (("--pto-arch=a3",), "'pto.tcvt' op expects src and dst to have compatible shapes"),
        (("--pto-arch=a3",), "'pto.tcvt' op expects src and dst to have the same valid_shape")],
    "test__basic__tgather_compare_invalid_src_type.pto": [
        (("--pto-arch=a3",), "'pto.tgather' op expects A2/A3 compare-form tgather src element type to be "
                             "f16/f32, or i32 when cmpMode=eq")],
    "test__basic__tget_scale_addr_verify_invalid.pto": [
        (("--pto-arch=a5",), "'pto.tget_scale_addr' op expects dst to be in the scaling address space")],
    "test__basic__thistogram_verify_invalid_a3.pto": [
        (("--pto-arch=a3",), "'pto.thistogram' op thistogram is only supported on A5")],
    "test__basic__tpush_tpop_dynamic_validshape_invalid.pto": [
        (("--pto-arch=a5",), "'pto.tpop_from_aic' op expects tile result to have dynamic validShape (?, ?) "
                             "when valid_row/valid_col operands are provided")],
    "test__basic__tpush_tpop_frontend_nosplit_conflict_a5.pto": [
        (("--pto-arch=a5",), "op explicit 'nosplit = false' conflicts with downstream users that require "
                             "split = 0")],
    "test__basic__tstore_verify_shape_valid_mismatch_invalid.pto": [
        ((), "'pto.tstore' op expects dst static element count")],
    "test__basic__plan_memory_reserve_buffer_manual_reject_nested_alloc.pto": [
        ((), "'memref.alloc' op cannot use pto.reserve_buffer with auto = false when local memref.alloc still "
             "requires PlanMemory allocation")],
    "test__basic__tassign_level3_missing_alloc_addr.pto": [
        (("--pto-level=level3", "--pto-arch=a5"), "'pto.alloc_tile' op requires 'addr' operand when "
                                                   "--pto-level=level3")],
    "tools__ptobc__testdata__recent_ops_v0_roundtrip.pto": [
        ((), "'pto.tgemv.mx' op tgemv.mx is only supported on A5 targets"),
        (("--pto-arch=a5",), "'pto.tgemv.mx' op expects A5 mx operands a and b to use fp8 element types")],
}
for _name in ("test__basic__tassign_level3_loop_rebind.pto", "tassign_level3_loop_rebind.pto"):
    NEGATIVE[_name] = [
        (("--pto-level=level3", "--pto-arch=a5", "--enable-insert-sync"),
         "pto.tassign requires --enable-insert-sync to be disabled"),
        (("--pto-level=level2", "--pto-arch=a5"), "pto.tassign is only supported when --pto-level=level3")]


def _negative_files() -> set[str]:
    return {p.name for p in SAMPLES if is_negative(p)}


@needs_samples
def test_every_negative_file_has_its_rule():
    missing = _negative_files() - set(NEGATIVE)
    assert not missing, f"negative corpus files with no expected rule: {sorted(missing)}"


@needs_samples
@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_negative_file_is_rejected_naming_the_rule(name, capsys):
    path = next(p for p in SAMPLES if p.name == name)
    for flags, rule in NEGATIVE[name]:
        assert cli.main([str(path), "--emit", "pto", *flags]) == 1
        err = capsys.readouterr().err
        located = re.search(rf"^{re.escape(str(path))}:\d+:\d+: error: .*{re.escape(rule)}", err, re.M)
        assert located, f"{name} {flags}: want a located error naming {rule!r}, got:\n{err}"
