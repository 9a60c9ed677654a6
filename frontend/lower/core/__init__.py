"""The lowering machinery shared by every op family: the driver (:mod:`.driver`), the
registry the families fill (:mod:`.registry`), the kernel builder (:mod:`.builder`), fusion
(:mod:`.fused`), types, and the rewrites and analyses the driver runs on every function.
Nothing here imports a family (see :mod:`frontend.lower.families`)."""
