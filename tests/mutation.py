"""A small seeded mutation fuzzer shared by the parser fuzz tests.

Each case takes a seed file and applies 1-4 byte- or token-level edits: delete,
duplicate, swap, insert punctuation or digits (huge numbers included), replace a
number, and deep nesting of brackets.  Everything is drawn from ``random.Random``
with a fixed seed, so a case is reproduced by its (seed, index) pair.

The budget is a number of cases (deterministic), scaled by the ``TLC_FUZZ_CASES``
environment variable; ``TLC_FUZZ_SEED`` picks another stream (docs/design.md,
"Parser fuzzing").
"""

from __future__ import annotations

import os
import random
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

_TOKEN = re.compile(r'\s+|"(?:[^"\\\n]|\\.)*"|[%@#!^]?[\w.$\-]+|->|.', re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
PUNCT = list("()[]{}<>,:=?*x-+.%@#!^\"'\\") + ["->", "\n", " ", "\r", "\t", "\x00", "é",
                                                "\u2028", "\ufeff", "\udc80", "{-#"]
NUMBERS = ["0", "1", "-1", "7", "1.5", "1e400", "-0.0", "0x7FC00000", "2147483648",
           "4294967296", "9223372036854775807", "9223372036854775808",
           "18446744073709551616", "17179869184", "99999999999999999999999999",
           "9" * 5000, "0" * 5000 + "1"]  # int() refuses over 4300 digits
_LOCATED = re.compile(r"\S+:\d+:\d+: error: ")
OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def budget(default: int) -> int:
    """Cases to run: ``TLC_FUZZ_CASES`` when set, else ``default`` (the CI budget)."""
    return int(os.environ.get("TLC_FUZZ_CASES", default))


def base_seed() -> int:
    """The stream's seed: ``TLC_FUZZ_SEED`` when set, else 0."""
    return int(os.environ.get("TLC_FUZZ_SEED", 0))


def mutate(text: str, rng: random.Random) -> str:
    """``text`` with 1-4 random edits."""
    for _ in range(rng.randint(1, 4)):
        text = rng.choice(_EDITS)(text, rng)
    return text


def cases(seeds: list[Path], count: int, seed: int) -> Iterator[tuple[int, str, str]]:
    """``(index, seed file name, mutated text)`` for ``count`` cases of stream ``seed``."""
    texts = [(p.name, p.read_text()) for p in seeds]
    for index in range(count):
        rng = random.Random(f"{seed}:{index}")
        name, text = rng.choice(texts)
        yield index, name, mutate(text, rng)


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError when the body runs longer than ``seconds`` (a hang is a bug)."""
    def _expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"parser ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, _expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _span(text: str, rng: random.Random) -> tuple[int, int]:
    i = rng.randrange(len(text) + 1)
    return i, min(len(text), i + rng.choice([1, 1, 2, 5, 20, 80]))


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _delete(text: str, rng: random.Random) -> str:
    i, j = _span(text, rng)
    return text[:i] + text[j:]


def _duplicate(text: str, rng: random.Random) -> str:
    i, j = _span(text, rng)
    return text[:j] + text[i:j] * rng.choice([1, 1, 2, 50]) + text[j:]


def _swap(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if len(toks) < 2:
        return text
    a, b = rng.randrange(len(toks)), rng.randrange(len(toks))
    toks[a], toks[b] = toks[b], toks[a]
    return "".join(toks)


def _token_edit(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    k = rng.randrange(len(toks))
    if rng.random() < 0.5:
        del toks[k]
    else:
        toks.insert(k, toks[rng.randrange(len(toks))])
    return "".join(toks)


def _insert(text: str, rng: random.Random, pieces: list[str]) -> str:
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(pieces) + text[i:]


def _insert_punct(text: str, rng: random.Random) -> str:
    return _insert(text, rng, PUNCT)


def _insert_digits(text: str, rng: random.Random) -> str:
    return _insert(text, rng, NUMBERS)


def _replace_number(text: str, rng: random.Random) -> str:
    found = list(_NUMBER.finditer(text))
    if not found:
        return _insert_digits(text, rng)
    m = rng.choice(found)
    return text[:m.start()] + rng.choice(NUMBERS) + text[m.end():]


def _nest(text: str, rng: random.Random) -> str:
    """Wrap a span (or an existing bracket's content) in hundreds of brackets."""
    depth = rng.choice([50, 300, 1000, 3000])
    opener = rng.choice(list(OPENERS))
    found = [m.start() for m in re.finditer(r"[(\[{<]", text)]
    if found and rng.random() < 0.7:
        i = rng.choice(found)
        opener = text[i]
        j = i + 1
    else:
        i = j = rng.randrange(len(text) + 1)
    close = OPENERS[opener] * depth if rng.random() < 0.8 else ""
    inner_end = min(len(text), j + rng.choice([0, 3, 12]))
    return text[:j] + opener * depth + text[j:inner_end] + close + text[inner_end:]


_EDITS: list[Callable[[str, random.Random], str]] = [
    _delete, _duplicate, _swap, _token_edit, _insert_punct, _insert_digits, _replace_number,
    _replace_number, _nest,
]


def escapes(parse: Callable[[str], object], error: type[Exception], seeds: list[Path],
            count: int, seed: int, limit_s: int = 20) -> list[str]:
    """Run ``count`` cases; describe each that raised anything but a located ``error``.

    A located error reads ``file:line:col: error: ...``; a case that runs longer than
    ``limit_s`` seconds counts as a hang.
    """
    bad = []
    for index, name, text in cases(seeds, count, seed):
        try:
            with time_limit(limit_s):
                parse(text)
        except error as exc:
            if not _LOCATED.match(str(exc)):
                bad.append(f"case {seed}:{index} from {name}: unlocated error: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - any other exception is the finding
            bad.append(f"case {seed}:{index} from {name}: {type(exc).__name__}: "
                       f"{str(exc)[:200]}")
    return bad
