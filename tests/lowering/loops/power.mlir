module @jit_power attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64x64xf32>, %arg1: tensor<64xf32>) -> (tensor<64xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c, %iterArg_1 = %arg1) : tensor<64x64xf32>, tensor<i32>, tensor<64xf32>
    cond {
      %c_2 = stablehlo.constant dense<50> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_0, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @closed_call(%iterArg, %iterArg_1) : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg_0, %c_2 : tensor<i32>
      stablehlo.return %iterArg, %2, %1 : tensor<64x64xf32>, tensor<i32>, tensor<64xf32>
    }
    return %0#2 : tensor<64xf32>
  }
  func.func private @closed_call(%arg0: tensor<64x64xf32>, %arg1: tensor<64xf32>) -> tensor<64xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %1 = call @norm(%0) : (tensor<64xf32>) -> tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %3 = stablehlo.divide %0, %2 : tensor<64xf32>
    return %3 : tensor<64xf32>
  }
  func.func private @norm(%arg0: tensor<64xf32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<64xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.sqrt %1 : tensor<f32>
    return %2 : tensor<f32>
  }
}
