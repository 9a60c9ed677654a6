"""Rules added in the second pass: dynamic_gather, dynamic_conv, dot algorithms,
collectives, sort, reverse, rng_bit_generator, batch norm, gather/scatter batching,
dynamic_pad, send/recv/infeed and composite.  Each case: message, rule and line:col."""

from __future__ import annotations

import pytest

import frontend
from frontend import CompileError

GATHER_DN = ("#stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], "
             "start_index_map = [1, 0], index_vector_dim = 2>")


def _dyn_gather(sizes: str, result: str = "tensor<2x3x2x2xi64>", dn: str = GATHER_DN) -> str:
    return (
        "func.func @main(%a: tensor<3x4x2xi64>, %i: tensor<2x3x2xi64>) {\n"
        f"  %s = stablehlo.constant dense<{sizes}> : tensor<3xi64>\n"
        f'  %0 = "stablehlo.dynamic_gather"(%a, %i, %s) {{dimension_numbers = {dn}}} : '
        f"(tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<3xi64>) -> {result}\n"
        "  func.return\n}\n")


def _dyn_conv(padding: str, attrs: str = "window_strides = array<i64: 4, 4>, "
              "lhs_dilation = array<i64: 2, 2>",
              result: str = "tensor<1x2x2x1xi64>", pad_type: str = "tensor<2x2xi64>") -> str:
    return (
        "func.func @main(%l: tensor<1x4x4x1xi64>, %r: tensor<3x3x1x1xi64>) {\n"
        f"  %p = stablehlo.constant dense<{padding}> : {pad_type}\n"
        f'  %0 = "stablehlo.dynamic_conv"(%l, %r, %p) {{{attrs}, dimension_numbers = '
        "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : (tensor<1x4x4x1xi64>, "
        f"tensor<3x3x1x1xi64>, {pad_type}) -> {result}\n"
        "  func.return\n}\n")


def _op(line: str, sig: str, extra: str = "") -> str:
    """A function whose op ``line`` sits at 2:8."""
    return f"func.func @main({sig}) {{\n  %0 = {line}\n{extra}  func.return\n}}\n"


def _generic(name: str, attrs: str, ftype: str, sig: str, region: str = "") -> str:
    return _op(f'"stablehlo.{name}"(%a) {region}{{{attrs}}} : {ftype}', sig)


_ADD_REGION = ("({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
               "    %s = stablehlo.add %x, %y : tensor<f32>\n"
               "    stablehlo.return %s : tensor<f32>\n  }) ")
_SORT = ('"stablehlo.sort"(%a) ({{\n  ^bb0(%x: {arg}, %y: {arg}):\n'
         "    %c = stablehlo.compare LT, %x, %y : ({arg}, {arg}) -> tensor<i1>\n"
         "    stablehlo.return %c : tensor<i1>\n  }}) {{dimension = 0 : i64}} : "
         "(tensor<4xf32>) -> tensor<4xf32>")
_SCATTER = ('"stablehlo.scatter"(%a, %i, %u) ({{\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
            "    stablehlo.return %y : tensor<f32>\n  }}) {{scatter_dimension_numbers = "
            "#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [1], "
            "input_batching_dims = [0], scatter_indices_batching_dims = [{sbd}], "
            "scatter_dims_to_operand_dims = [1], index_vector_dim = 1>}} : "
            "(tensor<2x3x4xf32>, tensor<{idx}xi64>, tensor<2x4xf32>) -> tensor<2x3x4xf32>")

