// The a2a3 dialect's verifier: set_flag/wait_flag join two different pipes.
// RUN: not ptoc-opt %s 2>&1 | filecheck %s

func.func @bad() {
  %c0 = arith.constant 0 : index
  a2a3.set_flag V -> V id=%c0
  func.return
}
// CHECK: set_flag needs two different pipes

