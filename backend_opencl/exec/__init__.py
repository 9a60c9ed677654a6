"""Running compiled programs: kernels called by name (:mod:`.module`) and StableHLO host
plans (:mod:`.executable`), written once against the runtime protocols of :mod:`.runtime`
(OpenCL through pyopencl, SYCL through dpctl)."""
