"""The SYCL runtime through dpctl: the only package of tlc that imports dpctl."""
