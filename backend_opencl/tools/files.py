"""The files of the ``tlc`` command: text inputs, ``.npy``/``.npz`` arrays in and out.

An unreadable or unwritable file is a :class:`TlcError` naming it (a diagnostic, never a
traceback), for every subcommand that reads or writes one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    import numpy as np

NUMPY_MAGIC = (b"\x93NUMPY", b"PK")
"""How ``.npy`` files and ``.npz`` archives (zip files) begin."""


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` with newlines translated as ``read_text()`` does; a
    missing file, a directory or bytes that are not UTF-8 are a ``TlcError``."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TlcError(f"{path}: error: cannot read file: {err.strerror}") from None
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise TlcError(f"{path}:{line}:{col}: error: the file is not UTF-8 text (byte "
                       f"0x{data[err.start]:02x})") from None


@contextmanager
def writing(path: str) -> Iterator[None]:
    """An ``OSError`` of the body (writing ``path``) becomes a ``TlcError`` naming it."""
    try:
        yield
    except OSError as err:
        raise TlcError(f"{path}: error: cannot write file: {err.strerror}") from None


def save_arrays(path: str, arrays: dict[str, Any]) -> None:
    """``np.savez(path, **arrays)``; an unwritable path is a ``TlcError`` naming it."""
    import numpy as np

    with writing(path):
        np.savez(path, **arrays)


def read_input_arrays(path: str) -> list[np.ndarray]:
    """The array of an ``.npy`` file, or those of an ``.npz`` in stored order; an
    unreadable file is a ``TlcError`` naming it."""
    import zipfile
    import zlib

    import numpy as np

    try:
        with open(path, "rb") as f:
            if not f.read(6).startswith(NUMPY_MAGIC):
                raise ValueError("not a .npy or .npz file (np.save and np.savez write them)")
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.ndarray):
            return [data]
        with data:
            return [data[k] for k in data.files]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise TlcError(f"{path}: error: cannot read inputs: {reason}") from None
