"""tlc's disk caches: one root folder, a subfolder per kind, a size cap, and safe reads.

The root is ``$TLC_CACHE_DIR``, default ``~/.cache/tlc``; ``TLC_CACHE_DIR=off`` disables
every disk cache of tlc.  Layout::

    lowered/<sha256>.pickle  lowered StableHLO programs (api/compiler.py)
    opencl/<key>/            pyopencl's binary cache (drivers without their own cache)
    vendors/<digest>/*.icd   ICD vendor folders naming pip-installed drivers (runtime.icd)
    tune.json                tuned register blocks (tune; ``$TLC_TUNE_CACHE`` names another)

Size: lowered programs and pyopencl's binaries together stay under ``$TLC_CACHE_MAX``
(default 1 GiB): after each store the least recently used go first (a hit sets an
entry's modification time; access times are unreliable on relatime mounts).

Safety: folders are created 0700, and a folder is used only while the current user owns
it and nobody else may write to it (otherwise tlc says so once on stderr and caches
nothing there).  Pickles are read with :class:`SafeUnpickler`, which resolves tlc's own
classes and :data:`ALLOWED_GLOBALS` only, so a planted pickle cannot run code.  Files are
written to a uniquely named temporary file and renamed into place, so any number of
processes may share the cache; whatever a read finds that is not a whole entry of this
very tlc (absent, truncated, corrupt, foreign, of an older tlc) is a miss, never an error.

Nothing here imports pyopencl (:mod:`backend_opencl.runtime.icd` uses this module before
OpenCL is loaded).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fcntl
import io
import json
import os
import pickle
import re
import secrets
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

DIR_ENV = "TLC_CACHE_DIR"
"""The root folder of tlc's disk caches (default ``~/.cache/tlc``; ``off``: none)."""
MAX_ENV = "TLC_CACHE_MAX"
"""The size cap of lowered programs and OpenCL binaries together (default 1 GiB)."""
TUNE_ENV = "TLC_TUNE_CACHE"
"""The file of tuned register blocks (default ``tune.json`` in the root)."""
DEFAULT_MAX = 1 << 30

LOWERED = "lowered"
BINARIES = "opencl"
VENDORS = "vendors"
TUNE_FILE = "tune.json"
_EVICTED = (LOWERED, BINARIES)
"""The kinds the size cap covers (vendor folders and the tune file are a few bytes)."""
STALE_SECONDS = 3600.0
"""A temporary file this old was left by a writer that died (it is removed)."""
STALE_LOCK_SECONDS = 300.0
"""pyopencl's lock file this old was left by a process that died: pyopencl holds it to
read or write one entry and waits at most a minute for it."""

TLC_PACKAGES = ("frontend", "tensorlang", "backend_opencl")
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
              "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4",
              "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int2",
              "int4", "uint2", "uint4")
ALLOWED_GLOBALS = frozenset({("numpy", "dtype")} | {("ml_dtypes", n) for n in _ML_DTYPES})
"""The globals outside tlc's packages that stored programs need: ``numpy.dtype`` and the
scalar types of ml_dtypes that element types map to (dtypes pickle as
``numpy.dtype(<type>)``; tests/runtime/test_disk_cache.py derives the list from real
payloads).  Containers, strings, numbers and enums pickle without other globals."""
TLC_RECORDS = frozenset({("tensorlang.ir.core", "Value")})
"""tlc's classes besides dataclasses and enums that stored programs hold (plain records:
their constructors only assign)."""
PYOPENCL_INFO = frozenset({("pyopencl.cache", "_SourceInfo")})
"""What pyopencl's ``info`` pickles name besides plain data."""

