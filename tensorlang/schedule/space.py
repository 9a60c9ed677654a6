"""Building isl sets and maps from symbolic sizes.

A size is a string: an integer literal (static) or an identifier (a dynamic size, which
becomes an isl parameter of the same name).  Sets are written in isl's text syntax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import islpy as isl

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = {"and", "or", "exists", "floor", "mod", "min", "max", "not", "ceil"}


def parameters(*texts: str) -> list[str]:
    """The identifiers (isl parameters) used in ``texts``, in order of appearance."""
    names: list[str] = []
    for text in texts:
        for name in _IDENT.findall(text):
            if name not in names and name not in _KEYWORDS:
                names.append(name)
    return names


def set_(tuple_: str, constraints: Iterable[str], params: Iterable[str] = ()) -> isl.Set:
    """``[params] -> { tuple_ : c1 and c2 ... }`` with parameters found in the constraints.

    ``tuple_`` is e.g. ``S[i, j]``; its own dimension names are not parameters.
    """
    body = " and ".join(f"({c})" for c in constraints) or "0 = 0"
    names = _tuple_names(f"{tuple_} : {body}")
    found = [p for p in parameters(body, *params) if p not in names]
    prefix = f"[{', '.join(found)}] -> " if found else ""
    return isl.Set(f"{prefix}{{ {tuple_} : {body} }}")


def map_(text: str, domain: isl.Set) -> isl.Map:
    """A map from text, aligned to ``domain``'s parameters and restricted to it."""
    bound = _tuple_names(text.split("->")[0])
    found = [p for p in parameters(text) if p not in bound and not _is_tuple_name(p, text)]
    prefix = f"[{', '.join(found)}] -> " if found else ""
    result = isl.Map(f"{prefix}{{ {text} }}")
    result = result.align_params(domain.get_space())
    return result.intersect_domain(domain.align_params(result.get_space()))


def context(constraints: Iterable[str]) -> isl.Set:
    """A parameter set ``[params] -> { : constraints }``."""
    body = " and ".join(f"({c})" for c in constraints) or "0 = 0"
    found = parameters(body)
    prefix = f"[{', '.join(found)}] -> " if found else ""
    return isl.Set(f"{prefix}{{ : {body} }}")


def param_names(s: isl.Set) -> list[str]:
    """The names of ``s``'s parameters (tlc names every one)."""
    names = s.get_var_names(isl.dim_type.param)
    assert None not in names, names
    return [n for n in names if n is not None]


def _is_tuple_name(name: str, text: str) -> bool:
    return re.search(rf"\b{name}\[", text) is not None


def _tuple_names(text: str) -> set[str]:
    """Names bound in ``text``: tuple names, tuple dimensions and existentials."""
    names: set[str] = set()
    for match in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)?\[([^\]]*)\]", text):
        names.add(match.group(1) or "")
        names |= set(_IDENT.findall(match.group(2)))
    for group in re.findall(r"exists\s*\(([^:]*):", text):
        names |= set(_IDENT.findall(group))
    return names
