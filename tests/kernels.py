"""Small tensor-language kernels several test files compile (one text each, here)."""

AXPY = """
func @axpy(%a: f32, %x: memref<f32x?>, %y: memref<f32x?>) work_group_size(16, 1) {
  %zero = constant 0 : index
  %n = size %x[0] : memref<f32x?>
  foreach %i = %zero, %n {
    %u = load %x[%i] : memref<f32x?>
    %v = load %y[%i] : memref<f32x?>
    %w = arith.mul %a, %u : f32
    %s = arith.add %w, %v : f32
    store %s, %y[%i] : memref<f32x?>
  }
}
"""
"""``y := a * x + y`` over dynamic vectors, one element per work-item of a 16-wide group."""

TINY_GEMM = """
func @tiny(%A: memref<f32x12x3x?>, %B: memref<f32x3x5x?>, %C: memref<f32x12x5x?>) {
  %g = group_id
  %one = constant 1.0 : f32
  %a = subview %A[:, :, %g] : memref<f32x12x3x?>
  %b = subview %B[:, :, %g] : memref<f32x3x5x?>
  %c = subview %C[:, :, %g] : memref<f32x12x5x?>
  gemm.n.n %one, %a, %b, %one, %c : f32, memref<f32x12x3>, memref<f32x3x5>, f32, memref<f32x12x5>
}
"""
"""A batch of 12x3 by 3x5 products accumulated into C, one per work-group (``tlc tune``
has a contraction to time)."""
