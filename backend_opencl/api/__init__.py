"""The public API behind ``backend_opencl.compile``/``compile_stablehlo``: the composition
root (:mod:`.compiler`), the tuned-block cache compiles read (:mod:`.tuned`) and the JAX
bridge (:mod:`.jax`)."""
