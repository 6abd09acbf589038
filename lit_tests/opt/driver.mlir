// ptoc-opt reads and prints xDSL IR, runs xDSL's own passes, and reports errors in one
// "ptoc-opt: error:" line without a Python traceback.
// RUN: ptoc-opt %s | filecheck %s
// RUN: ptoc-opt %s -p cse --target a5 | filecheck %s
// RUN: ptoc-opt %s --print-op-generic | ptoc-opt | filecheck %s
// RUN: not ptoc-opt %s -p pto-bufferise 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not ptoc-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: not ptoc-opt %s --target nosuch 2>&1 | filecheck %s --check-prefix=TARGET

builtin.module {
  func.func @f(%a: i32) -> i32 {
    %b = arith.addi %a, %a : i32
    func.return %b : i32
  }
}

// CHECK:      func.func @f(%a: i32) -> i32 {
// CHECK-NEXT:   %b = arith.addi %a, %a : i32
// CHECK-NEXT:   func.return %b : i32
// PASS: ptoc-opt: error: unknown pass 'pto-bufferise'; did you mean 'pto-bufferize'?
// SPEC: ptoc-opt: error: Error parsing pass pipeline specification:
// TARGET: ptoc-opt: error: argument --target: unknown target 'nosuch'
// PASS-NOT: Traceback
// SPEC-NOT: Traceback
