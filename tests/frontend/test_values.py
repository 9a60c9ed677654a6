"""Attribute values narrowed to plain numbers (``frontend/ir/values.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from frontend.ir.values import as_complex, as_float, as_int, as_ints


@pytest.mark.parametrize("value", [7, -3, True, np.int64(5), np.uint8(200), np.float32(2.0)])
def test_as_int_takes_what_int_takes(value: Any) -> None:
    got = as_int(value)
    assert type(got) is int and got == int(value)


@pytest.mark.parametrize("value", [1.5, -0.0, np.float64(2.25), np.float32(0.5), 3, np.int32(4)])
def test_as_float_takes_what_float_takes(value: Any) -> None:
    got = as_float(value)
    assert type(got) is float and got == float(value)


@pytest.mark.parametrize("narrow", [as_int, as_float])
@pytest.mark.parametrize("value", ["3", None, [1], object()])
def test_non_numbers_are_type_errors(narrow: Callable[[object], object], value: object
                                     ) -> None:
    with pytest.raises(TypeError, match="attribute"):
        narrow(value)


def test_lists_and_complex() -> None:
    assert as_ints(np.array([3, 1, 2], np.int64)) == [3, 1, 2]
    assert as_complex(np.complex64(1 - 2j)) == 1 - 2j
    with pytest.raises(TypeError):
        as_ints(5)
