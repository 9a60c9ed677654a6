"""Settings for the whole test suite."""

import os

# Programs lowered from StableHLO get check-bounds here, as users' programs always do
# (backend_opencl.api.compiler.verify_lowered): a lowering that indexes out of bounds
# fails its tests at compile time.
os.environ.setdefault("TLC_VERIFY", "1")
