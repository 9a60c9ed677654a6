"""What jax emits around a computation parses: Shardy meshes and sharding annotations,
jax's and mhlo's argument, result and module attributes, locations.

``data/jax_*.mlir`` are lowerings of tests/jax/programs.py, made once with the jax named
on their first line (``python -m tests.jax.programs`` writes them again); the inline
texts hold what a one-device ``jax.jit`` does not emit (multi-device donation, tokens,
shape polymorphism, the generic form of Shardy's ops).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import frontend
from frontend import CompileError
from frontend.ir.core import Module, walk
from tests.frontend import corpus

DATA = Path(__file__).resolve().parent / "data"
SAVED = sorted(DATA.glob("jax_*.mlir"))


def _parse(name: str) -> Module:
    return frontend.parse((DATA / f"jax_{name}.mlir").read_text(), filename=f"jax_{name}.mlir")


def _ops(module: Module) -> list[str]:
    return [op.name for f in module.funcs for op in walk(f.body)]


@pytest.mark.parametrize("path", SAVED, ids=[p.stem for p in SAVED])
def test_saved_lowerings_parse_and_print_back(path: Path) -> None:
    """Each parses and verifies; the printed text parses to the same IR and prints
    the same; no Shardy op is left in the IR."""
    assert path.read_text().startswith("// jax ")
    module = frontend.parse(path.read_text(), filename=path.name)
    printed = str(module)
    again = frontend.parse(printed, filename="printed.mlir")
    assert corpus.signature(again) == corpus.signature(module)
    assert str(again) == printed
    assert not any(name.startswith("sdy.") for name in _ops(module))


def test_meshes_keep_their_attributes() -> None:
    """``sdy.mesh`` with jax's ``{stablehlo.mesh = ...}`` dictionary: both kept, printed
    back with the mesh's location."""
    module = _parse("debug_print")
    (mesh,) = module.decls
    assert (mesh.name, mesh.body) == ("maximal_mesh_0", "<[], device_ids=[0]>")
    assert mesh.attrs.get("stablehlo.mesh").py["axes"] == []
    assert ("  sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]> {stablehlo.mesh = {axes = [], "
            "device_ids = dense<[0]> : tensor<1xi64>}} loc(#loc)\n") in str(module)


def test_host_callback_parses_with_its_python_origin() -> None:
    """jax.debug.print's host callback is an ordinary custom_call (lowered to a host
    plan ``Callback``, tests/lowering/test_callbacks.py), located through jax's named and
    call-site locations."""
    op = next(op for op in walk(_parse("debug_print").funcs[0].body)
              if op.name == "stablehlo.custom_call")
    assert str(op.attrs["call_target_name"]).strip('"') == "xla_ffi_python_cpu_callback"
    assert op.origin is not None and op.origin.file == "programs.py"


def test_sharding_annotations_are_the_identity() -> None:
    """sharding_constraint and sharding_group leave no op: uses read the operand."""
    f = _parse("sharding_constraint").funcs[0]
    ops = walk(f.body)
    multiply = next(op for op in ops if op.name == "stablehlo.multiply")
    add = next(op for op in ops if op.name == "stablehlo.add")
    assert add.operands[0] is multiply.results[0]
    f = _parse("shard_alike").funcs[0]
    assert f.body.block.ops[-1].operands[1] is f.args[1]
    f = _parse("typed_key").funcs[0]
    assert f.body.block.ops[-1].operands[:2] == [f.args[0], f.args[0]]


def test_annotation_inside_a_reduction_region() -> None:
    """shard_map over some mesh axes: a constraint inside the generic all_reduce's body."""
    module = _parse("shard_map_some_axes")
    reduce = next(op for op in walk(module.funcs[0].body) if op.name == "stablehlo.all_reduce")
    add, ret = reduce.regions[0].block.ops
    assert ret.operands == [add.results[0]]