CASES = [
    ("dynamic_gather slice size type",
     _dyn_gather("[1, 2, 2]").replace("tensor<3xi64>", "tensor<2xi64>").replace(
         "dense<[1, 2, 2]>", "dense<[1, 2]>"),
     "3:8", "'stablehlo.dynamic_gather' (C11): slice_sizes has 2 entries for operand rank 3"),
    ("dynamic_gather collapsed size", _dyn_gather("[2, 2, 2]"),
     "3:8", "'stablehlo.dynamic_gather' (C8): collapsed dimension 0 must have slice size"),
    ("dynamic_gather slice bounds", _dyn_gather("[1, 5, 2]"),
     "3:8", "'stablehlo.dynamic_gather' (C12): slice_sizes [1, 5, 2] must lie within"),
    ("dynamic_gather result shape", _dyn_gather("[1, 2, 1]"),
     "3:8", "'stablehlo.dynamic_gather' (C13): result shape must be 2x3x2x1, got 2x3x2x2"),
    ("dynamic_gather element type", _dyn_gather("[1, 2, 2]", "tensor<2x3x2x2xi32>"),
     "3:8", "'stablehlo.dynamic_gather' (C14): result element type must be i64, got i32"),
    ("dynamic_gather start_index_map",
     _dyn_gather("[1, 2, 2]", dn=GATHER_DN.replace("[1, 0]", "[1, 1]")),
     "3:8", "'stablehlo.dynamic_gather' (C9): start_index_map and operand_batching_dims "
            "must be unique"),
    ("dynamic_conv padding shape", _dyn_conv("1", pad_type="tensor<3x2xi64>"),
     "3:8", "'stablehlo.dynamic_conv' (C4): padding must be a 2x2 integer tensor"),
    ("dynamic_conv strides", _dyn_conv("1", "window_strides = array<i64: 4>"),
     "3:8", "'stablehlo.dynamic_conv' (C2): window_strides must have 2 entries, got 1"),
    ("dynamic_conv result shape", _dyn_conv("3"),
     "3:8", "'stablehlo.dynamic_conv' (C25): result shape must be 1x3x3x1, got 1x2x2x1"),
    ("dynamic_conv precision",
     _dyn_conv("1", "window_strides = array<i64: 4, 4>, lhs_dilation = array<i64: 2, 2>, "
                    "precision_config = [#stablehlo<precision DEFAULT>]"),
     "3:8", "'stablehlo.dynamic_conv' (C24): precision_config must have 2 entries, got 1"),
    ("convolution precision",
     _op("stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         "window = {} {precision_config = [#stablehlo<precision DEFAULT>]} : "
         "(tensor<1x4x2xf32>, tensor<3x2x2xf32>) -> tensor<1x2x2xf32>",
         "%a: tensor<1x4x2xf32>, %b: tensor<3x2x2xf32>"),
     "2:8", "'stablehlo.convolution' (C24): precision_config must have 2 entries, got 1"),
    ("dot_general algorithm precision",
     _op("stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [HIGH, "
         "DEFAULT], algorithm = <lhs_precision_type = tf32, rhs_precision_type = tf32, "
         "accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
         "num_primitive_operations = 1, allow_imprecise_accumulation = false> : "
         "(tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>",
         "%a: tensor<2x3xf32>, %b: tensor<3x2xf32>"),
     "2:8", "'stablehlo.dot_general' (C21): precision_config must be DEFAULT"),
    ("dot_general algorithm counts",
     _op("stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], algorithm = <"
         "lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32, "
         "lhs_component_count = 0, rhs_component_count = 1, num_primitive_operations = 1, "
         "allow_imprecise_accumulation = false> : "
         "(tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>",
         "%a: tensor<2x3xf32>, %b: tensor<3x2xf32>"),
     "2:8", "'stablehlo.dot_general' (C22): lhs_component_count must be positive, got 0"),
    ("all_gather groups",
     _generic("all_gather", "all_gather_dim = 0 : i64, replica_groups = dense<[[0, 0]]> : "
              "tensor<1x2xi64>", "(tensor<2x4xf32>) -> tensor<4x4xf32>", "%a: tensor<2x4xf32>"),
     "2:8", "'stablehlo.all_gather' (C2): replica_groups must not repeat an id"),
    ("all_gather channel",
     _generic("all_gather", "all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : "
              "tensor<1x2xi64>, use_global_device_ids", "(tensor<2x4xf32>) -> "
              "tensor<4x4xf32>", "%a: tensor<2x4xf32>"),
     "2:8", "'stablehlo.all_gather' (C5): use_global_device_ids needs a channel_handle"),
    ("all_gather result shape",
     _generic("all_gather", "all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1]]> : "
              "tensor<1x2xi64>", "(tensor<2x4xf32>) -> tensor<4x4xf32>", "%a: tensor<2x4xf32>"),
     "2:8", "'stablehlo.all_gather' (C6): result shape must be 2x8, got 4x4"),
    ("all_reduce computation",
     _generic("all_reduce", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
              "(tensor<4xi32>) -> tensor<4xi32>", "%a: tensor<4xi32>", _ADD_REGION),
     "2:8", "'stablehlo.all_reduce' (C5): computation element type f32 is not promotable"),
    ("all_reduce result shape",
     _generic("all_reduce", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
              "(tensor<4xf32>) -> tensor<2xf32>", "%a: tensor<4xf32>", _ADD_REGION),
     "2:8", "'stablehlo.all_reduce' (C6): result shape 2 differs from operand shape 4"),
    ("reduce_scatter divisible",
     _generic("reduce_scatter", "scatter_dimension = 0 : i64, replica_groups = "
              "dense<[[0, 1]]> : tensor<1x2xi64>", "(tensor<5xf32>) -> tensor<2xf32>",
              "%a: tensor<5xf32>", _ADD_REGION),
     "2:8", "'stablehlo.reduce_scatter' (C1): dimension 0 of size 5 is not divisible"),
    ("reduce_scatter result shape",
     _generic("reduce_scatter", "scatter_dimension = 0 : i64, replica_groups = "
              "dense<[[0, 1]]> : tensor<1x2xi64>", "(tensor<4xf32>) -> tensor<4xf32>",
              "%a: tensor<4xf32>", _ADD_REGION),
     "2:8", "'stablehlo.reduce_scatter' (C8): result shape must be 2, got 4"),
    ("all_to_all split count",
     _generic("all_to_all", "split_dimension = 0 : i64, concat_dimension = 1 : i64, "
              "split_count = 2 : i64, replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>",
              "(tensor<4x4xf32>) -> tensor<2x8xf32>", "%a: tensor<4x4xf32>"),
     "2:8", "'stablehlo.all_to_all' (C8): replica groups have 3 members but split_count is 2"),
    ("all_to_all result shape",
     _generic("all_to_all", "split_dimension = 0 : i64, concat_dimension = 1 : i64, "
              "split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
              "(tensor<4x4xf32>) -> tensor<4x4xf32>", "%a: tensor<4x4xf32>"),
     "2:8", "'stablehlo.all_to_all' (C9): result shape must be 2x8, got 4x4"),
    ("collective_permute pairs",
     _generic("collective_permute", "source_target_pairs = dense<[[0, 1], [0, 2]]> : "
              "tensor<2x2xi64>", "(tensor<4xf32>) -> tensor<4xf32>", "%a: tensor<4xf32>"),
     "2:8", "'stablehlo.collective_permute' (C2): sources must be unique, got [0, 0]"),
    ("collective_broadcast type",
     _generic("collective_broadcast", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
              "(tensor<4xf32>) -> tensor<4xi32>", "%a: tensor<4xf32>"),
     "2:8", "'stablehlo.collective_broadcast' (C3): result type tensor<4xi32> must equal"),
    ("reverse type",
     _op("stablehlo.reverse %a, dims = [0] : (tensor<4xf32>) -> tensor<4xf16>",
         "%a: tensor<4xf32>"),
     "2:8", "'stablehlo.reverse' (C1): result type tensor<4xf16> must equal the operand type"),
    ("sort comparator arguments",
     _op(_SORT.format(arg="tensor<f16>"), "%a: tensor<4xf32>"),
     "2:8", "'stablehlo.sort' (C5): comparator must take (tensor<f32>, tensor<f32>)"),
    ("rng_bit_generator state size",
     "func.func @main(%a: tensor<3xui64>) {\n"
     "  %0:2 = stablehlo.rng_bit_generator %a, algorithm = THREE_FRY : (tensor<3xui64>) -> "
     "(tensor<3xui64>, tensor<4xui32>)\n  func.return\n}\n",
     "2:10", "'stablehlo.rng_bit_generator' (C2): THREE_FRY needs an initial_state of 2 "
             "elements, got 3"),
    ("batch_norm element types",
     _op('"stablehlo.batch_norm_inference"(%a, %s, %s, %s, %h) {epsilon = 0.1 : f32, '
         "feature_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, "
         "tensor<2xf32>, tensor<2xf16>) -> tensor<2x3xf32>",
         "%a: tensor<2x3xf32>, %s: tensor<2xf32>, %h: tensor<2xf16>"),
     "2:8", "'stablehlo.batch_norm_inference' (C2): operands and results must share"),
    ("gather batching sizes",
     _op('"stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = '
         "[1], collapsed_slice_dims = [1], operand_batching_dims = [0], "
         "start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, "
         "slice_sizes = array<i64: 1, 1, 4>} : (tensor<2x3x4xf32>, tensor<3x1xi64>) -> "
         "tensor<3x4xf32>", "%a: tensor<2x3x4xf32>, %i: tensor<3x1xi64>"),
     "2:8", "'stablehlo.gather' (C17): batching dimension sizes differ: operand[0] = 2, "
            "indices[0] = 3"),
    ("gather index_vector_dim batching",
     _op('"stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = '
         "[1], collapsed_slice_dims = [1], operand_batching_dims = [0], "
         "start_indices_batching_dims = [1], start_index_map = [1], index_vector_dim = 1>, "
         "slice_sizes = array<i64: 1, 1, 4>} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> "
         "tensor<2x4xf32>", "%a: tensor<2x3x4xf32>, %i: tensor<2x1xi64>"),
     "2:8", "'stablehlo.gather' (C15): index_vector_dim 1 must not be a batching dimension"),
    ("scatter batching sizes",
     _op(_SCATTER.format(sbd="0", idx="3x1"),
         "%a: tensor<2x3x4xf32>, %i: tensor<3x1xi64>, %u: tensor<2x4xf32>"),
     "2:8", "'stablehlo.scatter' (C18): batching dimension sizes differ: operand[0] = 2, "
            "indices[0] = 3"),
    ("scatter index_vector_dim batching",
     _op(_SCATTER.format(sbd="1", idx="2x1"),
         "%a: tensor<2x3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>"),
     "2:8", "'stablehlo.scatter' (C16): index_vector_dim 1 must not be a batching dimension"),
    ("dynamic_pad interior",
     "func.func @main(%a: tensor<4xf32>, %v: tensor<f32>) {\n"
     "  %z = stablehlo.constant dense<0> : tensor<1xi64>\n"
     "  %n = stablehlo.constant dense<-1> : tensor<1xi64>\n"
     "  %0 = stablehlo.dynamic_pad %a, %v, %z, %z, %n : (tensor<4xf32>, tensor<f32>, "
     "tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xf32>\n  func.return\n}\n",
     "4:8", "'stablehlo.dynamic_pad' (C3): interior_padding must be non-negative, got [-1]"),
    ("dynamic_pad result shape",
     "func.func @main(%a: tensor<4xf32>, %v: tensor<f32>) {\n"
     "  %z = stablehlo.constant dense<1> : tensor<1xi64>\n"
     "  %0 = stablehlo.dynamic_pad %a, %v, %z, %z, %z : (tensor<4xf32>, tensor<f32>, "
     "tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xf32>\n  func.return\n}\n",
     "3:8", "'stablehlo.dynamic_pad' (C4): result shape must be 9, got 4"),
    ("send channel type",
     _op('"stablehlo.send"(%a, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, '
         "type = 1>, is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> "
         "!stablehlo.token", "%a: tensor<2xf32>, %t: !stablehlo.token"),
     "2:8", "'stablehlo.send' (C1): channel type must be DEVICE_TO_HOST, got DEVICE_TO_DEVICE"),
    ("recv channel type",
     "func.func @main(%t: !stablehlo.token) {\n"
     '  %0:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, '
     "type = 2>} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)\n"
     "  func.return\n}\n",
     "2:10", "'stablehlo.recv' (C1): channel type must be DEVICE_TO_DEVICE, got DEVICE_TO_HOST"),
    ("infeed results",
     "func.func @main(%t: !stablehlo.token) {\n"
     '  %0:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, '
     "!stablehlo.token, !stablehlo.token)\n  func.return\n}\n",
     "2:10", "'stablehlo.infeed' (C2): results before the token must be tensors"),
    ("fft semantics",
     _op("stablehlo.fft %a, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> "
         "tensor<4xcomplex<f64>>", "%a: tensor<4xcomplex<f32>>"),
     "2:8", "'stablehlo.fft' (C2): operand complex<f32> and result complex<f64> must have"),
    ("fft length",
     _op("stablehlo.fft %a, type = RFFT, length = [8] : (tensor<4xf32>) -> "
         "tensor<5xcomplex<f32>>", "%a: tensor<4xf32>"),
     "2:8", "'stablehlo.fft' (C4): the trailing dimensions of tensor<4xf32> must be "
            "fft_length [8]"),
    ("fft rfft shape",
     _op("stablehlo.fft %a, type = RFFT, length = [8] : (tensor<8xf32>) -> "
         "tensor<8xcomplex<f32>>", "%a: tensor<8xf32>"),
     "2:8", "'stablehlo.fft' (C5): RFFT needs last dimension 5 on the complex side, got 8"),
    ("reduce result element",
     "func.func @main(%a: tensor<2x3xf32>) {\n"
     "  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
     '  %0 = "stablehlo.reduce"(%a, %c) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
     "    stablehlo.return %x : tensor<f32>\n  }) {dimensions = array<i64: 1>} : "
     "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf16>\n  func.return\n}\n",
     "3:8", "'stablehlo.reduce' (C8): result element type must be f32, got f16"),
    ("bitcast_convert complex",
     _op("stablehlo.bitcast_convert %a : (tensor<2xcomplex<f32>>) -> tensor<2xi64>",
         "%a: tensor<2xcomplex<f32>>"),
     "2:8", "'stablehlo.bitcast_convert' (C2): complex types convert only to complex types"),
    ("bitcast_convert leading dimensions",
     _op("stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<2x2xf16>",
         "%a: tensor<3xf32>"),
     "2:8", "'stablehlo.bitcast_convert' (C1): bitcast from tensor<3xf32> to "
            "tensor<2x2xf16> needs the same leading dimensions"),
    ("batch_norm_training batch_mean",
     "func.func @main(%a: tensor<2x3xf32>, %s: tensor<2xf32>) {\n"
     '  %0:3 = "stablehlo.batch_norm_training"(%a, %s, %s) {epsilon = 0.1 : f32, '
     "feature_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> "
     "(tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>)\n  func.return\n}\n",
     "2:10", "'stablehlo.batch_norm_training' (C5): batch_mean must be a 1-D tensor of "
             "size 2, got tensor<3xf32>"),
    ("batch_norm_grad grad_output",
     "func.func @main(%a: tensor<2x3xf32>, %s: tensor<2xf32>, %g: tensor<3x2xf32>) {\n"
     '  %0:3 = "stablehlo.batch_norm_grad"(%a, %s, %s, %s, %g) {epsilon = 0.1 : f32, '
     "feature_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, "
     "tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>)\n"
     "  func.return\n}\n",
     "2:10", "'stablehlo.batch_norm_grad' (C3): tensor<3x2xf32> must have the operand type"),
    ("complex result shape",
     _op("stablehlo.complex %a, %a : (tensor<2xf32>, tensor<2xf32>) -> "
         "tensor<3xcomplex<f32>>", "%a: tensor<2xf32>"),
     "2:8", "'stablehlo.complex' (C2): operand shape 2 does not match result shape 3"),
    ("composite name",
     "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  func.return %a : tensor<f32>\n}\n"
     "func.func @main(%a: tensor<f32>) {\n"
     '  %0 = stablehlo.composite "plain" %a {decomposition = @f} : (tensor<f32>) -> '
     "tensor<f32>\n  func.return\n}\n",
     "5:8", "'stablehlo.composite' (C1): name must be namespaced like 'dialect.op', got "
            "'plain'"),
]

VALID = [
    _dyn_gather("[1, 2, 2]"),
    _op("stablehlo.fft %a, type = RFFT, length = [8] : (tensor<2x8xf32>) -> "
        "tensor<2x5xcomplex<f32>>", "%a: tensor<2x8xf32>"),
    _op("stablehlo.fft %a, type = IRFFT, length = [8] : (tensor<2x5xcomplex<f32>>) -> "
        "tensor<2x8xf32>", "%a: tensor<2x5xcomplex<f32>>"),
    _dyn_conv("1"),
    _op("stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<3x2xf16>",
        "%a: tensor<3xf32>"),
    "func.func @main(%a: tensor<2x3xf32>, %s: tensor<2xf32>, %g: tensor<2x3xf32>) {\n"
    '  %0:3 = "stablehlo.batch_norm_grad"(%a, %s, %s, %s, %g) {epsilon = 0.1 : f32, '
    "feature_index = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, "
    "tensor<2xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>)\n"
    "  func.return\n}\n",
    _op(_SORT.format(arg="tensor<f32>"), "%a: tensor<4xf32>"),
    _generic("all_gather", "all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : "
             "tensor<1x2xi64>", "(tensor<2x4xf32>) -> tensor<4x4xf32>", "%a: tensor<2x4xf32>"),
    _generic("reduce_scatter", "scatter_dimension = 0 : i64, replica_groups = "
             "dense<[[0, 1]]> : tensor<1x2xi64>", "(tensor<4xf32>) -> tensor<2xf32>",
             "%a: tensor<4xf32>", _ADD_REGION),
    _generic("all_to_all", "split_dimension = 0 : i64, concat_dimension = 1 : i64, "
             "split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
             "(tensor<4x4xf32>) -> tensor<2x8xf32>", "%a: tensor<4x4xf32>"),
    _op(_SCATTER.format(sbd="0", idx="2x1"),
        "%a: tensor<2x3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>"),
]


@pytest.mark.parametrize(("rule", "text", "where", "message"), CASES,
                         ids=[c[0] for c in CASES])
def test_constraint_is_reported(rule: str, text: str, where: str, message: str) -> None:
    """The broken program is rejected at the op with the rule's message."""
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    rendered = str(err.value)
    first = rendered.splitlines()[0]
    assert first.startswith(f"m.mlir:{where}: error: "), first
    assert message in first, first
    assert "^" in rendered


@pytest.mark.parametrize("text", VALID)
def test_valid_programs_pass(text: str) -> None:
    """The corrected programs verify and round-trip (so the cases above can fail)."""
    module = frontend.parse(text, "m.mlir")
    assert str(frontend.parse(str(module), "m.mlir")) == str(module)
