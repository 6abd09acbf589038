// vf-pairwise-fold (seeds/001 reduce_sum_ar_binary): a row reduced chunk by chunk (reduce each
// chunk, accumulate lane 0 under VL1) becomes the chunk registers folded pairwise, pair (j, j+h)
// with h the largest power of two below the chunk count, OP<MERGING> under the later chunk's
// mask, then one reduction under chunk 0's mask.  4 chunks of a 250-column f32 row: (0,2) and
// (1,3) with chunk 2's and chunk 3's masks, then (0,1) with chunk 1's, then one vcadd.
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
  %r0 = vf.reduce_sum %v0, %all : !vf.reg<64xf32>
  %left, %acc = scf.for %j = %c0 to %c3 step %c1 iter_args(%cnt = %n, %a = %r0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %o1 = arith.addi %o, %c64 : index
    %v = vf.load_align %x[%o1] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
    %r = vf.reduce_sum %v, %m : !vf.reg<64xf32>
    %a2 = vf.add %a, %r, %l1 : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  vf.store_align %z[0], %acc, %l1, dist = ONEPT : !pto.tile_buf<vec, 1x8xf32, valid=1x1>
}
// CHECK-LABEL: vf.func @row
// CHECK:       %[[ALL:.*]] = vf.create_mask ALL
// CHECK:       %[[V0:.*]] = vf.load_align %x[0]
// CHECK-NOT:   vf.reduce_sum
// CHECK-NOT:   scf.for
// CHECK:       %[[M1:.*]], %[[N1:.*]] = vf.update_mask %n
// CHECK:       %[[V1:.*]] = vf.load_align %x[
// CHECK:       %[[M2:.*]], %[[N2:.*]] = vf.update_mask %[[N1]]
// CHECK:       %[[V2:.*]] = vf.load_align %x[
// CHECK:       %[[M3:.*]], %{{.*}} = vf.update_mask %[[N2]]
// CHECK:       %[[V3:.*]] = vf.load_align %x[
// CHECK:       %[[F02:.*]] = vf.add %[[V0]], %[[V2]], %[[M2]], merge_mode = MERGING
// CHECK:       %[[F13:.*]] = vf.add %[[V1]], %[[V3]], %[[M3]], merge_mode = MERGING
// CHECK:       %[[F:.*]] = vf.add %[[F02]], %[[F13]], %[[M1]], merge_mode = MERGING
// CHECK:       %[[S:.*]] = vf.reduce_sum %[[F]], %[[ALL]]
// CHECK:       vf.store_align %z[0], %[[S]], %{{.*}}, dist = ONEPT

// A row whose result is read beyond lane 0 (a NORM store) is left alone.
vf.func @whole(%x: !pto.tile_buf<vec, 1x256xf32, valid=1x250>, %z: !pto.tile_buf<vec, 1x64xf32>) {
  %l1 = vf.create_mask VL1 : !vf.mask<b32>
  %all = vf.create_mask ALL : !vf.mask<b32>
  %n = arith.constant 186 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %v0 = vf.load_align %x[0] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
  %r0 = vf.reduce_max %v0, %all : !vf.reg<64xf32>
  %left, %acc = scf.for %j = %c0 to %c3 step %c1 iter_args(%cnt = %n, %a = %r0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %v = vf.load_align %x[%o] : !pto.tile_buf<vec, 1x256xf32, valid=1x250>
    %r = vf.reduce_max %v, %m : !vf.reg<64xf32>
    %a2 = vf.max %a, %r, %l1 : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  vf.store_align %z[0], %acc, %all : !pto.tile_buf<vec, 1x64xf32>
}
// CHECK-LABEL: vf.func @whole
// CHECK:       scf.for
// CHECK:         vf.reduce_max
