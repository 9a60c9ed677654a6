"""chlo.scan with any body: the loop CHLO's own decomposition describes, lowered as a
``stablehlo.while`` (the "Loops" section of docs/lowering.md: one kernel, a counted host
loop or a host loop, as the while's lowering decides).

The loop is written as StableHLO text and parsed: ``%i`` from 0 to n, each iteration
slicing the inputs at ``i`` (``n - 1 - i`` with ``is_reverse``) with ``dynamic_slice``
and a reshape, calling the scan's body (its region becomes the body of a declared
function, inlined by :func:`frontend.lower.core.inline.inline_calls`; values it reads from
outside stay the outer ones) and writing the outputs' slices with
``dynamic_update_slice``; the outputs start as zeros.  Used by
:mod:`frontend.lower.families.control.scan` when the body is not elementwise over the slice.
"""

from __future__ import annotations

import frontend
from frontend.ir.core import Op
from frontend.ir.types import ComplexType, FloatType, IntegerType, TensorType
from frontend.lower.core import types
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.inline import inline_calls

_BODY = "__tlc_scan_body"
_LOOP = "__tlc_scan_loop"
_I64 = "tensor<i64>"


def lower_scan_loop(lw: FuncLowering, op: Op) -> None:
    """Bind ``op``'s results to those of the loop (see the module docstring)."""
    module = frontend.parse(_loop_text(op), filename="<chlo.scan loop>")
    body = module.func(_BODY)
    assert body is not None
    body.body = op.regions[0]
    loop = module.func(_LOOP)
    assert loop is not None
    region = inline_calls(module, loop)
    lw.count_uses(region)
    for a, v in zip(region.block.args, op.operands, strict=True):
        lw.bind(a, lw.materialize(v))
    for r, v in zip(op.results, lw.lower_block(region.block), strict=True):
        lw.bind(r, lw.materialize(v))


def _zero(t: TensorType) -> str:
    """A splat zero of ``t`` as a dense literal."""
    e = t.element
    if isinstance(e, IntegerType) and e.width == 1:
        value = "false"
    elif isinstance(e, ComplexType):
        value = "(0.0, 0.0)"
    elif isinstance(e, FloatType):
        value = "0.0"
    else:
        value = "0"
    return f"stablehlo.constant dense<{value}> : {t}"


def _stacked(t: TensorType, dim: int, size: int | None) -> TensorType:
    """``t`` with a dimension ``size`` (``None``: removed) at ``dim``."""
    shape = t.shape[:dim] + ((size,) if size is not None else ()) + t.shape[dim + 1:]
    return TensorType(shape, t.element)