STATS: Counter[tuple[str, str]] = Counter()
"""(kind, "hits" | "misses" | "stores" | "evicted") -> count in this process."""
_SAID: set[str] = set()
_SIZE = re.compile(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


# Where the caches are.

def root() -> Path | None:
    """The configured root folder (None: ``TLC_CACHE_DIR=off``); neither created nor
    checked."""
    configured = os.environ.get(DIR_ENV, "")
    if configured == "off":
        return None
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "tlc"


def folder(kind: str) -> Path | None:
    """The folder of one kind of entries, created private (0700) if absent; None when the
    disk cache is off or the root or the folder is not safe (said once on stderr)."""
    base = root()
    return None if base is None else _private_folder(base, base / kind)


def tune_file() -> Path | None:
    """The file of tuned register blocks: ``$TLC_TUNE_CACHE``, else ``tune.json`` in the
    root (None when the disk cache is off or the root is not safe)."""
    base, named = root(), _named_tune_file()
    if named is not None or base is None:
        return named
    return None if _private_folder(base) is None else base / TUNE_FILE


def _named_tune_file() -> Path | None:
    named = os.environ.get(TUNE_ENV)
    return Path(named).expanduser() if named else None


def tune_bytes() -> bytes:
    """The tune file's bytes (b"": none), part of the lowered programs' key."""
    path = tune_file()
    try:
        return path.read_bytes() if path is not None else b""
    except OSError:
        return b""


def vendor_folder(name: str) -> Path | None:
    """A private folder for ICD vendor files: under the cache, or under the temporary
    folder when the disk cache is off or not safe (the loader needs the files either
    way); None when neither is safe."""
    base = folder(VENDORS)
    if base is None:
        private = Path(tempfile.gettempdir()) / f"tlc-{os.getuid()}"
        base = _private_folder(private, private / VENDORS)
    return None if base is None else _private_folder(base / name)


def _private_folder(*paths: Path) -> Path | None:
    """The last of ``paths`` (each inside the one before), each created 0700 when absent;
    None when one cannot be made or is not safe (said once)."""
    for path in paths:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as err:
            say_once(f"tlc: warning: disk cache not used: cannot create {path}: "
                     f"{err.strerror or err}")
            return None
        reason = unsafe_reason(path)
        if reason is not None:
            say_once(f"tlc: warning: disk cache not used: {path} {reason}; make it private "
                     f"(chmod 700) or choose another folder with {DIR_ENV}")
            return None
    return paths[-1]


def unsafe_reason(path: Path) -> str | None:
    """Why ``path`` may not hold cached programs, or None: a folder (links followed) that
    the current user owns and nobody else may write to."""
    try:
        st = path.stat()
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"may be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def say_once(message: str) -> None:
    """Print one line on stderr, once per process."""
    if message not in _SAID:
        _SAID.add(message)
        print(message, file=sys.stderr)


def max_bytes() -> int:
    """The size cap: ``$TLC_CACHE_MAX`` in bytes, or with a K, M, G or T suffix (powers of
    1024: ``500M``, ``2G``, ``1.5GiB``); default 1 GiB.  A value that is not a size is
    warned about once and the default used: the cache must not stop a run."""
    text = os.environ.get(MAX_ENV, "").strip()
    match = _SIZE.fullmatch(text)
    if match is None:
        if text:
            say_once(f"tlc: warning: {MAX_ENV}={text!r} is not a size (such as 500M, 2G or "
                     f"1073741824); using {format_size(DEFAULT_MAX)}")
        return DEFAULT_MAX
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


# Reading and writing entries.

class SafeUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the dataclasses and enums defined in tlc's
    packages, the names in :data:`ALLOWED_GLOBALS` and ``extra``: a planted pickle cannot
    reach ``os.system``, ``eval`` or any other callable (functions of tlc, and classes
    whose constructors act, included)."""

    def __init__(self, file: IO[bytes], extra: frozenset[tuple[str, str]] = frozenset()) -> None:
        super().__init__(file)
        self.extra = extra

    def find_class(self, module: str, name: str) -> object:
        """The class ``module.name`` when allowed, else UnpicklingError."""
        if (module, name) in ALLOWED_GLOBALS | TLC_RECORDS or (module, name) in self.extra:
            return super().find_class(module, name)
        if _in_tlc(module) and name.isidentifier():  # no dotted paths to other objects
            found = super().find_class(module, name)
            # A class tlc imports from elsewhere (subprocess.Popen, say) is not tlc's, and
            # of tlc's only plain records: a dataclass's or an enum's constructor assigns
            # fields, another class's may act (build, launch, start a process).
            if isinstance(found, type) and _in_tlc(found.__module__) \
                    and (dataclasses.is_dataclass(found) or issubclass(found, enum.Enum)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} may not appear in tlc's cache")


def _in_tlc(module: str) -> bool:
    return module.split(".", 1)[0] in TLC_PACKAGES


def safe_loads(data: bytes, extra: frozenset[tuple[str, str]] = frozenset()) -> object:
    """``data`` unpickled by :class:`SafeUnpickler`; raises on anything else."""
    return SafeUnpickler(io.BytesIO(data), extra).load()


def read_pickle(path: Path, tag: str,
                on_head: Callable[[object], None] | None = None) -> object | None:
    """The payload :func:`write_pickle` stored at ``path`` under ``tag`` (a hit: marked
    used), or None (a miss): absent, truncated, corrupt, foreign, or of another tag.

    ``on_head`` is called with the entry's head as soon as it is read, before the
    payload is unpickled, so that the caller can start work on it (the head may come
    from an entry that turns out to be a miss)."""
    try:
        stream = io.BytesIO(path.read_bytes())
        found, head = _tagged(SafeUnpickler(stream).load())
        if found == tag:
            if on_head is not None:
                on_head(head)
            payload = SafeUnpickler(stream).load()  # its own memo, as it was pickled
    except Exception:  # any bytes may sit there: whatever fails to load is a miss
        found = None
    if found != tag:
        STATS[path.parent.name, "misses"] += 1
        return None
    touch(path)
    STATS[path.parent.name, "hits"] += 1
    return payload


def _tagged(first: object) -> tuple[str | None, object]:
    """(tag, head) of an entry's first pickle; (None, None) when it is not one."""
    if isinstance(first, tuple) and len(first) == 2 and isinstance(first[0], str):
        return first[0], first[1]
    return None, None


def write_pickle(path: Path, tag: str, payload: object, head: object = None) -> None:
    """Store ``payload`` under ``tag`` at ``path`` (atomically), then keep the cache under
    its cap; a failed write is ignored (the cache is an optimisation).  The entry is two
    pickles, ``(tag, head)`` and ``payload``: :func:`read_pickle` hands ``head`` over
    before it unpickles the payload."""
    data = b"".join(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
                    for part in ((tag, head), payload))
    if write_atomic(path, data):
        stored(path.parent.name)


def read_parts(data: bytes) -> list[object]:
    """Every pickle in ``data`` in turn, by :class:`SafeUnpickler` (an entry's
    ``(tag, head)`` and payload; for tests and tools); raises on anything else."""
    stream, parts = io.BytesIO(data), []
    while stream.tell() < len(data):
        parts.append(SafeUnpickler(stream).load())
    return parts


def stored(kind: str) -> None:
    """Count a store of ``kind`` and evict what no longer fits under the cap."""
    STATS[kind, "stores"] += 1
    evict()


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to a temporary file named uniquely (pid, thread, random) next to
    ``path``, then rename it over ``path``: readers see the old file or the whole new
    one.  False when it failed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}-"
                         f"{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False
    return True


