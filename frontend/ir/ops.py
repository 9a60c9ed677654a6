"""The op table: one declarative entry per StableHLO, CHLO, func and check operation.

Each :class:`OpDef` names the op's operands (``*`` marks a variadic group), its
attributes, regions and result count, and picks a pretty syntax.  The parser, the
printer, the verifier and :meth:`Op.operand` all derive from this table.

Pretty syntaxes:

* ``same`` – ``op %a, %b : T`` (or a function type when operand/result types differ)
* ``func`` / ``result`` / ``types`` – trailing function type, result types only, or a
  plain type list (``optimization_barrier``, ``return``)
* a format string with ``$operand`` / ``$attribute`` references and literal words,
  ``(...)?`` marking an optional group that is present iff its attribute is
* a name ending in ``!`` – a hand-written syntax in :mod:`frontend.syntax.custom`
* ``generic`` – printed in the generic form only
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

VARIADIC = -1


@dataclass(frozen=True)
class OpDef:
    """One operation: names of operands, attributes and regions, result count, syntax."""

    name: str
    operands: tuple[str, ...]
    attrs: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    results: int = 1
    syntax: str = "same"
    types: str = "same"

    @property
    def short(self) -> str:
        """The name without the dialect prefix."""
        return self.name.split(".", 1)[1]


# Attribute kinds for pretty syntax: how a bare value maps to an attribute.
ATTR_KINDS: dict[str, str] = {
    "broadcast_dimensions": "i64s", "permutation": "i64s", "dimensions": "i64s",
    "slice_sizes": "i64s", "fft_length": "i64s", "edge_padding_low": "i64s",
    "edge_padding_high": "i64s", "interior_padding": "i64s", "broadcast_sizes": "i64s",
    "start_indices": "i64s", "limit_indices": "i64s", "strides": "i64s",
    "known_expanding_dimensions": "i64s", "known_nonexpanding_dimensions": "i64s",
    "window_dimensions": "i64s", "window_strides": "i64s", "base_dilations": "i64s",
    "window_dilations": "i64s", "window_reversal": "i1s", "lhs_dilation": "i64s",
    "rhs_dilation": "i64s",
    "dimension": "i64", "iota_dimension": "i64", "exponent_bits": "i32",
    "mantissa_bits": "i32", "index": "i32", "k": "i64", "feature_group_count": "i64",
    "batch_group_count": "i64", "all_gather_dim": "i64", "split_dimension": "i64",
    "concat_dimension": "i64", "split_count": "i64", "scatter_dimension": "i64",
    "feature_index": "i64",
    "fft_type": "enum", "rng_algorithm": "enum", "rng_distribution": "enum",
    "comparison_direction": "enum", "compare_type": "enum", "lower": "bool",
    "precision_config": "precision",
}
ENUM_NAMES = {"compare_type": "comparison_type"}

_UNARY = ("abs cbrt ceil convert cosine count_leading_zeros exponential exponential_minus_one "
          "floor imag is_finite log log_plus_one logistic negate not popcnt real "
          "round_nearest_afz round_nearest_even rsqrt sign sine sqrt tan tanh").split()
_BINARY = ("add and atan2 complex divide maximum minimum multiply or power remainder "
           "shift_left shift_right_arithmetic shift_right_logical subtract xor").split()
_CHLO_UNARY = ("acos acosh asin asinh atan atanh bessel_i1e conj cosh digamma erf erf_inv "
               "erfc is_inf is_neg_inf is_pos_inf lgamma sinh tan square").split()
_CHLO_BINARY = ("next_after polygamma zeta broadcast_add broadcast_atan2 broadcast_divide "
                "broadcast_maximum broadcast_minimum broadcast_multiply broadcast_power "
                "broadcast_remainder broadcast_subtract broadcast_and broadcast_or "
                "broadcast_xor broadcast_complex broadcast_shift_left "
                "broadcast_shift_right_arithmetic broadcast_shift_right_logical").split()

_TABLE: list[OpDef] = [
    *(OpDef(f"stablehlo.{n}", ("operand",)) for n in _UNARY),
    *(OpDef(f"stablehlo.{n}", ("lhs", "rhs")) for n in _BINARY),
    *(OpDef(f"chlo.{n}", ("operand",), types="chlo") for n in _CHLO_UNARY),
    *(OpDef(f"chlo.{n}", ("lhs", "rhs"), ("broadcast_dimensions",),
            types="func" if n.startswith("broadcast_") else "chlo") for n in _CHLO_BINARY),
    OpDef("chlo.broadcast_compare", ("lhs", "rhs"),
          ("broadcast_dimensions", "comparison_direction", "compare_type"), types="func"),
    OpDef("chlo.broadcast_select", ("pred", "on_true", "on_false"), types="func"),
    OpDef("chlo.mulhi", ("lhs", "rhs"), types="chlo"),
    OpDef("chlo.ragged_dot", ("lhs", "rhs", "group_sizes"),
          ("ragged_dot_dimension_numbers", "precision_config"), syntax="generic"),
    OpDef("chlo.top_k", ("operand",), ("k",), results=2, syntax="top_k!"),
    OpDef("chlo.scan", ("inputs*", "inits*"), ("dimension", "is_reverse", "is_associative"),
          ("body",), VARIADIC, syntax="scan!"),
    OpDef("chlo.constant_like", ("operand",), ("value",), syntax="generic"),
    OpDef("chlo.constant", (), ("value",), syntax="generic"),
    OpDef("stablehlo.clamp", ("min", "operand", "max")),
    OpDef("stablehlo.select", ("pred", "on_true", "on_false"), types="select"),
    OpDef("stablehlo.bitcast_convert", ("operand",), types="func"),
    OpDef("stablehlo.reshape", ("operand",), types="func"),
    OpDef("stablehlo.dynamic_reshape", ("operand", "output_shape"), types="func"),
    OpDef("stablehlo.uniform_quantize", ("operand",), types="func"),
    OpDef("stablehlo.uniform_dequantize", ("operand",), types="func"),
    OpDef("stablehlo.dynamic_update_slice", ("operand", "update", "start_indices*"),
          types="func"),
    OpDef("stablehlo.real_dynamic_slice",
          ("operand", "start_indices", "limit_indices", "strides"), types="func"),
    OpDef("stablehlo.dynamic_pad",
          ("operand", "padding_value", "edge_padding_low", "edge_padding_high",
           "interior_padding"), types="func"),
    OpDef("stablehlo.constant", (), ("value",), syntax="constant!", types="result"),
    OpDef("stablehlo.iota", (), ("iota_dimension",), syntax="dim = $iota_dimension",
          types="result"),
    OpDef("stablehlo.dynamic_iota", ("output_shape",), ("iota_dimension",),
          syntax="$output_shape , dim = $iota_dimension", types="func"),
    OpDef("stablehlo.broadcast_in_dim", ("operand",), ("broadcast_dimensions",),
          syntax="$operand , dims = $broadcast_dimensions", types="func"),
    OpDef("stablehlo.dynamic_broadcast_in_dim", ("operand", "output_dimensions"),
          ("broadcast_dimensions", "known_expanding_dimensions",
           "known_nonexpanding_dimensions"),
          syntax="$operand , $output_dimensions , dims = $broadcast_dimensions",
          types="func"),
    OpDef("stablehlo.broadcast", ("operand",), ("broadcast_sizes",),
          syntax="$operand , sizes = $broadcast_sizes", types="func"),
    OpDef("stablehlo.transpose", ("operand",), ("permutation",),
          syntax="$operand , dims = $permutation", types="func"),
    OpDef("stablehlo.reverse", ("operand",), ("dimensions",),
          syntax="$operand , dims = $dimensions"),
    OpDef("stablehlo.concatenate", ("inputs*",), ("dimension",),
          syntax="$inputs , dim = $dimension", types="func"),
    OpDef("stablehlo.get_dimension_size", ("operand",), ("dimension",),
          syntax="$operand , dim = $dimension", types="func"),
    OpDef("stablehlo.dynamic_slice", ("operand", "start_indices*"), ("slice_sizes",),
          syntax="$operand , $start_indices , sizes = $slice_sizes", types="func"),
    OpDef("stablehlo.fft", ("operand",), ("fft_type", "fft_length"),
          syntax="$operand , type = $fft_type , length = $fft_length", types="func"),
    OpDef("stablehlo.pad", ("operand", "padding_value"),
          ("edge_padding_low", "edge_padding_high", "interior_padding"),
          syntax="$operand , $padding_value , low = $edge_padding_low , "
                 "high = $edge_padding_high , interior = $interior_padding", types="func"),
    OpDef("stablehlo.rng_bit_generator", ("initial_state",), ("rng_algorithm",), results=2,
          syntax="$initial_state , algorithm = $rng_algorithm", types="func"),
    OpDef("stablehlo.rng", ("a", "b", "shape"), ("rng_distribution",),
          syntax="$a , $b , $shape , distribution = $rng_distribution", types="func"),
    OpDef("stablehlo.cholesky", ("a",), ("lower",), syntax="$a ( , lower = $lower )?"),
    OpDef("stablehlo.dot", ("lhs", "rhs"), ("precision_config",),
          syntax="$lhs , $rhs ( , precision = $precision_config )?", types="func"),
    OpDef("stablehlo.reduce_precision", ("operand",), ("exponent_bits", "mantissa_bits"),
          syntax="reduce_precision!"),
    OpDef("stablehlo.compare", ("lhs", "rhs"), ("comparison_direction", "compare_type"),
          syntax="$comparison_direction , $lhs , $rhs ( , $compare_type )?", types="func"),
    OpDef("stablehlo.get_tuple_element", ("operand",), ("index",),
          syntax="$operand [ $index ]", types="func"),
    OpDef("stablehlo.tuple", ("val*",), syntax="$val", types="result"),
    OpDef("stablehlo.after_all", ("inputs*",), syntax="$inputs", types="result"),
    OpDef("stablehlo.create_token", (), syntax="", types="result"),
    OpDef("stablehlo.replica_id", (), syntax="", types="result"),
    OpDef("stablehlo.partition_id", (), syntax="", types="result"),
    OpDef("stablehlo.optimization_barrier", ("operand*",), results=VARIADIC, types="types"),
    OpDef("stablehlo.return", ("results*",), results=0, types="types"),
    OpDef("func.return", ("operands*",), results=0, types="types"),
    OpDef("func.call", ("operands*",), ("callee",), results=VARIADIC, syntax="call!"),
    OpDef("stablehlo.dot_general", ("lhs", "rhs"),
          ("dot_dimension_numbers", "precision_config", "algorithm"), syntax="dot_general!"),
    OpDef("stablehlo.convolution", ("lhs", "rhs"),
          ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal",
           "dimension_numbers", "feature_group_count", "batch_group_count",
           "precision_config"), syntax="convolution!"),
    OpDef("stablehlo.slice", ("operand",), ("start_indices", "limit_indices", "strides"),
          syntax="slice!"),
    OpDef("stablehlo.reduce", ("inputs*", "init_values*"), ("dimensions",), ("body",),
          VARIADIC, syntax="reduce!"),
    OpDef("stablehlo.while", ("operand*",), (), ("cond", "body"), VARIADIC, syntax="while!"),
    OpDef("stablehlo.composite", ("inputs*",),
          ("name", "composite_attributes", "decomposition", "version"), (), VARIADIC,
          syntax="composite!"),
    OpDef("stablehlo.custom_call", ("inputs*",),
          ("call_target_name", "has_side_effect", "backend_config", "api_version",
           "called_computations", "operand_layouts", "result_layouts",
           "output_operand_aliases"), (), VARIADIC, syntax="custom_call!"),
    OpDef("stablehlo.if", ("pred",), (), ("true_branch", "false_branch"), VARIADIC,
          syntax="generic"),
    OpDef("stablehlo.case", ("index",), (), ("branches*",), VARIADIC, syntax="generic"),
    OpDef("stablehlo.map", ("inputs*",), ("dimensions",), ("computation",),
          syntax="generic"),
    OpDef("stablehlo.sort", ("inputs*",), ("dimension", "is_stable"), ("comparator",),
          VARIADIC, syntax="generic"),
    OpDef("stablehlo.gather", ("operand", "start_indices"),
          ("dimension_numbers", "slice_sizes", "indices_are_sorted"), syntax="generic"),
    OpDef("stablehlo.dynamic_gather", ("operand", "start_indices", "slice_sizes"),
          ("dimension_numbers", "indices_are_sorted"), syntax="generic"),
    OpDef("stablehlo.scatter", ("inputs*", "scatter_indices", "updates*"),
          ("scatter_dimension_numbers", "indices_are_sorted", "unique_indices"),
          ("update_computation",), VARIADIC, syntax="generic"),
    OpDef("stablehlo.reduce_window", ("inputs*", "init_values*"),
          ("window_dimensions", "window_strides", "base_dilations", "window_dilations",
           "padding"), ("body",), VARIADIC, syntax="generic"),
    OpDef("stablehlo.select_and_scatter", ("operand", "source", "init_value"),
          ("window_dimensions", "window_strides", "padding"), ("select", "scatter"),
          syntax="generic"),
    OpDef("stablehlo.dynamic_conv", ("lhs", "rhs", "padding"),
          ("window_strides", "lhs_dilation", "rhs_dilation", "window_reversal",
           "dimension_numbers", "feature_group_count", "batch_group_count",
           "precision_config"), syntax="generic"),
    OpDef("stablehlo.triangular_solve", ("a", "b"),
          ("left_side", "lower", "unit_diagonal", "transpose_a"), syntax="generic"),
    OpDef("stablehlo.batch_norm_grad", ("operand", "scale", "mean", "variance", "grad_output"),
          ("epsilon", "feature_index"), (), 3, syntax="generic"),
    OpDef("stablehlo.batch_norm_inference", ("operand", "scale", "offset", "mean", "variance"),
          ("epsilon", "feature_index"), syntax="generic"),
    OpDef("stablehlo.batch_norm_training", ("operand", "scale", "offset"),
          ("epsilon", "feature_index"), (), 3, syntax="generic"),
    OpDef("stablehlo.all_gather", ("operands*",),
          ("all_gather_dim", "replica_groups", "channel_handle", "use_global_device_ids"),
          (), VARIADIC, syntax="generic"),
    OpDef("stablehlo.all_reduce", ("operands*",),
          ("replica_groups", "channel_handle", "use_global_device_ids"), ("computation",),
          VARIADIC, syntax="generic"),
    OpDef("stablehlo.collective_reduce", ("operands*",),
          ("replica_groups", "channel_handle", "use_global_device_ids"), ("computation",),
          VARIADIC, syntax="generic"),
    OpDef("stablehlo.reduce_scatter", ("operand",),
          ("scatter_dimension", "replica_groups", "channel_handle", "use_global_device_ids"),
          ("computation",), syntax="generic"),
    OpDef("stablehlo.all_to_all", ("operands*",),
          ("split_dimension", "concat_dimension", "split_count", "replica_groups",
           "channel_handle"), (), VARIADIC, syntax="generic"),
    OpDef("stablehlo.collective_permute", ("operand",),
          ("source_target_pairs", "channel_handle"), syntax="generic"),
    OpDef("stablehlo.collective_broadcast", ("operands*",),  # + a root index tensor last
          ("replica_groups", "channel_handle", "has_dynamic_root"), (), VARIADIC,
          syntax="generic"),
    OpDef("stablehlo.infeed", ("token",), ("infeed_config", "layout"), (), VARIADIC,
          syntax="generic"),
    OpDef("stablehlo.outfeed", ("inputs*", "token"), ("outfeed_config",), syntax="generic"),
    OpDef("stablehlo.send", ("inputs*", "token"),
          ("channel_handle", "is_host_transfer", "source_target_pairs"), syntax="generic"),
    OpDef("stablehlo.recv", ("token",),
          ("channel_handle", "is_host_transfer", "source_target_pairs"), (), VARIADIC,
          syntax="generic"),
    OpDef("check.expect_eq_const", ("actual",), ("expected",), results=0, syntax="check!"),
    OpDef("check.expect_almost_eq_const", ("actual",), ("expected", "tolerance"), results=0,
          syntax="check!"),
    OpDef("check.expect_eq", ("actual", "expected"), results=0, syntax="check!"),
    OpDef("check.expect_almost_eq", ("actual", "expected"), ("tolerance",), results=0,
          syntax="check!"),
    OpDef("check.expect_close", ("actual", "expected"),
          ("max_ulp_difference", "min_ulp_difference"), results=0, syntax="check!"),
    OpDef("check.expect_serialized_eq", ("actual",), ("probe_id", "iter"), results=0,
          syntax="check!"),
    # the reference interpreter's own ops (tlc interpret: backend_opencl/tools/interpret.py)
    OpDef("interpreter.print", ("operand",), results=0, types="types"),
    OpDef("interpreter.probe", ("operand",), ("probe_id",), syntax="probe!"),
    OpDef("interpreter.run_parallel", ("inputs*",), ("programs", "infeed"), (), VARIADIC,
          syntax="generic"),
]

OPS: dict[str, OpDef] = {d.name: d for d in _TABLE}

# Attributes without which an op is meaningless (beyond those its format string names).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "stablehlo.constant": ("value",), "stablehlo.reduce_precision": ("exponent_bits",
                                                                     "mantissa_bits"),
    "stablehlo.slice": ("start_indices", "limit_indices", "strides"),
    "stablehlo.dot_general": ("dot_dimension_numbers",),
    "stablehlo.convolution": ("dimension_numbers",), "stablehlo.reduce": ("dimensions",),
    "func.call": ("callee",), "stablehlo.composite": ("name", "decomposition"),
    "stablehlo.custom_call": ("call_target_name",), "chlo.top_k": ("k",),
    "chlo.scan": ("dimension",), "stablehlo.gather": ("dimension_numbers", "slice_sizes"),
    "stablehlo.dynamic_gather": ("dimension_numbers",),
    "stablehlo.scatter": ("scatter_dimension_numbers",),
    "stablehlo.reduce_window": ("window_dimensions",), "stablehlo.map": ("dimensions",),
    "stablehlo.dynamic_conv": ("dimension_numbers",),
    "stablehlo.batch_norm_grad": ("epsilon", "feature_index"),
    "stablehlo.batch_norm_inference": ("epsilon", "feature_index"),
    "stablehlo.batch_norm_training": ("epsilon", "feature_index"),
    "stablehlo.all_gather": ("all_gather_dim",),
    "stablehlo.all_to_all": ("split_dimension", "concat_dimension", "split_count"),
    "stablehlo.reduce_scatter": ("scatter_dimension",),
    "stablehlo.triangular_solve": ("left_side", "lower", "unit_diagonal", "transpose_a"),
}


def required_attrs(opdef: OpDef) -> tuple[str, ...]:
    """Attributes the op must carry: the format's non-optional ``$attr`` references plus
    the table of hand-written syntaxes."""
    names = {n.rstrip("*") for n in opdef.operands}
    fmt = opdef.syntax if not opdef.syntax.endswith("!") and opdef.syntax not in (
        "same", "generic") else ""
    toks, depth, out = fmt.split(), 0, []
    for t in toks:
        depth += t == "("
        depth -= t == ")?"
        if t.startswith("$") and depth == 0 and t[1:] not in names:
            out.append(t[1:])
    return tuple(out) + _REQUIRED.get(opdef.name, ())
ALIASES = {"return": "func.return", "call": "func.call"}


def operand_groups(name: str, operands: Sequence[T]) -> dict[str, list[T]]:
    """Map each table operand name of op ``name`` to its ``operands`` (variadics share the
    rest); empty for an op not in the table."""
    opdef = OPS.get(name)
    operands = list(operands)
    if opdef is None:
        return {}
    names = opdef.operands
    n_var = sum(n.endswith("*") for n in names)
    fixed = len(names) - n_var
    each = (len(operands) - fixed) // n_var if n_var else 0
    out: dict[str, list[T]] = {}
    pos = 0
    for n in names:
        take = each if n.endswith("*") else 1
        out[n.rstrip("*")] = operands[pos:pos + take]
        pos += take
    return out
