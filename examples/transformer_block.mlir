module @jit_transformer_block attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x16x32xf32>, %arg1: tensor<32x32xf32>, %arg2: tensor<32x32xf32>, %arg3: tensor<32x32xf32>, %arg4: tensor<32x32xf32>, %arg5: tensor<32xf32>, %arg6: tensor<32x64xf32>, %arg7: tensor<64x32xf32>, %arg8: tensor<32xf32>) -> (tensor<2x16x32xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<2x16x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %4 = stablehlo.divide %2, %3 : tensor<2x16x1xf32>
    %cst_1 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %6 = stablehlo.add %4, %5 : tensor<2x16x1xf32>
    %7 = stablehlo.rsqrt %6 : tensor<2x16x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %9 = stablehlo.multiply %arg0, %8 : tensor<2x16x32xf32>
    %10 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %12 = stablehlo.multiply %9, %11 : tensor<2x16x32xf32>
    %13 = stablehlo.dot_general %12, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %14 = stablehlo.dot_general %12, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %15 = stablehlo.dot_general %12, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %16 = stablehlo.dot_general %13, %14, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x16xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %17 = stablehlo.sqrt %cst_2 : tensor<f32>
    %18 = stablehlo.convert %17 : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [] : (tensor<f32>) -> tensor<2x16x16xf32>
    %20 = stablehlo.divide %16, %19 : tensor<2x16x16xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %21 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<16x16xi1>
    %22 = call @tril(%21) : (tensor<16x16xi1>) -> tensor<16x16xi1>
    %cst_3 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %23 = call @_where(%22, %20, %cst_3) : (tensor<16x16xi1>, tensor<2x16x16xf32>, tensor<f32>) -> tensor<2x16x16xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %24 = stablehlo.reduce(%23 init: %cst_4) applies stablehlo.maximum across dimensions = [2] : (tensor<2x16x16xf32>, tensor<f32>) -> tensor<2x16xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
    %26 = stablehlo.maximum %25, %24 : tensor<2x16xf32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x16xf32>
    %29 = stablehlo.subtract %23, %28 : tensor<2x16x16xf32>
    %30 = stablehlo.exponential %29 : tensor<2x16x16xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %31 = stablehlo.reduce(%30 init: %cst_6) applies stablehlo.add across dimensions = [2] : (tensor<2x16x16xf32>, tensor<f32>) -> tensor<2x16xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x16xf32>
    %34 = stablehlo.divide %30, %33 : tensor<2x16x16xf32>
    %35 = stablehlo.dot_general %34, %15, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    %36 = stablehlo.dot_general %35, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %37 = stablehlo.add %arg0, %36 : tensor<2x16x32xf32>
    %38 = stablehlo.multiply %37, %37 : tensor<2x16x32xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.reduce(%38 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %40 = stablehlo.broadcast_in_dim %39, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_8 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %42 = stablehlo.divide %40, %41 : tensor<2x16x1xf32>
    %cst_9 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %44 = stablehlo.add %42, %43 : tensor<2x16x1xf32>
    %45 = stablehlo.rsqrt %44 : tensor<2x16x1xf32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %47 = stablehlo.multiply %37, %46 : tensor<2x16x32xf32>
    %48 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %49 = stablehlo.broadcast_in_dim %48, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %50 = stablehlo.multiply %47, %49 : tensor<2x16x32xf32>
    %51 = stablehlo.dot_general %50, %arg6, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %52 = stablehlo.multiply %51, %51 : tensor<2x16x64xf32>
    %53 = stablehlo.multiply %52, %51 : tensor<2x16x64xf32>
    %cst_10 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<2x16x64xf32>
    %55 = stablehlo.multiply %54, %53 : tensor<2x16x64xf32>
    %56 = stablehlo.add %51, %55 : tensor<2x16x64xf32>
    %cst_11 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<2x16x64xf32>
    %58 = stablehlo.multiply %57, %56 : tensor<2x16x64xf32>
    %59 = stablehlo.tanh %58 : tensor<2x16x64xf32>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x16x64xf32>
    %61 = stablehlo.add %60, %59 : tensor<2x16x64xf32>
    %cst_13 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %62 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<2x16x64xf32>
    %63 = stablehlo.multiply %62, %61 : tensor<2x16x64xf32>
    %64 = stablehlo.multiply %51, %63 : tensor<2x16x64xf32>
    %65 = stablehlo.dot_general %64, %arg7, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32>
    %66 = stablehlo.add %37, %65 : tensor<2x16x32xf32>
    return %66 : tensor<2x16x32xf32>
  }
  func.func private @tril(%arg0: tensor<16x16xi1>) -> tensor<16x16xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x16xi32>
    %2 = stablehlo.add %0, %1 : tensor<16x16xi32>
    %3 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<16x16xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<16x16xi1>, tensor<16x16xi1>
    return %6 : tensor<16x16xi1>
  }
  func.func private @_where(%arg0: tensor<16x16xi1>, %arg1: tensor<2x16x16xf32>, %arg2: tensor<f32>) -> tensor<2x16x16xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<16x16xi1>) -> tensor<2x16x16xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x16x16xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x16x16xi1>, tensor<2x16x16xf32>
    return %3 : tensor<2x16x16xf32>
  }
}