def ensure_content(path: Path, data: bytes) -> bool:
    """Make ``path`` hold exactly ``data`` (rewritten when it holds anything else or
    cannot be read); False when it cannot be written."""
    try:
        if path.read_bytes() == data:
            return True
    except OSError:
        pass
    return write_atomic(path, data)


def read_json(path: Path) -> object | None:
    """The JSON value in ``path``, None when absent or not JSON."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def update_json(path: Path, changes: Mapping[str, object],
                keep: Callable[[object], bool] | None = None) -> bool:
    """Merge ``changes`` into the JSON object in ``path`` (its values that fail ``keep``
    are dropped; anything but an object is replaced): read again and written under a
    lock, so concurrent writers keep each other's entries.  False when it cannot be
    written."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            current = read_json(path)
            kept = {k: v for k, v in current.items() if keep is None or keep(v)} \
                if isinstance(current, dict) else {}
            merged = json.dumps({**kept, **changes}, indent=1, sort_keys=True)
            return write_atomic(path, merged.encode())
    except OSError:
        return False


def touch(path: Path) -> None:
    """Mark an entry used now (its modification time; it may have been evicted)."""
    with contextlib.suppress(OSError):
        os.utime(path)


# pyopencl's binary cache: folders <key>/{info, binary, source.cl} and its lock file.