ATTRIBUTES = """\
#loc1 = loc("/tmp/m.py":3:4 to :20)
#loc2 = loc("f"(#loc1))
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32,
    mhlo.frontend_attributes = {xla.sdy.meshes = "{}"}} {
  sdy.mesh @m = <["x"=1]>
  sdy.mesh @e = <[]> loc(#loc)
  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "b"},
      %arg1: !stablehlo.token {jax.token = true},
      %arg2: tensor<2x3xf32> {jax.buffer_donor = true, mhlo.is_same_data_across_replicas = true,
        mhlo.layout_mode = "default", mhlo.memory_kind = "device", mhlo.sharding = "{replicated}",
        sdy.sharding = #sdy.sharding<@m, [{"x", ?}p1, {}], replicated={}>} loc("x"),
      %arg3: tensor<2x3xf32> {jax.const = true, tf.aliasing_output = 1 : i32})
      -> (!stablehlo.token {jax.token = true},
          tensor<2x3xf32> {jax.result_info = "result[0]", mhlo.memory_kind = "device"}) {
    %0 = sdy.sharding_constraint %arg2 <@m, [{"x"}, {?}]> {mhlo.frontend_attributes = {a = "1"}}
        : tensor<2x3xf32> loc(fused["a", #loc2])
    %1 = sdy.reshard %0 <@m, [{}, {}]> : tensor<2x3xf32> loc(callsite(#loc2 at #loc1))
    %2 = sdy.propagation_barrier %1 allowed_direction=BACKWARD : tensor<2x3xf32>
    sdy.sharding_group %2 group_id=3 : tensor<2x3xf32>
    %3 = "sdy.sharding_constraint"(%2) <{sharding = #sdy.sharding<@m, [{}, {}]>}>
        : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("jit(f)/named"(#loc2))
    "sdy.sharding_group"(%3) <{group_id = 4 : i64}> : (tensor<2x3xf32>) -> ()
    %4 = stablehlo.custom_call @lapack_spotrf_ffi(%3) {mhlo.backend_config = {uplo = 76 : ui8},
        mhlo.frontend_attributes = {num_batch_dims = "0"},
        operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
        result_layouts = [dense<[0, 1]> : tensor<2xindex>],
        sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=2, j=3}, custom>}
        : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = stablehlo.add %4, %arg3 : tensor<2x3xf32> loc(#loc2)
    return %arg1, %5 : !stablehlo.token, tensor<2x3xf32>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
"""


def test_jax_mhlo_and_shardy_attributes_parse() -> None:
    """Argument, result and module attributes are kept as written; annotations in both
    op forms are the identity; fused and call-site locations resolve."""
    module = frontend.parse(ATTRIBUTES, filename="m.mlir")
    f = module.funcs[0]
    assert [op.name for op in f.body.block.ops] == ["stablehlo.custom_call", "stablehlo.add",
                                                     "func.return"]
    call = f.body.block.ops[0]
    assert call.operands == [f.args[2]]
    assert f.arg_attrs[2].get("jax.buffer_donor").py is True
    assert str(f.arg_attrs[2].get("sdy.sharding")) == '#sdy.sharding<@m, [{"x", ?}p1, {}], ' \
                                                      'replicated={}>'
    assert module.attrs["jax.uses_shape_polymorphism"].py is True
    assert [d.attrs for d in module.decls] == [None, None]
    assert f.body.block.ops[1].origin.file == "/tmp/m.py"
    again = frontend.parse(str(module), filename="printed.mlir")
    assert corpus.signature(again) == corpus.signature(module)


@pytest.mark.parametrize(("op", "where", "message"), [
    ("%1 = sdy.manual_computation(%arg0) in_shardings=[<@m, [{}]>] out_shardings=[<@m, [{}]>] "
     "manual_axes={} (%a: tensor<2xf32>) {\n    sdy.return %a : tensor<2xf32>\n  } : "
     "(tensor<2xf32>) -> tensor<2xf32>", "3:8",
     "'sdy.manual_computation' is not supported (of Shardy's ops only the sharding "
     "annotations are read, as the identity: sdy.propagation_barrier, sdy.reshard, "
     "sdy.sharding_constraint, sdy.sharding_group)"),
    ('%1 = "sdy.all_gather"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>', "3:8",
     "'sdy.all_gather' is not supported"),
    ("%1 = sdy.sharding_constraint %arg0 <@m, [{}]> : tensor<3xf32>", "3:51",
     "use of value '%arg0' expects different type than prior uses"),
    ("%1 = sdy.sharding_group %arg0 group_id=0 : tensor<2xf32>", "3:8",
     "'sdy.sharding_group' has 0 results but 1 names are bound"),
    ("%1 = sdy.sharding_group %arg0 group_id=[1] : tensor<2xf32>", "3:42",
     "expected a value for 'group_id', found '['"),
    ("%1 = sdy.sharding_constraint %arg0 : tensor<2xf32>", "3:38", "expected an attribute"),
    ('%1 = "sdy.reshard"(%arg0) <{sharding = #sdy.sharding<@m, [{}]>}> : (tensor<2xf32>) -> '
     "tensor<3xf32>", "3:8",
     "'sdy.reshard' must have the operand type as its result, got (tensor<2xf32>) -> "
     "tensor<3xf32>"),
    ('"sdy.sharding_group"(%arg0, %arg0) <{group_id = 1 : i64}> : '
     "(tensor<2xf32>, tensor<2xf32>) -> ()", "3:3",
     "'sdy.sharding_group' takes one operand and no regions"),
    ("%1 = sdy.mesh @n = <[]> : tensor<2xf32>", "3:8", "'sdy.mesh' is not supported"),
])
def test_shardy_errors_are_located(op: str, where: str, message: str) -> None:
    """Shardy ops that are not annotations, and malformed annotations, are located
    parse errors (``op`` is on line 3)."""
    text = (f"// {op[:20]}\nfunc.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {{\n  {op}\n"
            f"  return %arg0 : tensor<2xf32>\n}}\n")
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    assert str(err.value).splitlines()[0].startswith(f"m.mlir:{where}: error: {message}")
