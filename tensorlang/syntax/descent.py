"""A recursive-descent reader of tensor-language text: lark's parse tree, without lark.

The grammar (``tensorlang.lark``) and lark's LALR(1) parser stay the reference: the
language is defined there, and every syntax error is lark's.  This reader follows that
grammar rule by rule and builds the very tree lark builds (the same rules and tokens,
the ``None`` placeholders of absent optional parts, each token's and each rule's source
positions), so that :class:`~tensorlang.syntax.builder.Builder` cannot tell them apart.
It gives up (:class:`NotRead`) at anything the grammar does not allow; the parser then
asks lark, which reports the mistake (or reads what this reader missed).

Why a second reader: the lowered kernels of a StableHLO program are compiler-printed
text of ~100k tokens that lark reads at ~10 us a token, and lark's contextual lexer
compiles its scanners anew in every process (~0.17 s).  Here one regular expression of
the grammar's own terminals (read from the grammar file) matches each token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib.resources import files

from lark import Token, Tree
from lark.tree import Meta

MAX_REGION_DEPTH = 64
"""Deeper nesting is left to lark, which needs no Python stack for it (the builder then
rejects it)."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


Child = Tree | Token | None
"""A child of a parse tree: a subtree, a token, or None for an absent optional part."""


class NotRead(Exception):
    """The text is not one this reader takes (lark decides what it is)."""


@cache
def _terminals() -> dict[str, re.Pattern[str]]:
    """The grammar's named regular-expression terminals, compiled, by name."""
    grammar = files("tensorlang.syntax").joinpath("tensorlang.lark").read_text()
    found = re.findall(r"^([A-Z_]+): /(.*)/$", grammar, re.MULTILINE)
    return {name: re.compile(pattern) for name, pattern in found}


def read_tree(text: str) -> Tree:
    """The parse tree lark builds for ``text`` (the ``start`` rule); NotRead when this
    reader does not take the text."""
    try:
        return _Reader(text).start()
    except RecursionError:
        raise NotRead("nested too deep") from None


