// vf-loop-order (seeds/001 head_axis): y[m, n] = x[m, n] + a[n], 17 rows of 11 chunks, written
// rows outer (m -> n: a's chunk reloaded and the mask updated per row).  The interchanged nest
// (n -> m) loads a's chunk and makes the mask once per chunk: the chunk loop carries the count and
// holds update_mask and the load of %a (they do not depend on the row); the row loop inside holds
// the row offset, the x load, the add and the store.  The cycle model keeps it (17 rows are
// enough to amortise the shorter inner loop).
// RUN: ptoc-opt %s -p vf-loop-order | filecheck %s

vf.func @head(%x: !pto.tile_buf<vec, 17x704xf32, valid=17x700>, %a: !pto.tile_buf<vec, 1x704xf32, valid=1x700>, %y: !pto.tile_buf<vec, 17x704xf32, valid=17x700>) {
  %nea = arith.constant 704 : index
  %n = arith.constant 700 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c11 = arith.constant 11 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  scf.for %r = %c0 to %c17 step %c1 {
    %base = arith.muli %r, %nea : index
    %left = scf.for %c = %c0 to %c11 step %c1 iter_args(%cnt = %n) -> (i32) {
      %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
      %co = arith.muli %c, %c64 : index
      %off = arith.addi %base, %co : index
      %xv = vf.load_align %x[%off] : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      %av = vf.load_align %a[%co] : !pto.tile_buf<vec, 1x704xf32, valid=1x700>
      %s = vf.add %xv, %av, %m : !vf.reg<64xf32>
      vf.store_align %y[%off], %s, %m : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      scf.yield %cnt2 : i32
    }
  }
}
// CHECK-LABEL: vf.func @head
// CHECK:       scf.for %[[C:.*]] = %c0 to %c11 step %c1 iter_args(%[[CNT:.*]] = %n) -> (i32) {
// CHECK-NEXT:    %[[M:.*]], %[[CNT2:.*]] = vf.update_mask %[[CNT]]
// CHECK-NEXT:    %[[CO:.*]] = arith.muli %[[C]], %c64
// CHECK-NEXT:    %[[AV:.*]] = vf.load_align %a[%[[CO]]]
// CHECK-NEXT:    scf.for %[[R:.*]] = %c0 to %c17 step %c1 {
// CHECK-NEXT:      %[[B:.*]] = arith.muli %[[R]], %nea
// CHECK-NEXT:      %[[OFF:.*]] = arith.addi %[[B]], %[[CO]]
// CHECK-NEXT:      %[[XV:.*]] = vf.load_align %x[%[[OFF]]]
// CHECK-NEXT:      %[[S:.*]] = vf.add %[[XV]], %[[AV]], %[[M]]
// CHECK-NEXT:      vf.store_align %y[%[[OFF]]], %[[S]], %[[M]]
// CHECK:         scf.yield %[[CNT2]] : i32

// The row loop also loads (a BRC broadcast of the row's scalar, TROWEXPAND): left alone.
vf.func @tail(%x: !pto.tile_buf<vec, 17x704xf32, valid=17x700>, %a: !pto.tile_buf<vec, 1x24xf32, valid=1x17>, %y: !pto.tile_buf<vec, 17x704xf32, valid=17x700>) {
  %nea = arith.constant 704 : index
  %n = arith.constant 700 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c11 = arith.constant 11 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  scf.for %r = %c0 to %c17 step %c1 {
    %ar = vf.load_align %a[%r], dist = BRC_B32 : !pto.tile_buf<vec, 1x24xf32, valid=1x17>
    %base = arith.muli %r, %nea : index
    %left = scf.for %c = %c0 to %c11 step %c1 iter_args(%cnt = %n) -> (i32) {
      %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
      %co = arith.muli %c, %c64 : index
      %off = arith.addi %base, %co : index
      %xv = vf.load_align %x[%off] : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      %s = vf.add %xv, %ar, %m : !vf.reg<64xf32>
      vf.store_align %y[%off], %s, %m : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      scf.yield %cnt2 : i32
    }
  }
}
// CHECK-LABEL: vf.func @tail
// CHECK:       scf.for %{{.*}} = %c0 to %c17 step %c1 {
// CHECK-NEXT:    vf.load_align %a[%{{.*}}], dist = BRC_B32

// The chunk count a parameter (the study's head_axis_1 folded by vf-fuse-launches: vfLoopN is a
// PB argument): the cycle model takes the value every launch passes (11) and interchanges.
vf.func @head_param(%x: !pto.tile_buf<vec, 17x704xf32, valid=17x700>, %a: !pto.tile_buf<vec, 1x704xf32, valid=1x700>, %y: !pto.tile_buf<vec, 17x704xf32, valid=17x700>, %loopn: index) {
  %nea = arith.constant 704 : index
  %n = arith.constant 700 : i32
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  scf.for %r = %c0 to %c17 step %c1 {
    %base = arith.muli %r, %nea : index
    %left = scf.for %c = %c0 to %loopn step %c1 iter_args(%cnt = %n) -> (i32) {
      %m, %cnt2 = vf.update_mask %cnt : !vf.mask<b32>
      %co = arith.muli %c, %c64 : index
      %off = arith.addi %base, %co : index
      %xv = vf.load_align %x[%off] : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      %av = vf.load_align %a[%co] : !pto.tile_buf<vec, 1x704xf32, valid=1x700>
      %s = vf.add %xv, %av, %m : !vf.reg<64xf32>
      vf.store_align %y[%off], %s, %m : !pto.tile_buf<vec, 17x704xf32, valid=17x700>
      scf.yield %cnt2 : i32
    }
  }
}
func.func @launch(%x: !pto.tile_buf<vec, 17x704xf32, valid=17x700>, %a: !pto.tile_buf<vec, 1x704xf32, valid=1x700>, %y: !pto.tile_buf<vec, 17x704xf32, valid=17x700>) {
  %k11 = arith.constant 11 : index
  vf.call @head_param(%x, %a, %y, %k11) : (!pto.tile_buf<vec, 17x704xf32, valid=17x700>, !pto.tile_buf<vec, 1x704xf32, valid=1x700>, !pto.tile_buf<vec, 17x704xf32, valid=17x700>, index) -> ()
  func.return
}
// CHECK-LABEL: vf.func @head_param
// CHECK:       scf.for %[[C:.*]] = %c0 to %loopn step %c1 iter_args(%[[CNT:.*]] = %n) -> (i32) {
// CHECK-NEXT:    %[[M:.*]], %[[CNT2:.*]] = vf.update_mask %[[CNT]]
// CHECK-NEXT:    %[[CO:.*]] = arith.muli %[[C]], %c64
// CHECK-NEXT:    %[[AV:.*]] = vf.load_align %a[%[[CO]]]
// CHECK-NEXT:    scf.for %[[R:.*]] = %c0 to %c17 step %c1 {
