// A syntax error is located as ptoc locates errors (file:line:col, the line, a caret); exit 1, no traceback.
// RUN: not ptoc-opt %s 2>&1 | filecheck %s

builtin.module {
  %x = arith.constant 1 : i32
  %y = arith.addi %x %x : i32
}

// CHECK:      parse_error.mlir:6:22: error: Expected ','
// CHECK-NEXT: {{^}}  %y = arith.addi %x %x : i32
// CHECK-NEXT: {{^                     \^$}}
// CHECK-NOT:  Traceback
