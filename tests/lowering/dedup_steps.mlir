// Four steps of an unrolled RNN cell, h' = tanh(h w + x): the steps' kernels are equal up
// to their buffers, so the program has one kernel, launched four times.
// RUN: tlc compile %s --emit tl | filecheck %s
// CHECK: func @k0_dot_tanh(
// CHECK-NOT: func @
func.func public @main(%h: tensor<8x16xf32>, %w: tensor<16x16xf32>, %x0: tensor<8x16xf32>,
                       %x1: tensor<8x16xf32>, %x2: tensor<8x16xf32>, %x3: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %d0 = stablehlo.dot_general %h, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a0 = stablehlo.add %d0, %x0 : tensor<8x16xf32>
  %h1 = stablehlo.tanh %a0 : tensor<8x16xf32>
  %d1 = stablehlo.dot_general %h1, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a1 = stablehlo.add %d1, %x1 : tensor<8x16xf32>
  %h2 = stablehlo.tanh %a1 : tensor<8x16xf32>
  %d2 = stablehlo.dot_general %h2, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a2 = stablehlo.add %d2, %x2 : tensor<8x16xf32>
  %h3 = stablehlo.tanh %a2 : tensor<8x16xf32>
  %d3 = stablehlo.dot_general %h3, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a3 = stablehlo.add %d3, %x3 : tensor<8x16xf32>
  %h4 = stablehlo.tanh %a3 : tensor<8x16xf32>
  return %h4, %h2 : tensor<8x16xf32>, tensor<8x16xf32>
}