def _loop_text(op: Op) -> str:
    """The module: the loop function over the scan's operands and the body declared."""
    dim = op.int_attr("dimension", 0)
    inputs, inits = op.operand_group("inputs"), op.operand_group("inits")
    in_t = [types.tensor_of(v.type, op.loc) for v in inputs]
    init_t = [str(v.type) for v in inits]
    n_out = len(op.results) - len(inits)
    out_t = [types.tensor_of(r.type, op.loc) for r in op.results[:n_out]]
    ret_t = [str(v.type) for v in op.regions[0].block.ops[-1].operands]
    length = in_t[0].static_shape[dim] if in_t else 0
    slices = [str(_stacked(t, dim, None)) for t in in_t]
    carried = [_I64, *init_t, *map(str, out_t)]
    names = ["%i", *(f"%c{j}" for j in range(len(inits))), *(f"%o{j}" for j in range(n_out))]
    block = ", ".join(f"{n}: {t}" for n, t in zip(names, carried, strict=True))
    params = [f"%x{j}: {t}" for j, t in enumerate(in_t)] + \
        [f"%init{j}: {t}" for j, t in enumerate(init_t)]
    lines = [f"  %zero = stablehlo.constant dense<0> : {_I64}",
             f"  %one = stablehlo.constant dense<1> : {_I64}",
             f"  %n = stablehlo.constant dense<{length}> : {_I64}",
             f"  %last = stablehlo.constant dense<{length - 1}> : {_I64}"]
    lines += [f"  %oz{j} = {_zero(t)}" for j, t in enumerate(out_t)]
    starts = ["%zero", *(f"%init{j}" for j in range(len(inits))),
              *(f"%oz{j}" for j in range(n_out))]
    head = f'  %w:{len(carried)} = "stablehlo.while"({", ".join(starts)}) ({{'
    cond = [f"  ^bb0({block}):",
            f'    %p = "stablehlo.compare"(%i, %n) {{comparison_direction = '
            f'#stablehlo<comparison_direction LT>}} : ({_I64}, {_I64}) -> tensor<i1>',
            '    "stablehlo.return"(%p) : (tensor<i1>) -> ()', "  }, {"]
    body = [f"  ^bb0({block}):"]
    body += ['    %k = "stablehlo.subtract"(%last, %i) : (tensor<i64>, tensor<i64>) -> '
             'tensor<i64>' if op.attr("is_reverse", False) else
             '    %k = "stablehlo.add"(%i, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i64>']
    for j, t in enumerate(in_t):
        idx = ", ".join("%k" if d == dim else "%zero" for d in range(len(t.shape)))
        one = _stacked(t, dim, 1)
        sizes = ", ".join(str(d) for d in one.shape)
        body += [f'    %s{j} = "stablehlo.dynamic_slice"(%x{j}, {idx}) {{slice_sizes = '
                 f'array<i64: {sizes}>}} : ({t}, {", ".join([_I64] * len(t.shape))}) -> '
                 f'{one}',
                 f'    %a{j} = "stablehlo.reshape"(%s{j}) : ({one}) -> {slices[j]}']
    args = [f"%a{j}" for j in range(len(in_t))] + [f"%c{j}" for j in range(len(inits))]
    rets = [f"%b#{j}" for j in range(len(ret_t))] if len(ret_t) > 1 else ["%b"]
    bind = f"%b:{len(ret_t)}" if len(ret_t) > 1 else "%b"
    body.append(f"    {bind} = func.call @{_BODY}({', '.join(args)}) : "
                f"({', '.join([*slices, *init_t])}) -> ({', '.join(ret_t)})")
    for j, t in enumerate(out_t):
        one = _stacked(t, dim, 1)
        idx = ", ".join("%k" if d == dim else "%zero" for d in range(len(t.shape)))
        body += [f'    %u{j} = "stablehlo.reshape"({rets[j]}) : ({ret_t[j]}) -> {one}',
                 f'    %v{j} = "stablehlo.dynamic_update_slice"(%o{j}, %u{j}, {idx}) : '
                 f'({t}, {one}, {", ".join([_I64] * len(t.shape))}) -> {t}']
    body.append('    %i1 = "stablehlo.add"(%i, %one) : (tensor<i64>, tensor<i64>) -> '
                'tensor<i64>')
    new = ["%i1", *rets[n_out:], *(f"%v{j}" for j in range(n_out))]
    body += [f'    "stablehlo.return"({", ".join(new)}) : ({", ".join(carried)}) -> ()',
             f"  }}) : ({', '.join(carried)}) -> ({', '.join(carried)})"]
    results = [f"%w#{1 + len(inits) + j}" for j in range(n_out)] + \
        [f"%w#{1 + j}" for j in range(len(inits))]
    result_t = [*map(str, out_t), *init_t]
    lines += [head, *cond, *body,
              f"  func.return {', '.join(results)} : {', '.join(result_t)}"]
    decl = f"func.func private @{_BODY}({', '.join([*slices, *init_t])}) -> " \
        f"({', '.join(ret_t)})"
    return (f"{decl}\nfunc.func @{_LOOP}({', '.join(params)}) -> ({', '.join(result_t)}) "
            "{\n" + "\n".join(lines) + "\n}\n")
