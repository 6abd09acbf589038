// vf-multi-accumulator (seeds/001, reduce "多路并行"): a hardware loop whose only carried register
// is folded once per trip by a ZEROING vf.add/max/min under a loop-invariant mask becomes k
// accumulators: k-1 prologue loads (trips 0..k-2) start accumulators 1..k-1, the group loop
// folds trip j of each group of k into accumulator j, the leftover trips go into accumulator 0
// (the original loop from where the groups end), then (a0 op a1) op (a2 op a3) under the mask.
// 77 chained vmax (a tcolmax column): the cycle model picks k = 2 (vmax's latency is under two
// cycles, so two alternating chains already leave the loads, one a cycle, as the bound):
// 1 prologue trip, 38 groups of 2, no leftover trip.
// RUN: ptoc-opt %s -p vf-multi-accumulator | filecheck %s

vf.func @chain(%x: !pto.tile_buf<vec, 78x64xf32>, %z: !pto.tile_buf<vec, 1x64xf32>) {
  %m = vf.create_mask ALL : !vf.mask<b32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c78 = arith.constant 78 : index
  %init = vf.load_align %x[0] : !pto.tile_buf<vec, 78x64xf32>
  %r = scf.for %i = %c1 to %c78 step %c1 iter_args(%acc = %init) -> (!vf.reg<64xf32>) {
    %o = arith.muli %i, %c64 : index
    %v = vf.load_align %x[%o] : !pto.tile_buf<vec, 78x64xf32>
    %n = vf.max %acc, %v, %m : !vf.reg<64xf32>
    scf.yield %n : !vf.reg<64xf32>
  }
  vf.store_align %z[0], %r, %m : !pto.tile_buf<vec, 1x64xf32>
}
// CHECK-LABEL: vf.func @chain
// CHECK:       %[[M:.*]] = vf.create_mask ALL
// CHECK:       %[[INIT:.*]] = vf.load_align %x[0]
// CHECK:       %[[P1:.*]] = vf.load_align %x[
// CHECK:       %[[G:.*]], %[[G1:.*]] = scf.for {{.*}} iter_args(%[[A0:.*]] = %[[INIT]], %[[A1:.*]] = %[[P1]])
// CHECK:         vf.max %[[A0]], %{{.*}}, %[[M]]
// CHECK:         vf.max %[[A1]], %{{.*}}, %[[M]]
// CHECK:         scf.yield
// CHECK-NOT:   scf.for
// CHECK:       %[[F:.*]] = vf.max %[[G]], %[[G1]], %[[M]]
// CHECK:       vf.store_align %z[0], %[[F]], %[[M]]

// A MERGING fold under a loop-invariant mask keeps lanes the mask leaves out from the
// accumulator's start for ever (no count says which trips cover them): left alone.
vf.func @merging(%x: !pto.tile_buf<vec, 78x64xf32>, %z: !pto.tile_buf<vec, 1x64xf32>) {
  %m = vf.create_mask VL8 : !vf.mask<b32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c78 = arith.constant 78 : index
  %init = vf.load_align %x[0] : !pto.tile_buf<vec, 78x64xf32>
  %r = scf.for %i = %c1 to %c78 step %c1 iter_args(%acc = %init) -> (!vf.reg<64xf32>) {
    %o = arith.muli %i, %c64 : index
    %v = vf.load_align %x[%o] : !pto.tile_buf<vec, 78x64xf32>
    %n = vf.add %acc, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %n : !vf.reg<64xf32>
  }
  vf.store_align %z[0], %r, %m : !pto.tile_buf<vec, 1x64xf32>
}
// CHECK-LABEL: vf.func @merging
// CHECK:       scf.for %{{.*}} = %c1 to %c78 step %c1 iter_args(%{{.*}} = %init) -> (!vf.reg<64xf32>)
// CHECK-NOT:   scf.for
// CHECK:       vf.store_align

