// The a2a3 dialect's verifier: set_flag/wait_flag join two different pipes.
// RUN: ptoc-opt %s --verify-diagnostics -o /dev/null
// RUN: not ptoc-opt %s 2>&1 | filecheck %s

func.func @bad() {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{set_flag needs two different pipes}}
  a2a3.set_flag V -> V id=%c0
  func.return
}
// CHECK: invalid.mlir:8:3: error: 'a2a3.set_flag' op set_flag needs two different pipes
// CHECK-NEXT: {{^}}  a2a3.set_flag V -> V id=%c0
// CHECK-NEXT: {{^  \^$}}