def use_binary(entry: Path) -> bool:
    """Before pyopencl looks up its entry ``entry``: True (a hit, marked used) when it is
    whole and its ``info`` pickle holds plain data only; a damaged or foreign entry is
    removed (pyopencl would warn at every build, or run a planted pickle) and is a miss,
    like an absent one."""
    _remove_stale_lock(entry.parent / "lock")
    usable = _binary_whole(entry)
    if not usable and entry.exists():
        with _pyopencl_lock(entry.parent) as locked:
            # Under the lock no pyopencl is writing it: look again before removing.
            usable = _binary_whole(entry)
            if locked and not usable:
                _remove(entry)
    STATS[BINARIES, "hits" if usable else "misses"] += 1
    if usable:
        touch(entry)
    return usable


def _binary_whole(entry: Path) -> bool:
    try:
        safe_loads((entry / "info").read_bytes(), PYOPENCL_INFO)
        return (entry / "binary").stat().st_size > 0
    except Exception:  # any bytes may sit there: whatever fails to load is not whole
        return False


def _remove_stale_lock(lock: Path) -> None:
    """Remove pyopencl's lock file when it is older than anyone holds it (a process
    killed while holding it): pyopencl would wait a minute at every build, then give up
    its cache."""
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink()


@contextlib.contextmanager
def _pyopencl_lock(binaries: Path) -> Iterator[bool]:
    """pyopencl's own lock of its cache folder (the file ``lock``, created exclusively;
    pyopencl takes it to read or write an entry), without waiting: True when held."""
    lock = binaries / "lock"
    _remove_stale_lock(lock)
    try:
        fd: int | None = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)
            with contextlib.suppress(OSError):
                lock.unlink()


# Entries, eviction, describe and clear.

@dataclass(frozen=True)
class Entry:
    """One cache entry: a lowered program's file or a folder (pyopencl, vendors)."""

    path: Path
    kind: str
    size: int
    used: float  #: modification time: the last store or hit


def entries(kind: str, base: Path | None = None) -> list[Entry]:
    """The entries of ``kind`` under ``base`` (default: the root) as they are now (files
    may vanish meanwhile; stale temporary files are removed on the way)."""
    base = root() if base is None else base
    if base is None:
        return []
    try:
        scan = list(os.scandir(base / kind))
    except OSError:
        return []
    found = []
    for item in scan:
        with contextlib.suppress(OSError):  # removed by another process meanwhile
            if item.name.endswith(".tmp"):
                _remove_if_stale(item)
            elif kind == LOWERED and item.name.endswith(".pickle"):
                st = item.stat()
                found.append(Entry(Path(item.path), kind, st.st_size, st.st_mtime))
            elif kind != LOWERED and item.is_dir(follow_symlinks=False):
                found.append(Entry(Path(item.path), kind, _folder_size(item.path),
                                   item.stat().st_mtime))
    return found


def _folder_size(path: str) -> int:
    return sum(f.stat().st_size for f in os.scandir(path) if f.is_file(follow_symlinks=False))


def _remove_if_stale(item: os.DirEntry[str]) -> None:
    if time.time() - item.stat().st_mtime > STALE_SECONDS:
        os.unlink(item.path)


