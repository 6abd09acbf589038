// The a2a3 dialect's assembly format reads back: custom form, generic form, both ways
// (reference/vector_isa.md §1: operand fields in ISA order, blk/rep stride groups in operand order).
// RUN: ptoc-opt %s | filecheck %s
// RUN: ptoc-opt %s --print-op-generic | ptoc-opt | filecheck %s

func.func @k(%x: !pto.ptr<f32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  a2a3.vmax dst=%c0 src0=%c8 src1=%c16 repeat=%c16 blk=%c1, %c1, %c0 rep=%c8, %c8, %c1 : f32
  a2a3.vadds dst=%c0 src=%c8 scalar=(%s : f32) repeat=%c1 blk=%c1, %c1 rep=%c8, %c8 : f32
  a2a3.vcmax dst=%c0 src=%c8 repeat=%c1 blk=%c1 rep=%c1, %c8 order=value_index : f32
  a2a3.vconv dst=%c0 src=%c8 repeat=%c1 blk=%c1, %c1 rep=%c8, %c8 round=z : f32, f16
  a2a3.copy_gm_to_ubuf dst=%c0 src=(%x : !pto.ptr<f32>)+%c8 n_burst=%c1 len_burst=%c8 src_gap=%c0 dst_gap=%c0 right_pad=%c0 pad_value=(%s : f32) : f32
  a2a3.set_flag MTE2 -> V id=%c0
  a2a3.wait_flag MTE2 -> V id=%c0
  a2a3.pipe_barrier V
  a2a3.set_mask_norm
  a2a3.set_vector_mask hi=%c0 lo=%c1
  %r = a2a3.ld_ub addr=%c8 : f32, f32
  a2a3.st_ub addr=%c8 src=(%r : f32) : f32
  %b = a2a3.get_block_idx : index
  func.return
}

// CHECK:      a2a3.vmax dst=%c0 src0=%c8 src1=%c16 repeat=%c16 blk=%c1, %c1, %c0 rep=%c8, %c8, %c1 : f32
// CHECK-NEXT: a2a3.vadds dst=%c0 src=%c8 scalar=(%s : f32) repeat=%c1 blk=%c1, %c1 rep=%c8, %c8 : f32
// CHECK-NEXT: a2a3.vcmax dst=%c0 src=%c8 repeat=%c1 blk=%c1 rep=%c1, %c8 order=value_index : f32
// CHECK-NEXT: a2a3.vconv dst=%c0 src=%c8 repeat=%c1 blk=%c1, %c1 rep=%c8, %c8 round=z : f32, f16
// CHECK-NEXT: a2a3.copy_gm_to_ubuf dst=%c0 src=(%x : !pto.ptr<f32>)+%c8 n_burst=%c1 len_burst=%c8
// CHECK-NEXT: a2a3.set_flag MTE2 -> V id=%c0
// CHECK-NEXT: a2a3.wait_flag MTE2 -> V id=%c0
// CHECK-NEXT: a2a3.pipe_barrier V
// CHECK-NEXT: a2a3.set_mask_norm
// CHECK-NEXT: a2a3.set_vector_mask hi=%c0 lo=%c1
// CHECK-NEXT: %r = a2a3.ld_ub addr=%c8 : f32, f32
// CHECK-NEXT: a2a3.st_ub addr=%c8 src=(%r : f32) : f32
// CHECK-NEXT: %b = a2a3.get_block_idx : index

