"""Textual syntax of the tensor language: lark grammar, parser and printer.

- ``tensorlang.lark``: the grammar (LALR(1), contextual lexer);
- :mod:`~tensorlang.syntax.parser`: ``parse_program(text, filename) -> Program``
  (names resolved, result types inferred, not verified); its docstring documents the
  readings of the reference and the extensions (loop-carried ``for`` values);
- :mod:`~tensorlang.syntax.printer`: ``print_program(program) -> str``, canonical text
  that parses back to the same IR.
"""
