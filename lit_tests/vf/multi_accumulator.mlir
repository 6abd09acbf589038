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

// A MERGING fold keeps lanes from the accumulator across trips: left alone.
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
