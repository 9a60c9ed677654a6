// A test file for `tlc interpret`: each public function without arguments runs on the
// OpenCL device, and its check ops decide PASS or FAIL. Modules are split on `// -----`.

func.func @add_i32() {
  %0 = stablehlo.constant dense<[1, 2, -3]> : tensor<3xi32>
  %1 = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %2 = stablehlo.add %0, %1 : tensor<3xi32>
  check.expect_eq_const %2, dense<[11, 22, 27]> : tensor<3xi32>
  func.return
}

// -----

func.func @dot_f32() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  check.expect_almost_eq_const %c, dense<[-1.5, -2.5]> : tensor<2xf32>
  func.return
}

// -----

func.func @count_to_ten() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %ten = stablehlo.constant dense<10> : tensor<i64>
  %n = stablehlo.while(%i = %zero) : tensor<i64>
  cond {
    %lt = stablehlo.compare LT, %i, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %next : tensor<i64>
  }
  check.expect_eq_const %n, dense<10> : tensor<i64>
  func.return
}
