# tlc: `make demo` and `make test` set everything up on a fresh machine with python3 and make.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Quiet installs: setuptools' build warnings (editable installation, ...) are not ours to act on.
PIP    := PYTHONWARNINGS=ignore $(PY) -m pip install -q --disable-pip-version-check

.PHONY: demo test bench jax setup mpi system-mpi system-pocl system-oclgrind lint typecheck clean

demo: setup
	$(PY) examples/demo.py

test: setup
	@$(PY) -c "import jax" 2>/dev/null || echo "note: jax is not installed: tests/jax skip (make jax installs it, ~400 MB)"
	$(PY) -m pytest

# The JAX bridge (tlc.jax.jit) and its tests: the optional extra `jax`.
jax: setup $(VENV)/.jax-installed

$(VENV)/.jax-installed: pyproject.toml
	@echo "setup: installing jax into $(abspath $(VENV)) (pip install -e '.[dev,jax]')"
	@$(PIP) -e '.[dev,jax]'
	@touch $@

# Side by side with XLA CPU (jax) and IREE (benchmarks/stablehlo_models.py; docs/performance.md).
# BENCH_ARGS passes options, e.g. make bench BENCH_ARGS='--quick --filter softmax'.
bench: setup $(VENV)/.bench-installed
	$(PY) benchmarks/stablehlo_models.py $(BENCH_ARGS)

$(VENV)/.bench-installed: pyproject.toml
	@echo "setup: installing jax and IREE into $(abspath $(VENV)) (pip install -e '.[dev,bench]')"
	@$(PIP) -e '.[dev,bench]'
	@touch $@

# Real JAX models (flax, haiku, equinox, optax, keras, diffrax) through tlc.jax.jit against
# jax.jit (benchmarks/jax_models.py; docs/performance.md, "Real JAX models"). BENCH_ARGS
# passes options, e.g. make bench-models BENCH_ARGS='--quick --filter mlp'.
.PHONY: bench-models
bench-models: setup $(VENV)/.models-installed
	$(PY) benchmarks/jax_models.py $(BENCH_ARGS)

$(VENV)/.models-installed: pyproject.toml
	@echo "setup: installing the model libraries into $(abspath $(VENV)) (pip install -e '.[dev,models]')"
	@$(PIP) -e '.[dev,models]'
	@touch $@

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-pocl
	@$(MAKE) --no-print-directory system-oclgrind
	@test -d $(VENV) || { echo "setup: creating the virtual environment $(abspath $(VENV))"; \
	  $(PYTHON) -m venv $(VENV); }
	@echo "setup: installing tlc (editable) and its test tools into $(abspath $(VENV))"
	@$(PIP) --upgrade pip
	@$(PIP) -e '.[dev]'
	@$(MAKE) --no-print-directory mpi
	@$(PY) -c "from backend_opencl.runtime import device_reason, get_device; \
	  print(f'setup: OpenCL device: {get_device().label} ({device_reason()})')" \
	  || echo "setup: no OpenCL device found (docs/devices.md)"
	@echo "setup: done; the tlc command is $(abspath $(VENV))/bin/tlc"
	@touch $(STAMP)

# Programs on several processes (docs/distributed.md): mpi4py and MPICH from PyPI, no root
# needed. Never fails: without them tests/distributed is skipped.
mpi:
	@$(PIP) -e '.[mpi]' >/dev/null 2>&1 && echo "setup: MPI: mpi4py and MPICH installed" \
	  || echo "setup: MPI: install failed; tests/distributed will be skipped"

# Open MPI from Debian (as root), for clusters that use it: then TLC_MPIEXEC=mpiexec and an
# mpi4py built against it (docs/distributed.md). Never fails; not part of setup.
system-mpi:
	@if command -v ompi_info >/dev/null; then echo "system MPI: Open MPI already installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null 2>&1 \
	    && echo "system MPI: Open MPI installed" || echo "system MPI: install failed"; \
	else echo "system MPI: not root or no apt-get"; fi

# Debian's PoCL 3.1 inlines OpenCL builtins (PyPI's 3.0 does not): install it when we can.
# Never fails: without root, apt-get or network, PyPI's PoCL is used (docs/devices.md).
system-pocl:
	@if [ -e /etc/OpenCL/vendors/pocl.icd ]; then \
	  echo "system PoCL: already installed (/etc/OpenCL/vendors/pocl.icd)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "system PoCL: installing Debian's pocl-opencl-icd (apt-get, as root)"; \
	  if apt-get update -qq -o Acquire::Retries=1 -o Acquire::http::Timeout=30 >/dev/null 2>&1 \
	     && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd >/dev/null 2>&1 \
	     && [ -e /etc/OpenCL/vendors/pocl.icd ]; then \
	    echo "system PoCL: installed"; \
	  else \
	    echo "system PoCL: install failed; PyPI's PoCL will be used"; \
	  fi; \
	else \
	  echo "system PoCL: not root or no apt-get; PyPI's PoCL will be used"; \
	fi

# Oclgrind checks generated kernels for invalid accesses and data races
# (tests/backend/test_oclgrind.py, docs/devices.md). Never fails: without it those tests skip.
system-oclgrind:
	@if [ -e /usr/lib/oclgrind/liboclgrind-rt-icd.so ]; then \
	  echo "Oclgrind: already installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Oclgrind: installing Debian's oclgrind (apt-get, as root)"; \
	  if { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq oclgrind >/dev/null 2>&1 \
	       || { apt-get update -qq -o Acquire::Retries=1 -o Acquire::http::Timeout=30 >/dev/null 2>&1 \
	            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq oclgrind >/dev/null 2>&1; }; } \
	     && [ -e /usr/lib/oclgrind/liboclgrind-rt-icd.so ]; then \
	    echo "Oclgrind: installed"; \
	  else \
	    echo "Oclgrind: install failed; the Oclgrind tests will be skipped"; \
	  fi; \
	else \
	  echo "Oclgrind: not root or no apt-get; the Oclgrind tests will be skipped"; \
	fi

lint: setup
	$(VENV)/bin/ruff check frontend tensorlang backend_opencl tlc tests benchmarks examples

# mypy over the packages listed in pyproject.toml's [tool.mypy] (those that pass cleanly).
typecheck: setup
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build *.egg-info
