"""The OpenCL runtime through pyopencl: the only package of tlc that imports pyopencl."""
