// vf-pairwise-fold (seeds/001 reduce_sum_ar_binary): a row reduced as the baseline does (chunk 0,
// then chunks 1..3 folded into it one after the other, MERGING under their masks, one vcadd)
// becomes the chunk registers folded pairwise, pair (j, j+h) with h the largest power of two
// below the chunk count, OP<MERGING> under the later chunk's mask.  4 chunks of a 250-column f32
// row: (0,2) and (1,3) with chunk 2's and chunk 3's masks, then (0,1) with chunk 1's, then the
// one vcadd under chunk 0's mask.
// RUN: ptoc-opt %s -p vf-pairwise-fold | filecheck %s

vf.func @row(%x: !pto.tile_buf<vec, 1x256xf32, valid=1x250>, %z: !pto.tile_buf<vec, 1x8xf32, valid=1x1>) {
  %l1 = vf.create_mask VL1 : !vf.mask<b32>
  %all = vf.create_mask ALL : !vf.mask<b32>
  %n = arith.constant 186 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %v0 = vf.load_align %x[0] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
  %left, %acc = scf.for %j = %c0 to %c3 step %c1 iter_args(%cnt = %n, %a = %v0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %o1 = arith.addi %o, %c64 : index
    %v = vf.load_align %x[%o1] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
    %a2 = vf.add %a, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  %s = vf.reduce_sum %acc, %all : !vf.reg<64xf32>
  vf.store_align %z[0], %s, %l1, dist = ONEPT : !pto.tile_buf<vec, 1x8xf32, valid=1x1>
}
// CHECK-LABEL: vf.func @row
// CHECK:       %[[ALL:.*]] = vf.create_mask ALL
// CHECK:       %[[V0:.*]] = vf.load_align %x[0]
// CHECK-NOT:   scf.for
// CHECK:       %[[M1:.*]], %[[N1:.*]] = vf.update_mask %n
// CHECK:       %[[V1:.*]] = vf.load_align %x[
// CHECK:       %[[M2:.*]], %[[N2:.*]] = vf.update_mask %[[N1]]
// CHECK:       %[[V2:.*]] = vf.load_align %x[
// CHECK:       %[[M3:.*]], %{{.*}} = vf.update_mask %[[N2]]
// CHECK:       %[[V3:.*]] = vf.load_align %x[
// CHECK-NEXT:  %[[F02:.*]] = vf.add %[[V0]], %[[V2]], %[[M2]], merge_mode = MERGING
// CHECK-NEXT:  %[[F13:.*]] = vf.add %[[V1]], %[[V3]], %[[M3]], merge_mode = MERGING
// CHECK-NEXT:  %[[F:.*]] = vf.add %[[F02]], %[[F13]], %[[M1]], merge_mode = MERGING
// CHECK-NEXT:  %[[S:.*]] = vf.reduce_sum %[[F]], %[[ALL]]
// CHECK-NEXT:  vf.store_align %z[0], %[[S]], %{{.*}}, dist = ONEPT

// A chain whose reduction is stored beyond lane 0 (not a row's lane 0, the form pto-lower-vf
// emits) is left alone: the pass reassociates only what the float-sum tolerance covers.
vf.func @whole(%x: !pto.tile_buf<vec, 1x256xf32, valid=1x250>, %z: !pto.tile_buf<vec, 1x64xf32>) {
  %all = vf.create_mask ALL : !vf.mask<b32>
  %n = arith.constant 186 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %v0 = vf.load_align %x[0] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
  %left, %acc = scf.for %j = %c0 to %c3 step %c1 iter_args(%cnt = %n, %a = %v0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %o1 = arith.addi %o, %c64 : index
    %v = vf.load_align %x[%o1] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
    %a2 = vf.add %a, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  %s = vf.reduce_sum %acc, %all : !vf.reg<64xf32>
  vf.store_align %z[0], %s, %all : !pto.tile_buf<vec, 1x64xf32>
}
// CHECK-LABEL: vf.func @whole
// CHECK:       scf.for
// CHECK:         vf.add %{{.*}}, merge_mode = MERGING
// CHECK:       vf.reduce_sum