// The MERGING form: a row's chunk chain (39 chunks after chunk 0, the mask counted down from
// 2466 columns: 38 whole chunks and 34 columns), vmax.  k = 2: chunk 1 (whole) starts
// accumulator 1, the count threads from its update_mask through the groups' two update_masks,
// the two accumulators merge under a new ALL mask before the reduction.
vf.func @row(%x: !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>, %z: !pto.tile_buf<vec, 1x8xf32, valid=1x1>) {
  %l1 = vf.create_mask VL1 : !vf.mask<b32>
  %all = vf.create_mask ALL : !vf.mask<b32>
  %n = arith.constant 2466 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c39 = arith.constant 39 : index
  %c64 = arith.constant 64 : index
  %v0 = vf.load_align %x[0] : !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>
  %left, %acc = scf.for %j = %c0 to %c39 step %c1 iter_args(%cnt = %n, %a = %v0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %o1 = arith.addi %o, %c64 : index
    %v = vf.load_align %x[%o1] : !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>
    %a2 = vf.max %a, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  %s = vf.reduce_max %acc, %all : !vf.reg<64xf32>
  vf.store_align %z[0], %s, %l1, dist = ONEPT : !pto.tile_buf<vec, 1x8xf32, valid=1x1>
}
// CHECK-LABEL: vf.func @row
// CHECK:       %[[V0:.*]] = vf.load_align %x[0]
// CHECK:       %{{.*}}, %[[N1:.*]] = vf.update_mask %n
// CHECK:       %[[V1:.*]] = vf.load_align %x[
// CHECK-NOT:   vf.max
// CHECK:       %[[G0:.*]], %[[G1:.*]], %{{.*}} = scf.for {{.*}} iter_args(%[[A0:.*]] = %[[V0]], %[[A1:.*]] = %[[V1]], %[[C:.*]] = %[[N1]])
// CHECK:         %[[M1:.*]], %[[C1:.*]] = vf.update_mask %[[C]]
// CHECK:         vf.max %[[A0]], %{{.*}}, %[[M1]], merge_mode = MERGING
// CHECK:         %[[M2:.*]], %[[C2:.*]] = vf.update_mask %[[C1]]
// CHECK:         vf.max %[[A1]], %{{.*}}, %[[M2]], merge_mode = MERGING
// CHECK:         scf.yield %{{.*}}, %{{.*}}, %[[C2]]
// CHECK-NOT:   scf.for
// CHECK:       %[[ALL2:.*]] = vf.create_mask ALL
// CHECK-NEXT:  %[[F:.*]] = vf.max %[[G0]], %[[G1]], %[[ALL2]] : !vf.reg<64xf32>
// CHECK-NEXT:  vf.reduce_max %[[F]], %all

// A count of 50 columns: not even the first chunk covers every lane, so a prologue chunk's whole
// register would fold lanes the chain never folds; the chain stays.
vf.func @short(%x: !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>, %z: !pto.tile_buf<vec, 1x8xf32, valid=1x1>) {
  %l1 = vf.create_mask VL1 : !vf.mask<b32>
  %all = vf.create_mask ALL : !vf.mask<b32>
  %n = arith.constant 50 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c39 = arith.constant 39 : index
  %c64 = arith.constant 64 : index
  %v0 = vf.load_align %x[0] : !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>
  %left, %acc = scf.for %j = %c0 to %c39 step %c1 iter_args(%cnt = %n, %a = %v0) -> (i32, !vf.reg<64xf32>) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %j, %c64 : index
    %v = vf.load_align %x[%o] : !pto.tile_buf<vec, 1x2560xf32, valid=1x2530>
    %a2 = vf.add %a, %v, %m, merge_mode = MERGING : !vf.reg<64xf32>
    scf.yield %cnt2, %a2 : i32, !vf.reg<64xf32>
  }
  %s = vf.reduce_sum %acc, %all : !vf.reg<64xf32>
  vf.store_align %z[0], %s, %l1, dist = ONEPT : !pto.tile_buf<vec, 1x8xf32, valid=1x1>
}
// CHECK-LABEL: vf.func @short
// CHECK:       scf.for %j = %c0 to %c39 step %c1 iter_args(%cnt = %n, %a = %v0)
// CHECK-NOT:   scf.for
