"""Parse tensor-language text into the IR: :func:`parse_program`.

The grammar (``tensorlang.lark``) transcribes the reference's ABNF for an LALR(1)
parser with a contextual lexer.  Text is read by :mod:`~tensorlang.syntax.descent`, a
recursive-descent reader that builds lark's tree several times faster; where it gives
up, lark reads the text (and reports every syntax error).  Names are resolved with SSA
scoping and every result type is inferred (:mod:`tensorlang.ir.infer`); the program is
*not* verified (that is :func:`tensorlang.verify_program`).  Every value, instruction,
region and function carries a :class:`~tensorlang.diagnostics.Loc` quoting the source;
every mistake is a :class:`~tensorlang.diagnostics.CompileError`.

Readings of the reference (where its examples and its ABNF disagree):

- ``gemm.n.t %a, ...``: the comma the ABNF puts after the modifiers of ``gemm``,
  ``gemv`` and ``sum`` is optional; the printer omits it.
- ``subview %D[:, :, %0]``: a bare ``:`` takes the whole mode (``Slice(full=True)``).
- ``hadamard`` is accepted for ``hadamard_product``.
- ``constant 0.0 : f32`` is accepted besides the ABNF's ``constant 0.0 -> f32``
  (printed).
- Literal operands: wherever an instruction takes a scalar value, an integer, float,
  complex (``[re, im]``) or boolean literal may be written instead (``cmp.lt %0, 16 :
  i32``, ``yield 16 : i32``, ``load %A[5, %i]``, ``for %i = 0, 16``).  The literal gets
  the type the instruction gives that operand (the annotation after ``:``, the loop
  type, ``index`` for indices, ``i1`` for a condition, the element type for a stored
  value) and becomes a ``constant`` instruction inserted just before, located at the
  literal.  An integer literal stands for a float or complex value where one is needed.
- ``alloca -> memref<f32x16x8>`` without an address space allocates ``local`` memory.
- ``yield`` takes its ``:`` even without values (``yield :``).

Extensions:

- Loop-carried values for ``for``::

      %r0, %r1 = for %i = %lb, %ub [, %step] [: int-type]
                     init(%acc = %x0, %b = %y0) -> (f32, i32) {
        ...
        yield %acc2, %b2 : f32, i32
      }

  ``init(...)`` names the body's loop-carried arguments and their initial values
  (values or literals); ``-> (types)`` gives their types, which are also the types of
  the loop's results.  The body's region arguments are the loop variable followed by
  the carried values; its ``yield`` gives the values for the next iteration, and the
  last iteration's are the results.  Without ``init`` the loop has no results.
- ``inf``, ``-inf`` and ``nan`` are floating constants (as ``strtod`` reads them), so
  every double prints and parses back.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from lark import Lark, Tree
from lark.exceptions import UnexpectedInput

from tensorlang.diagnostics import Source
from tensorlang.ir.core import Program
from tensorlang.syntax.builder import Builder
from tensorlang.syntax.descent import NotRead, read_tree
from tensorlang.syntax.errors import convert
from tensorlang.syntax.instructions import BUILDERS


@cache
def _lark() -> Lark:
    grammar = files("tensorlang.syntax").joinpath("tensorlang.lark").read_text()
    # cache=True keeps the LALR tables on disk: building them costs ~0.5 s per process.
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                maybe_placeholders=True, cache=True)


def parse_program(text: str, filename: str = "<string>") -> Program:
    """Parse ``text`` (named ``filename`` in diagnostics) into an unverified Program.

    Raises :class:`~tensorlang.diagnostics.CompileError` for syntax errors, unknown
    names, redefinitions, type annotations that differ from an operand's type, and
    result types that cannot be inferred.
    """
    source = Source(filename, text)
    try:
        tree = read_tree(text)
    except NotRead:
        tree = _lark_tree(text, source)
    return Builder(source, BUILDERS).program(tree)


def _lark_tree(text: str, source: Source) -> Tree:
    """lark's parse tree of ``text``: the reference, and the diagnostics of every
    syntax error."""
    parser = _lark()
    try:
        return parser.parse(text)
    except UnexpectedInput as error:
        terminals = {t.name: t for t in parser.terminals}
        raise convert(error, source, terminals) from None
