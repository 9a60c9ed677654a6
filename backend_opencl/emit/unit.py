"""One OpenCL translation unit: extension pragmas, shared helpers and kernels."""

from __future__ import annotations

from backend_opencl.emit import prelude


class Unit:
    """Collects what the kernels of one program need: prelude features and helper functions."""

    def __init__(self) -> None:
        self.features: set[str] = set()
        self.helpers: list[str] = []
        self._helper_names: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def need(self, feature: str) -> None:
        """Require a prelude feature (see :mod:`backend_opencl.emit.prelude`)."""
        self.features.add(feature)

    def helper(self, base: str, text: str) -> str:
        """Register a helper function whose name in ``text`` is ``@NAME@``; reuse duplicates."""
        name = self._helper_names.get(text)
        if name is None:
            count = self._counts.get(base, 0)
            self._counts[base] = count + 1
            name = f"tlc_{base}_{count}"  # tlc_ names never clash with IR names
            self._helper_names[text] = name
            self.helpers.append(text.replace("@NAME@", name))
        return name

    def source(self, kernels: list[str]) -> str:
        """The complete OpenCL C source."""
        parts = [prelude.header(self.features)]
        parts += self.helpers
        parts += kernels
        return "\n".join(p for p in parts if p)