def evict(cap: int | None = None) -> list[Entry]:
    """Remove least recently used lowered programs and pyopencl binaries until together
    they fit under ``cap`` (default :func:`max_bytes`); returns what was removed.
    pyopencl's entries go only while its lock is free (skipped otherwise)."""
    cap = max_bytes() if cap is None else cap
    found = [e for kind in _EVICTED for e in entries(kind)]
    total = sum(e.size for e in found)
    removed: list[Entry] = []
    with contextlib.ExitStack() as stack:
        locked: bool | None = None
        for entry in sorted(found, key=lambda e: e.used):
            if total <= cap:
                break
            if entry.kind == BINARIES:
                if locked is None:
                    locked = stack.enter_context(_pyopencl_lock(entry.path.parent))
                if not locked:
                    continue
            if _remove(entry.path):
                total -= entry.size
                removed.append(entry)
                STATS[entry.kind, "evicted"] += 1
    return removed


def _remove(path: Path) -> bool:
    """Remove a file or folder; True when it is gone (also when another process was
    first)."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


_KINDS = ((LOWERED, "lowered programs"), (BINARIES, "OpenCL binaries of pyopencl"),
          (VENDORS, "ICD vendor folders"))


def describe() -> str:
    """What ``tlc cache info`` prints: the root, entries and bytes of each kind, the cap,
    and this process's hits, misses, stores and evictions."""
    base = root()
    if base is None:
        return f"tlc disk cache: off ({DIR_ENV}=off)"
    lines = [f"tlc disk cache: {base}"]
    reason = unsafe_reason(base) if base.exists() else None
    if reason is not None:
        lines.append(f"  not used: the folder {reason}")
    in_cap = 0
    for kind, what in _KINDS:
        found = entries(kind, base)
        size = sum(e.size for e in found)
        in_cap += size if kind in _EVICTED else 0
        lines.append(f"  {kind + '/':<9} {len(found):>6} {what:<27} {format_size(size):>10}")
    lines.append(_describe_tune(base))
    lines.append(f"  cap: {format_size(max_bytes())} ({MAX_ENV}) for lowered programs and "
                 f"OpenCL binaries, {format_size(in_cap)} used")
    if STATS:
        counts = ", ".join(f"{kind} {event} {n}" for (kind, event), n in sorted(STATS.items()))
        lines.append(f"  this process: {counts}")
    return "\n".join(lines)


def _describe_tune(base: Path) -> str:
    path = _named_tune_file() or base / TUNE_FILE
    found = read_json(path)
    count = len(found) if isinstance(found, dict) else 0
    return f"  {TUNE_FILE:<9} {count:>6} tuned kernels ({path})"


def clear() -> str:
    """What ``tlc cache clear`` does: remove tlc's entries (lowered programs, pyopencl's
    binaries, ICD vendor folders; tuned blocks stay) and say what went."""
    base = root()
    if base is None:
        return f"tlc disk cache: off ({DIR_ENV}=off), nothing to clear"
    reason = unsafe_reason(base) if base.exists() else None
    if reason is not None:
        return f"tlc disk cache: {base} not cleared: the folder {reason}"
    parts = [_clear_kind(kind, what, base) for kind, what in _KINDS]
    legacy = [p for p in base.glob("opencl-vendors-*") if _remove(p)]  # an older layout
    if legacy:
        parts.append(f"{len(legacy)} old vendor folders")
    return (f"tlc disk cache {base}: removed " + ", ".join(parts) +
            f"; kept {TUNE_FILE} (tuned register blocks; delete it to forget them)")


def _clear_kind(kind: str, what: str, base: Path) -> str:
    found = entries(kind, base)
    with contextlib.ExitStack() as stack:
        if kind == BINARIES and found and not stack.enter_context(_pyopencl_lock(base / kind)):
            return f"no {what} (pyopencl holds its lock: a build is running; try again)"
        gone = [e for e in found if _remove(e.path)]
    return f"{len(gone)} {what} ({format_size(sum(e.size for e in gone))})"


def format_size(size: int) -> str:
    """``size`` bytes for people: ``512 B``, ``1.5 KiB``, ``2.0 GiB``."""
    exponent = min(max(size.bit_length() - 1, 0) // 10, 4)
    if exponent == 0:
        return f"{size} B"
    return f"{size / (1 << 10 * exponent):.1f} {('KiB', 'MiB', 'GiB', 'TiB')[exponent - 1]}"
