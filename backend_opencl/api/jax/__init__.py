"""``tlc.jax.jit``: per-signature compiles (:mod:`.bridge`), the ``tlc_call`` primitive under
jax's transforms (:mod:`.primitive`) and ahead-of-time ``lower``/``compile`` (:mod:`.aot`).
jax is imported when a function is wrapped, never by ``import backend_opencl``."""
