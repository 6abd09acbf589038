// RUN: ptoc-opt --version | filecheck %s
// CHECK: ptoc-opt 0.1.0 (xdsl 0.74.0)