class _Reader:
    """One pass over ``text``: a method per grammar rule, each returning its subtree."""

    def __init__(self, text: str) -> None:
        terminals = _terminals()
        self.text = text
        self.line = 1
        self.line_start = 0  # offset of the current line
        self.end = (1, 1, 0)  # line, column and offset just past the last token taken
        self.depth = 0
        self.patterns = terminals
        self.skip_re = re.compile(rf"(?:{terminals['WS'].pattern}|"
                                  rf"{terminals['COMMENT'].pattern})*")
        self.pos = self.skip(0)  # the next token's offset: white space is passed eagerly

    # -- tokens ------------------------------------------------------------------------

    def skip(self, pos: int) -> int:
        """The offset past the white space and comments at ``pos`` (lines counted)."""
        text = self.text
        found = self.skip_re.match(text, pos)  # always matches, if only nothing
        end = found.end() if found else pos
        if end != pos:
            newlines = text.count("\n", pos, end)
            if newlines:
                self.line += newlines
                self.line_start = text.rfind("\n", pos, end) + 1
        return end

    def here(self) -> tuple[int, int, int]:
        """Line, column and offset of the next token (where a rule starts)."""
        return self.line, self.pos - self.line_start + 1, self.pos

    def take(self, length: int) -> int:
        """Take the next ``length`` characters as a token; its offset."""
        start = self.pos
        end = start + length
        self.end = (self.line, end - self.line_start + 1, end)
        self.pos = self.skip(end)
        return start

    def punct(self, symbol: str) -> None:
        """The anonymous terminal ``symbol`` (filtered from the tree)."""
        if not self.text.startswith(symbol, self.pos):
            raise NotRead(symbol)
        self.take(len(symbol))

    def accept(self, symbol: str) -> bool:
        """Take ``symbol`` if it comes next."""
        if self.text.startswith(symbol, self.pos):
            self.take(len(symbol))
            return True
        return False

    def peek(self, symbol: str) -> bool:
        """Whether ``symbol`` comes next."""
        return self.text.startswith(symbol, self.pos)

    def token(self, kind: str) -> Token:
        """The named terminal ``kind``."""
        match = self.patterns[kind].match(self.text, self.pos)
        if match is None:
            raise NotRead(kind)
        return self.new_token(kind, match.group())

    def new_token(self, kind: str, value: str) -> Token:
        """``value``, which comes next, as a token of ``kind``."""
        start = self.take(len(value))
        line, column, end = self.end
        return Token(kind, value, start, line, column - len(value), line, column, end)

    def comes(self, kind: str) -> bool:
        """Whether the named terminal ``kind`` comes next."""
        return self.patterns[kind].match(self.text, self.pos) is not None

    def word(self) -> str:
        """The word that comes next (not taken), or ``""``."""
        match = _WORD.match(self.text, self.pos)
        return "" if match is None else match.group()

    def keyword(self, word: str) -> None:
        """Take the keyword ``word`` (a filtered terminal)."""
        if self.word() != word:
            raise NotRead(word)
        self.take(len(word))

    def tree(self, data: str, children: Sequence[Child], start: tuple[int, int, int]) -> Tree:
        """A subtree spanning from ``start`` to the last token taken (no span if none was)."""
        meta = Meta()
        if self.end[2] > start[2]:
            meta.line, meta.column, meta.start_pos = start
            meta.end_line, meta.end_column, meta.end_pos = self.end
            meta.empty = False
        return Tree(data, list(children), meta)

    # -- program structure -------------------------------------------------------------

    def start(self) -> Tree:
        """``start: function*``."""
        start = self.here()
        functions = []
        while self.pos < len(self.text):
            functions.append(self.function())
        return self.tree("start", functions, start)

    def function(self) -> Tree:
        """``function: _FUNC GLOBAL_ID "(" [arg ("," arg)*] ")" func_attr* region``."""
        start = self.here()
        self.keyword("func")
        children: list[Child] = [self.token("GLOBAL_ID")]
        self.punct("(")
        children += self.separated(self.arg, ")")
        self.punct(")")
        while (word := self.word()) in ("work_group_size", "subgroup_size"):
            children.append(self.func_attr(word))
        children.append(self.region())
        return self.tree("function", children, start)

    def separated(self, item: Callable[[], Child], closing: str) -> list[Child]:
        """``[item ("," item)*]`` before ``closing``: the items, or ``[None]``."""
        return [None] if self.peek(closing) else self.items(item)

    def items(self, item: Callable[[], Child]) -> list[Child]:
        """``item ("," item)*``."""
        found = [item()]
        while self.accept(","):
            found.append(item())
        return found

    def local_ids(self) -> list[Child]:
        """``LOCAL_ID ("," LOCAL_ID)*``."""
        return self.items(lambda: self.token("LOCAL_ID"))

    def arg(self) -> Tree:
        """``arg: LOCAL_ID ":" type``."""
        start = self.here()
        name = self.token("LOCAL_ID")
        self.punct(":")
        return self.tree("arg", [name, self.type()], start)

    def func_attr(self, word: str) -> Tree:
        """``work_group_size(INT, INT)`` or ``subgroup_size(INT)``."""
        start = self.here()
        self.keyword(word)
        self.punct("(")
        values = [self.token("INT")]
        if word == "work_group_size":
            self.punct(",")
            values.append(self.token("INT"))
        self.punct(")")
        return self.tree(word, values, start)

    def region(self) -> Tree:
        """``region: "{" instruction* "}"``."""
        start = self.here()
        self.depth += 1
        if self.depth > MAX_REGION_DEPTH:
            raise NotRead("nested too deep")
        self.punct("{")
        instructions = []
        while not self.accept("}"):
            instructions.append(self.instruction())
        self.depth -= 1
        return self.tree("region", instructions, start)

    def instruction(self) -> Tree:
        """``instruction: [result_names "="] _body``."""
        start = self.here()
        names = None
        if self.peek("%"):
            names_start = self.here()
            names = self.tree("result_names", self.local_ids(), names_start)
            self.punct("=")
        rule = _INSTRUCTIONS.get(self.word())
        if rule is None:
            rule = _Reader.modded if self.comes("MODDED") else _Reader.nullary
        return self.tree("instruction", [names, rule(self)], start)

    # -- instructions ------------------------------------------------------------------

    def modded(self) -> Tree:
        """``modded: MODDED MOD* [mod_comma] operand_list ":" type_list``."""
        start = self.here()
        children: list[Child] = [self.token("MODDED")]
        while self.peek("."):
            children.append(self.token("MOD"))
        comma = None
        if self.peek(","):
            comma_start = self.here()
            comma = self.tree("mod_comma", [self.new_token("COMMA", ",")], comma_start)
        children += [comma, self.operand_list()]
        self.punct(":")
        children.append(self.type_list())
        return self.tree("modded", children, start)

    def nullary(self) -> Tree:
        """``nullary: NULLARY``."""
        start = self.here()
        return self.tree("nullary", [self.token("NULLARY")], start)

    def alloca(self) -> Tree:
        """``alloca: _ALLOCA "->" type``."""
        start = self.here()
        self.keyword("alloca")
        self.punct("->")
        return self.tree("alloca", [self.type()], start)

    def barrier(self) -> Tree:
        """``barrier: _BARRIER MOD*``."""
        start = self.here()
        self.keyword("barrier")
        mods = []
        while self.peek("."):
            mods.append(self.token("MOD"))
        return self.tree("barrier", mods, start)

    def cast(self) -> Tree:
        """``cast: _CAST operand ":" type "->" type`` (``bitcast`` alike)."""
        start = self.here()
        word = self.word()
        self.keyword(word)
        operand = self.operand()
        self.punct(":")
        from_type = self.type()
        self.punct("->")
        return self.tree(word, [operand, from_type, self.type()], start)

    def constant(self) -> Tree:
        """``constant: _CONSTANT literal ("->" | ":") type``."""
        start = self.here()
        self.keyword("constant")
        literal = self.literal()
        if not self.accept("->"):
            self.punct(":")
        return self.tree("constant", [literal, self.type()], start)

    def expand(self) -> Tree:
        """``expand: _EXPAND LOCAL_ID "[" INT "->" expand_dim ("x" expand_dim)+ "]" ":"
        type``."""
        start = self.here()
        self.keyword("expand")
        children: list[Child] = [self.token("LOCAL_ID")]
        self.punct("[")
        children.append(self.token("INT"))
        self.punct("->")
        children.append(self.int_or_id())
        self.punct("x")
        children.append(self.int_or_id())
        while self.accept("x"):
            children.append(self.int_or_id())
        self.punct("]")
        self.punct(":")
        children.append(self.type())
        return self.tree("expand", children, start)

    def fuse(self) -> Tree:
        """``fuse: _FUSE LOCAL_ID "[" INT "," INT "]" ":" type``."""
        return self.modes("fuse", 2)

    def foreach(self) -> Tree:
        """``foreach`` over one mode or (``foreach_nd``) over several."""
        start = self.here()
        self.keyword("foreach")
        if self.accept("("):
            vars_start = self.here()
            children: list[Child] = [self.tree("foreach_vars", self.local_ids(), vars_start)]
            self.punct(")")
            self.punct("=")
            self.punct("(")
            children.append(self.operand_list())
            self.punct(")")
            self.punct(",")
            self.punct("(")
            children.append(self.operand_list())
            self.punct(")")
            rule = "foreach_nd"
        else:
            children = [self.token("LOCAL_ID")]
            self.punct("=")
            children.append(self.operand())
            self.punct(",")
            children.append(self.operand())
            rule = "foreach"
        children += [self.annotation(), self.region()]
        return self.tree(rule, children, start)

    def for_loop(self) -> Tree:
        """``for_loop: _FOR LOCAL_ID "=" operand "," operand ["," operand] [":" type]
        [init] ["->" "(" result_types ")"] region``."""
        start = self.here()
        self.keyword("for")
        children: list[Child] = [self.token("LOCAL_ID")]
        self.punct("=")
        children.append(self.operand())
        self.punct(",")
        children.append(self.operand())
        children.append(self.operand() if self.accept(",") else None)
        children.append(self.annotation())
        children.append(self.init() if self.word() == "init" else None)
        children += [self.result_types(), self.region()]
        return self.tree("for_loop", children, start)

    def init(self) -> Tree:
        """``init: _INIT "(" [init_item ("," init_item)*] ")"``."""
        start = self.here()
        self.keyword("init")
        self.punct("(")
        items = self.separated(self.init_item, ")")
        self.punct(")")
        return self.tree("init", items, start)

    def init_item(self) -> Tree:
        """``init_item: LOCAL_ID "=" operand``."""
        start = self.here()
        name = self.token("LOCAL_ID")
        self.punct("=")
        return self.tree("init_item", [name, self.operand()], start)

    def if_inst(self) -> Tree:
        """``if_inst: _IF operand ["->" "(" result_types ")"] region [_ELSE region]``."""
        start = self.here()
        self.keyword("if")
        children = [self.operand(), self.result_types(), self.region()]
        if self.word() == "else":
            self.keyword("else")
            children.append(self.region())
        else:
            children.append(None)
        return self.tree("if_inst", children, start)

    def result_types(self) -> Tree | None:
        """``["->" "(" result_types ")"]``: ``result_types: [type ("," type)*]``."""
        if not self.accept("->"):
            return None
        self.punct("(")
        start = self.here()
        types = self.separated(self.type, ")")
        result = self.tree("result_types", types, start)
        self.punct(")")
        return result

    def load(self) -> Tree:
        """``load: _LOAD LOCAL_ID "[" [operand_list] "]" ":" type``."""
        start = self.here()
        self.keyword("load")
        children: list[Child] = [self.token("LOCAL_ID"), self.indices()]
        self.punct(":")
        children.append(self.type())
        return self.tree("load", children, start)

    def indices(self) -> Tree | None:
        """``"[" [operand_list] "]"``."""
        self.punct("[")
        if self.accept("]"):
            return None
        operands = self.operand_list()
        self.punct("]")
        return operands

    def lifetime_stop(self) -> Tree:
        """``lifetime_stop: _LIFETIME_STOP LOCAL_ID``."""
        start = self.here()
        self.keyword("lifetime_stop")
        return self.tree("lifetime_stop", [self.token("LOCAL_ID")], start)

    def parallel(self) -> Tree:
        """``parallel: _PARALLEL region``."""
        start = self.here()
        self.keyword("parallel")
        return self.tree("parallel", [self.region()], start)

    def size(self) -> Tree:
        """``size: _SIZE LOCAL_ID "[" INT "]" ":" type``."""
        return self.modes("size", 1)

    def modes(self, word: str, count: int) -> Tree:
        """``word LOCAL_ID "[" INT ("," INT)* "]" ":" type`` with ``count`` integers."""
        start = self.here()
        self.keyword(word)
        children: list[Child] = [self.token("LOCAL_ID")]
        self.punct("[")
        ints = self.items(lambda: self.token("INT"))
        if len(ints) != count:
            raise NotRead(word)
        self.punct("]")
        self.punct(":")
        children += [*ints, self.type()]
        return self.tree(word, children, start)

    def store(self) -> Tree:
        """``store: _STORE operand "," LOCAL_ID "[" [operand_list] "]" ":" type``."""
        start = self.here()
        self.keyword("store")
        children: list[Child] = [self.operand()]
        self.punct(",")
        children += [self.token("LOCAL_ID"), self.indices()]
        self.punct(":")
        children.append(self.type())
        return self.tree("store", children, start)

    def subview(self) -> Tree:
        """``subview: _SUBVIEW LOCAL_ID "[" [any_slice ("," any_slice)*] "]" ":" type``."""
        start = self.here()
        self.keyword("subview")
        children: list[Child] = [self.token("LOCAL_ID")]
        self.punct("[")
        children += self.separated(self.any_slice, "]")
        self.punct("]")
        self.punct(":")
        children.append(self.type())
        return self.tree("subview", children, start)

    def any_slice(self) -> Tree:
        """``full_slice: ":"`` or ``slice: slice_part [":" slice_part]``."""
        start = self.here()
        if self.accept(":"):
            return self.tree("full_slice", [], start)
        offset = self.int_or_id()
        size = self.int_or_id() if self.accept(":") else None
        return self.tree("slice", [offset, size], start)

    def yield_inst(self) -> Tree:
        """``yield_inst: _YIELD [operand_list] ":" [type_list]``."""
        start = self.here()
        self.keyword("yield")
        operands = None if self.peek(":") else self.operand_list()
        self.punct(":")
        types = self.type_list() if self.starts_type() else None
        return self.tree("yield_inst", [operands, types], start)

    def select(self) -> Tree:
        """``select: _SELECT operand "," operand "," operand ":" type``."""
        return self.listed("select", 3)

    def complex_(self) -> Tree:
        """``complex: _COMPLEX operand "," operand ":" type``."""
        return self.listed("complex", 2)

    def listed(self, word: str, count: int) -> Tree:
        """``word`` with ``count`` operands separated by commas, then ``":" type``."""
        start = self.here()
        self.keyword(word)
        children = [self.operand()]
        for _ in range(count - 1):
            self.punct(",")
            children.append(self.operand())
        self.punct(":")
        children.append(self.type())
        return self.tree(word, children, start)

    # -- operands and types ------------------------------------------------------------

    def operand_list(self) -> Tree:
        """``operand_list: operand ("," operand)*``."""
        start = self.here()
        return self.tree("operand_list", self.items(self.operand), start)

    def operand(self) -> Token | Tree:
        """``?operand: LOCAL_ID | literal``."""
        if self.peek("%"):
            return self.token("LOCAL_ID")
        return self.literal()

    def literal(self) -> Tree:
        """``literal: NUMBER | BOOL | "[" NUMBER "," NUMBER "]"``."""
        start = self.here()
        if self.accept("["):
            real = self.token("NUMBER")
            self.punct(",")
            parts = [real, self.token("NUMBER")]
            self.punct("]")
        elif self.word() in ("true", "false"):
            parts = [self.token("BOOL")]
        else:
            parts = [self.token("NUMBER")]
        return self.tree("literal", parts, start)

    def int_or_id(self) -> Token:
        """``INT | LOCAL_ID`` (``?expand_dim``, ``?slice_part``)."""
        return self.token("LOCAL_ID" if self.peek("%") else "INT")

    def annotation(self) -> Tree | None:
        """``[":" type]``."""
        return self.type() if self.accept(":") else None

    def type_list(self) -> Tree:
        """``type_list: type ("," type)*``."""
        start = self.here()
        return self.tree("type_list", self.items(self.type), start)

    def starts_type(self) -> bool:
        """Whether a type comes next."""
        return (self.comes("SCALAR") or self.text.startswith(("memref<", "group<"), self.pos)
                or self.word() == "void")

    def type(self) -> Tree:
        """``?type: scalar_type | memref_type | group_type | void_type``."""
        start = self.here()
        if self.text.startswith("memref<", start[2]):
            return self.memref_type()
        if self.text.startswith("group<", start[2]):
            self.take(len("group<"))
            children: list[Child] = [self.memref_type()]
            if self.accept(","):
                self.keyword("offset")
                self.punct(":")
                children.append(self.dim())
            else:
                children.append(None)
            self.punct(">")
            return self.tree("group_type", children, start)
        if self.word() == "void":
            self.keyword("void")
            return self.tree("void_type", [], start)
        return self.tree("scalar_type", [self.token("SCALAR")], start)

    def memref_type(self) -> Tree:
        """``memref_type: _MEMREF_LT SCALAR ("x" dim)* ["," strided] ["," ADDRSPACE]
        ">"``."""
        start = self.here()
        self.punct("memref<")
        children: list[Child] = [self.token("SCALAR")]
        while self.accept("x"):
            children.append(self.dim())
        strided = space = None
        if self.accept(","):
            if self.peek("strided<"):
                strided = self.strided()
                if self.accept(","):
                    space = self.token("ADDRSPACE")
            else:
                space = self.token("ADDRSPACE")
        self.punct(">")
        children += [strided, space]
        return self.tree("memref_type", children, start)

    def strided(self) -> Tree:
        """``strided: _STRIDED_LT [dim ("," dim)*] ">"``."""
        start = self.here()
        self.punct("strided<")
        dims = self.separated(self.dim, ">")
        self.punct(">")
        return self.tree("strided", dims, start)

    def dim(self) -> Token:
        """``?dim: INT | QMARK``."""
        if self.peek("?"):
            return self.new_token("QMARK", "?")
        return self.token("INT")


_INSTRUCTIONS = {
    "alloca": _Reader.alloca, "barrier": _Reader.barrier, "cast": _Reader.cast,
    "bitcast": _Reader.cast, "constant": _Reader.constant, "expand": _Reader.expand,
    "fuse": _Reader.fuse, "foreach": _Reader.foreach, "for": _Reader.for_loop,
    "if": _Reader.if_inst, "load": _Reader.load, "lifetime_stop": _Reader.lifetime_stop,
    "parallel": _Reader.parallel, "size": _Reader.size, "store": _Reader.store,
    "subview": _Reader.subview, "yield": _Reader.yield_inst, "select": _Reader.select,
    "complex": _Reader.complex_,
}
"""The rule of each instruction keyword (modded and nullary instructions aside)."""
