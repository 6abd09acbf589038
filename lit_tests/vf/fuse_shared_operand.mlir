// vf-fuse-launches when a launch passes one buffer twice: @sq(%t, %t, %u) computes u = t * t, then
// @inc(%u, %t, %w) computes w = u + t.  The fused VF takes each buffer once (t, u, w: sq's two
// parameters for %t become one), the add's load of u takes the mul's register, and the store to u
// is dropped (nothing reads %u after the launch): w = t * t + t, every load of t from the one
// parameter.  Both functions define the same five constants: the fused VF keeps one of each.
// RUN: ptoc-opt %s -p vf-fuse-launches | filecheck %s

vf.func @sq(%a: !pto.tile_buf<vec, 1x128xf32>, %b: !pto.tile_buf<vec, 1x128xf32>, %z: !pto.tile_buf<vec, 1x128xf32>) {
  %n = arith.constant 128 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %left = scf.for %i = %c0 to %c2 step %c1 iter_args(%cnt = %n) -> (i32) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %i, %c64 : index
    %x = vf.load_align %a[%o] : !pto.tile_buf<vec, 1x128xf32>
    %y = vf.load_align %b[%o] : !pto.tile_buf<vec, 1x128xf32>
    %p = vf.mul %x, %y, %m : !vf.reg<64xf32>
    vf.store_align %z[%o], %p, %m : !pto.tile_buf<vec, 1x128xf32>
    scf.yield %cnt2 : i32
  }
}
vf.func @inc(%z: !pto.tile_buf<vec, 1x128xf32>, %y: !pto.tile_buf<vec, 1x128xf32>, %w: !pto.tile_buf<vec, 1x128xf32>) {
  %n = arith.constant 128 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %left = scf.for %i = %c0 to %c2 step %c1 iter_args(%cnt = %n) -> (i32) {
    %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
    %o = arith.muli %i, %c64 : index
    %x = vf.load_align %z[%o] : !pto.tile_buf<vec, 1x128xf32>
    %v = vf.load_align %y[%o] : !pto.tile_buf<vec, 1x128xf32>
    %s = vf.add %x, %v, %m : !vf.reg<64xf32>
    vf.store_align %w[%o], %s, %m : !pto.tile_buf<vec, 1x128xf32>
    scf.yield %cnt2 : i32
  }
}
func.func @k() {
  %t = pto.alloc_tile : !pto.tile_buf<vec, 1x128xf32>
  %u = pto.alloc_tile : !pto.tile_buf<vec, 1x128xf32>
  %w = pto.alloc_tile : !pto.tile_buf<vec, 1x128xf32>
  vf.call @sq(%t, %t, %u) : (!pto.tile_buf<vec, 1x128xf32>, !pto.tile_buf<vec, 1x128xf32>, !pto.tile_buf<vec, 1x128xf32>) -> ()
  vf.call @inc(%u, %t, %w) : (!pto.tile_buf<vec, 1x128xf32>, !pto.tile_buf<vec, 1x128xf32>, !pto.tile_buf<vec, 1x128xf32>) -> ()
  return
}
// CHECK-LABEL: vf.func @sq_inc(
// CHECK-SAME:    %[[T:[a-z0-9_]+]]: !pto.tile_buf<vec, 1x128xf32>, %[[U:[a-z0-9_]+]]: !pto.tile_buf<vec, 1x128xf32>, %[[W:[a-z0-9_]+]]: !pto.tile_buf<vec, 1x128xf32>) {
// CHECK-NEXT:    arith.constant 128 : i32
// CHECK-NEXT:    arith.constant 64 : index
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    arith.constant 1 : index
// CHECK-NEXT:    arith.constant 2 : index
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %[[M:.*]], %{{.*}} = vf.update_mask
// CHECK-NEXT:      %[[O:.*]] = arith.muli
// CHECK-NEXT:      %[[X:.*]] = vf.load_align %[[T]][%[[O]]]
// CHECK-NEXT:      %[[Y:.*]] = vf.load_align %[[T]][%[[O]]]
// CHECK-NEXT:      %[[P:.*]] = vf.mul %[[X]], %[[Y]], %[[M]]
// CHECK-NEXT:      %[[O2:.*]] = arith.muli
// CHECK-NEXT:      %[[V:.*]] = vf.load_align %[[T]][%[[O2]]]
// CHECK-NEXT:      %[[S:.*]] = vf.add %[[P]], %[[V]], %[[M]]
// CHECK-NEXT:      vf.store_align %[[W]][%[[O2]]], %[[S]], %[[M]]
// CHECK-NEXT:      scf.yield
// CHECK-NOT:   vf.func
// CHECK-LABEL: func.func @k()
// CHECK:         vf.call @sq_inc(%t, %u, %w)
// CHECK-NOT:     vf.call
