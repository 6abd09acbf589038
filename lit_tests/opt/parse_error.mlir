// A syntax error keeps xDSL's located message and exits 1 without a traceback.
// RUN: not ptoc-opt %s 2>&1 | filecheck %s

builtin.module {
  %x = arith.constant 1 : i32
  %y = arith.addi %x %x : i32
}

// CHECK:      ptoc-opt: error: {{.*}}parse_error.mlir:6:{{[0-9]+}}
// CHECK-NEXT: %y = arith.addi %x %x : i32
// CHECK-NOT:  Traceback
