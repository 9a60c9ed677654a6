"""tlc's disk caches (``backend_opencl.diskcache``): one root with private folders, the size
cap and least-recently-used eviction, ``describe``/``clear``, damaged or foreign files in
every kind (misses that are replaced, never errors), planted pickles (never run), unsafe
folders (not used, said once), and the globals real payloads need."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import stat
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import backend_opencl
from backend_opencl import diskcache
from backend_opencl.api import compiler, tuned
from backend_opencl.diskcache import BINARIES, LOWERED, VENDORS
from backend_opencl.runtime import icd
from backend_opencl.runtime.opencl import build
from backend_opencl.tools import tune
from tests.kernels import AXPY, TINY_GEMM

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "stablehlo" / "testdata"
SMALL = """func.func public @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4x8xf32>
  %1 = stablehlo.add %0, %a : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}"""


def run_small(seed: int) -> str:
    """Python lines (for a child process) compiling ``SMALL`` and checking it against
    numpy on random data of ``seed``."""
    return (f"exe = backend_opencl.compile_stablehlo({SMALL!r})\n"
            f"a, b = np.random.default_rng({seed}).standard_normal((2, 4, 8), "
            "dtype=np.float32)\n"
            "np.testing.assert_allclose(exe(a, b)[0], a * b + a, rtol=1e-6, atol=1e-6)\n")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache root (not created yet); this process's counters, messages and
    compiled programs start empty."""
    root = tmp_path / "cache"
    monkeypatch.setenv(diskcache.DIR_ENV, str(root))
    for name in (diskcache.MAX_ENV, diskcache.TUNE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(diskcache, "_SAID", set())
    monkeypatch.setattr(diskcache, "STATS", Counter())
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    return root


def _run_small(monkeypatch: pytest.MonkeyPatch, seed: int = 0) -> None:
    """Compile SMALL afresh in this process (the disk cache may answer) and check it."""
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    exe = backend_opencl.compile_stablehlo(SMALL)
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    (got,) = exe(a, b)
    np.testing.assert_allclose(got, a * b + a, rtol=1e-6, atol=1e-6)


def _lowered_files(cache: Path) -> list[Path]:
    return sorted((cache / LOWERED).glob("*.pickle"))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def whole_lowered_program(path: Path) -> bool:
    """Whether ``path`` holds a lowered program as tlc stores it: (its sources' hash,
    the 6-tuple of plan and kernels), loaded by the restricted unpickler.  (Not
    ``compiler._load_stored``: another process may have hashed other sources.)"""
    from tensorlang.plan import Plan

    (tag, head), payload = diskcache.read_parts(path.read_bytes())
    return isinstance(tag, str) and len(payload) == 6 and isinstance(payload[0], Plan) \
        and head == (payload[1].source, tuple(k.c_name for k in payload[1].kernels.values()))


# Layout, private folders, TLC_CACHE_DIR=off.

def test_one_root_with_private_folders(cache: Path) -> None:
    for kind in (LOWERED, BINARIES, VENDORS):
        assert diskcache.folder(kind) == cache / kind
    assert diskcache.vendor_folder("abc") == cache / VENDORS / "abc"
    assert diskcache.tune_file() == cache / "tune.json"
    assert build.cache_directory() == str(cache / BINARIES)
    assert compiler.lowered_cache_directory() == cache / LOWERED
    for path in (cache, cache / LOWERED, cache / BINARIES, cache / VENDORS / "abc"):
        assert _mode(path) == 0o700, path


def test_off_disables_every_cache(cache: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(diskcache.DIR_ENV, "off")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert [diskcache.folder(kind) for kind in (LOWERED, BINARIES, VENDORS)] == [None] * 3
    assert diskcache.tune_file() is None and build.cache_directory() is None
    _run_small(monkeypatch)
    assert not cache.exists()
    # The loader still needs a vendor folder: a private one in the temporary folder.
    vendors = diskcache.vendor_folder("abc")
    assert vendors == tmp_path / f"tlc-{os.getuid()}" / VENDORS / "abc"
    assert _mode(vendors.parent.parent) == 0o700
    monkeypatch.setenv(diskcache.TUNE_ENV, str(tmp_path / "mine.json"))
    assert diskcache.tune_file() == tmp_path / "mine.json"
    assert "off" in diskcache.describe() and "nothing to clear" in diskcache.clear()


# The size cap and least-recently-used eviction.

@pytest.mark.parametrize("text, size", [
    ("", 1 << 30), ("1073741824", 1 << 30), ("500M", 500 << 20), ("2G", 2 << 30),
    ("1.5GiB", 3 << 29), ("64k", 64 << 10), ("10 MB", 10 << 20), ("0", 0)])
def test_cap_sizes(cache: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                   size: int) -> None:
    monkeypatch.setenv(diskcache.MAX_ENV, text)
    assert diskcache.max_bytes() == size


def test_a_bad_cap_is_said_once_and_the_default_used(
        cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(diskcache.MAX_ENV, "lots")
    assert diskcache.max_bytes() == diskcache.max_bytes() == diskcache.DEFAULT_MAX
    (line,) = capsys.readouterr().err.splitlines()
    assert "TLC_CACHE_MAX='lots' is not a size" in line and "1.0 GiB" in line


def _store(name: str, size: int, used: float | None = None) -> Path:
    folder = diskcache.folder(LOWERED)
    assert folder is not None
    path = folder / f"{name}.pickle"
    diskcache.write_pickle(path, "tag", os.urandom(size))
    if used is not None:
        os.utime(path, (used, used))
    return path


def _binary(cache: Path, key: str, size: int, used: float) -> Path:
    """A stand-in for one of pyopencl's entries (a folder: info, binary)."""
    entry = cache / BINARIES / key
    entry.mkdir(parents=True)
    (entry / "info").write_bytes(pickle.dumps(([], None)))
    (entry / "binary").write_bytes(os.urandom(size))
    os.utime(entry, (used, used))
    return entry


def test_least_recently_used_go_first(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(diskcache.MAX_ENV, "10K")
    paths = {name: _store(name, 3000, used=1000 + age) for age, name in enumerate("abc")}
    assert diskcache.read_pickle(paths["a"], "tag") is not None  # a hit: a is now the newest
    _store("d", 3000)  # 12 KB: b, the least recently used, goes
    assert [p.stem for p in _lowered_files(cache)] == ["a", "c", "d"]
    removed = diskcache.evict(cap=4000)
    assert [e.path.stem for e in removed] == ["c", "a"]
    assert [p.stem for p in _lowered_files(cache)] == ["d"]


def test_pyopencl_entries_share_the_cap_while_its_lock_is_free(cache: Path) -> None:
    _store("old", 3000, used=1000)
    first = _binary(cache, "k1", 3000, used=1001)
    _binary(cache, "k2", 3000, used=1003)
    _store("new", 3000, used=1002)
    (cache / BINARIES / "lock").touch()  # pyopencl is reading or writing an entry
    assert [e.path.name for e in diskcache.evict(cap=7000)] == ["old.pickle", "new.pickle"]
    (cache / BINARIES / "lock").unlink()
    assert [e.path for e in diskcache.evict(cap=4000)] == [first]
    assert not (cache / BINARIES / "lock").exists()
    assert sorted(p.name for p in (cache / BINARIES).iterdir()) == ["k2"]


def test_stale_temporary_files_are_removed(cache: Path) -> None:
    folder = diskcache.folder(LOWERED)
    assert folder is not None
    stale, fresh = folder / ".a.pickle.1-2-x.tmp", folder / ".b.pickle.1-2-y.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"partial")
    os.utime(stale, (1000, 1000))
    assert diskcache.entries(LOWERED) == []
    assert not stale.exists() and fresh.exists()


def test_concurrent_writes_leave_one_whole_file(cache: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    folder = diskcache.folder(LOWERED)
    assert folder is not None
    payloads = [bytes([i]) * 100_000 for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(lambda d: diskcache.write_atomic(folder / "x", d), payloads * 4))
    assert (folder / "x").read_bytes() in payloads
    assert [p.name for p in folder.iterdir()] == ["x"]


# describe() and clear().

def test_describe_and_clear(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _store("a", 2000)
    _store("b", 2000)
    _binary(cache, "k1", 1000, used=1000)
    diskcache.vendor_folder("v1")
    (cache / "tune.json").write_text(json.dumps({"dev|k|1": [4, 4]}))
    (cache / "opencl-vendors-0123").mkdir()  # the layout of earlier versions
    diskcache.read_pickle(a, "tag")
    diskcache.read_pickle(a, "another tag")
    text = diskcache.describe()
    assert text.splitlines()[0] == f"tlc disk cache: {cache}"
    for pattern in (r"lowered/\s+2 lowered programs\s+\d\.\d KiB",
                    r"opencl/\s+1 OpenCL binaries of pyopencl",
                    r"vendors/\s+1 ICD vendor folders",
                    r"tune\.json\s+1 tuned kernels",
                    r"cap: 1\.0 GiB \(TLC_CACHE_MAX\)",
                    r"this process: lowered hits 1, lowered misses 1, lowered stores 2$"):
        assert re.search(pattern, text), (pattern, text)
    said = diskcache.clear()
    for part in ("2 lowered programs (", "1 OpenCL binaries of pyopencl",
                 "1 ICD vendor folders", "1 old vendor folders", "kept tune.json"):
        assert part in said, said
    assert sorted(p.name for p in cache.iterdir()) == [LOWERED, BINARIES, "tune.json", VENDORS]
    assert [p for kind in (LOWERED, BINARIES, VENDORS) for p in (cache / kind).iterdir()] == []
    assert re.search(r"lowered/\s+0 lowered programs", diskcache.describe())


def test_cache_command(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``tlc cache info`` and ``tlc cache clear`` print describe() and clear()."""
    from backend_opencl.tools import cli

    _store("a", 2000)
    assert cli.main(["cache", "info"]) == 0
    assert re.search(r"lowered/\s+1 lowered programs", capsys.readouterr().out)
    assert cli.main(["cache", "clear"]) == 0
    assert "removed 1 lowered programs" in capsys.readouterr().out
    assert list((cache / LOWERED).iterdir()) == []


# Damaged, foreign and planted files: misses, replaced, never run.

def _payload(good: bytes) -> object:
    return diskcache.read_parts(good)[1]


def _untagged(good: bytes) -> bytes:
    """The form of an older tlc: the bare payload, no tag."""
    return pickle.dumps(_payload(good))


def _one_pickle(good: bytes) -> bytes:
    """The form of the tlc before heads: one pickle of (tag, payload)."""
    (tag, _), payload = diskcache.read_parts(good)
    return pickle.dumps((tag, payload))


def _head_of_another(good: bytes) -> bytes:
    """The entry with the head of another program: the payload's source is built."""
    (tag, (source, names)), payload = diskcache.read_parts(good)
    head = (source + "\nkernel void another_program(global int* a) { a[0] = 1; }\n", names)
    return pickle.dumps((tag, head)) + pickle.dumps(payload)


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "random bytes": lambda good: np.random.default_rng(1).bytes(len(good)),
    "empty": lambda good: b"",
    "truncated": lambda good: good[: len(good) // 2],
    "a pickle of something else": lambda good: pickle.dumps({"not": "tlc"}),
    "an older tlc's form": _untagged,
    "another tlc's tag": lambda good: pickle.dumps(("0" * 64, None)) + pickle.dumps(
        _payload(good)),
    "one pickle": _one_pickle,
    "no payload": lambda good: pickle.dumps(diskcache.read_parts(good)[0]),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_lowered_program_is_a_miss_and_replaced(
        cache: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    _run_small(monkeypatch)
    (path,) = _lowered_files(cache)
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    _run_small(monkeypatch, seed=1)
    assert diskcache.STATS[LOWERED, "misses"] == 2 and diskcache.STATS[LOWERED, "stores"] == 2
    assert compiler._load_stored(path) is not None
    _run_small(monkeypatch, seed=2)
    assert diskcache.STATS[LOWERED, "hits"] == 2  # _load_stored above, then the compile


def test_a_hit_builds_the_source_before_the_rest_is_unpickled(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry's head, OpenCL source and kernel names, goes to the driver before the
    payload is unpickled (a cached PoCL build still takes ~20-40 ms, in a thread)."""
    _run_small(monkeypatch)
    events: list[str] = []
    find_class = diskcache.SafeUnpickler.find_class

    def recording(self: diskcache.SafeUnpickler, module: str, name: str) -> object:
        events.append("unpickle")
        return find_class(self, module, name)

    start = compiler.EarlyBuild.start
    monkeypatch.setattr(diskcache.SafeUnpickler, "find_class", recording)
    monkeypatch.setattr(compiler.EarlyBuild, "start",
                        lambda self, head: (events.append("build"), start(self, head)))
    _run_small(monkeypatch, seed=1)
    assert diskcache.STATS[LOWERED, "hits"] == 1
    assert events[0] == "build" and events.count("build") == 1 and "unpickle" in events


def test_a_head_of_another_program_builds_the_stored_one(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A head whose source is not the payload's (never written so) is built and ignored:
    the module builds its own source."""
    _run_small(monkeypatch)
    (path,) = _lowered_files(cache)
    path.write_bytes(_head_of_another(path.read_bytes()))
    builds, hits = build.STATS.builds, build.STATS.memory_hits
    _run_small(monkeypatch, seed=1)
    assert diskcache.STATS[LOWERED, "hits"] == 1
    assert build.STATS.builds == builds + 1  # the head's
    assert build.STATS.memory_hits == hits + 1  # the payload's, built by the first compile


class _Call:
    """Pickles as the call ``func(*args)``: what a planted pickle makes a load do."""

    def __init__(self, func: Callable[..., Any], *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.func, self.args


def _stack_global(module: str, name: str, *args: str) -> bytes:
    """A protocol-4 pickle of ``("t", module.name(*args))`` (a dotted ``name`` is a path
    of attributes there)."""
    def text(s: str) -> bytes:
        return b"\x8c" + bytes([len(s.encode())]) + s.encode()

    call = text(module) + text(name) + b"\x93(" + b"".join(map(text, args)) + b"tR"
    return b"\x80\x04" + text("t") + call + b"\x86."


PLANTED: dict[str, Callable[[Path], bytes]] = {
    "os.system": lambda m: pickle.dumps(("t", _Call(os.system, f"touch {m}"))),
    "builtins.exec": lambda m: pickle.dumps(("t", _Call(exec, f"open({str(m)!r}, 'w')"))),
    "an attribute path from a tlc module": lambda m: _stack_global(
        "backend_opencl.distributed.launch", "subprocess.getoutput", f"touch {m}"),
    "a class a tlc module imports": lambda m: _stack_global(
        "backend_opencl.diskcache", "Path", str(m)),
    "a function of tlc": lambda m: _stack_global("backend_opencl.diskcache", "clear"),
    "a class of tlc whose constructor acts": lambda m: _stack_global(
        "backend_opencl.runtime.stress", "_Releaser"),
}


@pytest.mark.parametrize("how", PLANTED)
def test_planted_pickles_are_not_run(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "x.pickle"
    path.write_bytes(PLANTED[how](marker))
    with pytest.raises(pickle.UnpicklingError, match="may not appear in tlc's cache"):
        diskcache.safe_loads(path.read_bytes())
    assert diskcache.read_pickle(path, "t") is None
    assert not marker.exists()


def test_a_plain_load_would_run_the_planted_pickle(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    pickle.loads(PLANTED["os.system"](marker))  # what pickle.load of the cache did before
    assert marker.exists()


def test_planted_lowered_program_is_not_run_and_replaced(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run_small(monkeypatch)
    (path,) = _lowered_files(cache)
    marker = tmp_path / "ran"
    path.write_bytes(pickle.dumps((compiler._source_hash(), _Call(os.system, f"touch {marker}"))))
    _run_small(monkeypatch, seed=1)
    assert not marker.exists()
    assert compiler._load_stored(path) is not None


TUNE_DAMAGES = {
    "random bytes": bytes(range(256)), "empty": b"", "truncated": b'{"a": [4, ',
    "not an object": b"[1, 2]",
    "foreign values": b'{"x": "y", "z": [0, 4], "w": [4, 4, 7], "v": [4, true]}',
}


@pytest.mark.parametrize("damage", TUNE_DAMAGES)
def test_damaged_tune_file_is_ignored_and_replaced(cache: Path, damage: str) -> None:
    path = diskcache.tune_file()
    assert path is not None
    path.write_bytes(TUNE_DAMAGES[damage])
    assert tuned.load() == {}
    module = backend_opencl.compile(TINY_GEMM)
    rng = np.random.default_rng(4)
    A, B, C = (np.asfortranarray(rng.standard_normal(s), dtype=np.float32)
               for s in ((12, 3, 4), (3, 5, 4), (12, 5, 4)))  # memrefs are column-major
    want = np.einsum("ikb,kjb->ijb", A, B) + C
    module.tiny(A, B, C, num_groups=4)
    np.testing.assert_allclose(C, want, rtol=1e-5, atol=1e-5)
    winners = tune.tune(TINY_GEMM, groups=4, top=1, repeat=1, progress=lambda line: None)
    assert list(json.loads(path.read_text()).values()) == [list(winners["tiny"])]


def test_tune_file_keeps_other_entries(cache: Path) -> None:
    path = diskcache.tune_file()
    assert path is not None
    path.write_text(json.dumps({"other|k|1": [8, 2, 1], "bad": [0, 1]}))
    assert tuned.load() == {"other|k|1": [8, 2, 1]}
    assert diskcache.update_json(path, {"new|k|2": [4, 4]}, keep=tuned.is_choice)
    assert json.loads(path.read_text()) == {"other|k|1": [8, 2, 1], "new|k|2": [4, 4]}


VENDOR_ENTRIES = [icd.Icd("/etc/OpenCL/vendors/pocl.icd", "libpocl.so.2", bundled=False),
                  icd.Icd("", "/venv/lib/libintelocl.so", bundled=False)]
VENDOR_FILES = {"pocl.icd": b"libpocl.so.2\n", "tlc-intel-cpu.icd": b"/venv/lib/libintelocl.so\n"}


@pytest.mark.parametrize("damage", [b"\xff\xfe\x00\x91 not utf-8", b"", b"libpocl.so.2",
                                    b"/home/someone/evil.so\n"])
def test_damaged_vendor_files_are_rewritten(cache: Path, damage: bytes) -> None:
    written = icd._write_vendor_dir(VENDOR_ENTRIES)
    assert written is not None
    folder = Path(written)
    for path in folder.iterdir():
        path.write_bytes(damage)
    (folder / "planted.icd").write_bytes(b"/tmp/evil.so\n")
    assert icd._write_vendor_dir(VENDOR_ENTRIES) == written
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == VENDOR_FILES


def test_a_cache_of_random_bytes_gives_a_normal_run(cache: Path) -> None:
    """The report: every file of a cache folder overwritten with a few random bytes made
    every later run die (a UnicodeDecodeError reading an ``.icd`` file)."""
    code = ("import numpy as np, backend_opencl\n" + run_small(5)
            + "backend_opencl.compile_stablehlo(open('examples/mlp.mlir').read())\n")
    env = {**os.environ, diskcache.DIR_ENV: str(cache)}
    for name in ("OCL_ICD_VENDORS", "TLC_DEVICE"):  # the default drivers: a vendor folder
        env.pop(name, None)

    def run() -> None:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=300, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr

    run()
    rng = np.random.default_rng(6)
    damaged = [p for p in cache.rglob("*") if p.is_file()]
    for path in damaged:
        path.write_bytes(rng.bytes(7))
    run()
    assert len(_lowered_files(cache)) == 2
    for path in _lowered_files(cache):
        assert whole_lowered_program(path)
    icds = list((cache / VENDORS).rglob("*.icd"))
    assert icds or icd.pip_intel_library() is None  # written where Intel's runtime is pip's
    for path in icds:  # one line naming a library again
        text = path.read_bytes().decode()
        assert text.endswith("\n") and "\n" not in text[:-1] and ".so" in text, path


# pyopencl's binary cache (drivers without their own: Intel's CPU runtime).

def _intel() -> Any:
    from backend_opencl.runtime import list_devices

    return next((d for d in list_devices() if d.platform_name.startswith("Intel(R) OpenCL")),
                None)




def _axpy(device: Any, seed: int) -> None:
    build.clear_memory_cache()
    module = backend_opencl.compile(AXPY, device=device)
    rng = np.random.default_rng(seed)
    x, y0 = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    y = y0.copy()
    module.axpy(np.float32(1.5), x, y)
    np.testing.assert_allclose(y, 1.5 * x + y0, rtol=1e-6, atol=1e-6)


def test_pyopencl_entries_are_checked_before_pyopencl_reads_them(cache: Path,
                                                                tmp_path: Path) -> None:
    from pyopencl.cache import _SourceInfo

    folder = diskcache.folder(BINARIES)
    assert folder is not None
    marker = tmp_path / "ran"
    infos = {"whole": pickle.dumps(_SourceInfo(dependencies=[], log=None)),
             "random bytes": os.urandom(40), "empty": b"",
             "planted": pickle.dumps(_Call(os.system, f"touch {marker}"))}
    for name, info in infos.items():
        (folder / name).mkdir()
        (folder / name / "info").write_bytes(info)
        (folder / name / "binary").write_bytes(b"\x7fELF binary")
        os.utime(folder / name, (1000, 1000))
    lock = folder / "lock"
    lock.touch()  # held: pyopencl may be writing the entry, so it stays
    assert not diskcache.use_binary(folder / "empty") and (folder / "empty").exists()
    os.utime(lock, (1000, 1000))  # left by a process that died
    assert [diskcache.use_binary(folder / name) for name in infos] == [True, False, False,
                                                                       False]
    assert not diskcache.use_binary(folder / "absent")
    assert sorted(p.name for p in folder.iterdir()) == ["whole"]
    assert (folder / "whole").stat().st_mtime > 1000 and not marker.exists()
    assert diskcache.STATS[BINARIES, "hits"] == 1


@pytest.mark.parametrize("how", ["random bytes", "planted"])
def test_damaged_or_planted_pyopencl_entry_is_replaced(cache: Path, tmp_path: Path,
                                                       how: str) -> None:
    device = _intel()
    if device is None:
        pytest.skip("Intel's OpenCL CPU runtime (pyopencl's binary cache) is not loaded")
    _axpy(device, 0)
    (entry,) = (p for p in (cache / BINARIES).iterdir() if p.is_dir())
    marker = tmp_path / "ran"
    planted = pickle.dumps(_Call(os.system, f"touch {marker}"))
    (entry / "info").write_bytes(os.urandom(40) if how == "random bytes" else planted)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _axpy(device, 1)
    assert not [w for w in seen if "caching failed" in str(w.message)]
    assert not marker.exists()
    diskcache.safe_loads((entry / "info").read_bytes(), diskcache.PYOPENCL_INFO)
    assert diskcache.STATS[BINARIES, "misses"] == 2
    _axpy(device, 2)
    assert diskcache.STATS[BINARIES, "hits"] == 1


# Unsafe folders: not used, said once.

def _make_unsafe(path: Path, how: str) -> str:
    if how == "other owner":
        if os.getuid() != 0:
            pytest.skip("giving a folder away needs root")
        os.chown(path, 65534, 65534)
        return f"belongs to uid 65534, not to this user (uid {os.getuid()})"
    path.chmod(0o777)
    return "may be written by others (mode 0777)"


@pytest.mark.parametrize("where", ["root", "lowered"])
@pytest.mark.parametrize("how", ["chmod 777", "other owner"])
def test_unsafe_folder_is_not_used_and_said_once(
        cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        where: str, how: str) -> None:
    (cache / LOWERED).mkdir(parents=True)
    target = cache if where == "root" else cache / LOWERED
    reason = _make_unsafe(target, how)
    planted = cache / LOWERED / "planted.pickle"
    planted.write_bytes(b"anything")
    _run_small(monkeypatch)
    _run_small(monkeypatch, seed=1)
    assert _lowered_files(cache) == [planted]
    lines = [x for x in capsys.readouterr().err.splitlines() if "disk cache not used" in x]
    assert lines == [f"tlc: warning: disk cache not used: {target} {reason}; make it "
                     "private (chmod 700) or choose another folder with TLC_CACHE_DIR"]
    assert (build.cache_directory() is None) == (where == "root")
    if where == "root":
        assert "not used: the folder may" in diskcache.describe() or how == "other owner"


# What stored programs need from outside tlc.

def _conformance_sample(count: int) -> list[Path]:
    """``count`` small enabled conformance cases, spread over the suite's names."""
    if not CONFORMANCE.is_dir():
        return []
    rows = map(json.loads, filter(str.strip, (CONFORMANCE / "index.jsonl").open()))
    paths = sorted(CONFORMANCE / f"{row['name']}.mlir" for row in rows
                   if not row.get("disabled"))
    small = [p for p in paths if p.stat().st_size < 4000]
    return small[:: max(len(small) // count, 1)][:count]


def _globals(data: bytes) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            found.add((module, name))
            return super().find_class(module, name)

    stream = io.BytesIO(data)
    while stream.tell() < len(data):  # an entry is two pickles: (tag, head), payload
        Recording(stream).load()
    return found


def test_stored_programs_need_only_allowed_globals(cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Derives what real payloads (the examples and a sample of conformance programs)
    name: tlc's classes and :data:`diskcache.ALLOWED_GLOBALS`, nothing else."""
    for path in [*sorted((ROOT / "examples").glob("*.mlir")), *_conformance_sample(24)]:
        backend_opencl.compile_stablehlo(path.read_text(), filename=str(path))
    files = _lowered_files(cache)
    assert len(files) >= 10
    named: set[tuple[str, str]] = set()
    for path in files:
        named |= _globals(path.read_bytes())
        assert compiler._load_stored(path) is not None, path
    outside = {g for g in named if not diskcache._in_tlc(g[0])}
    assert outside <= diskcache.ALLOWED_GLOBALS, outside - diskcache.ALLOWED_GLOBALS
    assert ("numpy", "dtype") in outside


def test_every_element_dtype_loads() -> None:
    """Each numpy / ml_dtypes type a StableHLO element type maps to pickles (as
    ``numpy.dtype(<type>)``) with allowed globals only, and the list names no other."""
    from frontend.ir import types

    scalar_types = {*types._FLOAT_DTYPES.values(), *types._SIGNED.values(),
                    *types._UNSIGNED.values(), np.bool_, np.complex64, np.complex128}
    named: set[tuple[str, str]] = set()
    for scalar in scalar_types:
        data = pickle.dumps(np.dtype(scalar), protocol=pickle.HIGHEST_PROTOCOL)
        assert diskcache.safe_loads(data) == np.dtype(scalar)
        named |= _globals(data)
    assert named == diskcache.ALLOWED_GLOBALS


def test_the_source_hash_covers_every_library_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored program is only read back by the very sources that wrote it: the hash
    covers every module of frontend, tensorlang and backend_opencl (after a move of the
    compiler module it covered none, and a changed tlc read stale programs)."""
    root = Path(compiler.__file__).resolve().parents[2]
    files = set(compiler.source_files())
    for package in compiler.SOURCE_PACKAGES:
        listed = set((root / package).rglob("*.py"))
        assert len(listed) > 10 and listed <= files, package
    assert Path(compiler.__file__).resolve() in files
    before = compiler._source_hash()
    monkeypatch.setattr(compiler, "_SOURCE_HASH", [])
    every = compiler._relative_sources
    monkeypatch.setattr(compiler, "_relative_sources", lambda root: every(root)[1:])
    assert compiler._source_hash() != before


def test_a_cached_program_runs_without_islpy(cache: Path) -> None:
    """A second process runs a StableHLO program from the disk cache without importing
    islpy (its modules' launch contracts are plain data, tensorlang/schedule/contracts.py)."""
    code = ("import sys, numpy as np, backend_opencl\n" + run_small(7)
            + "print('islpy' in sys.modules)\n")
    env = {**os.environ, diskcache.DIR_ENV: str(cache)}

    def islpy_imported() -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert islpy_imported() == "True"  # the cold process scheduled the kernels with isl
    assert len(_lowered_files(cache)) == 1
    assert islpy_imported() == "False"
