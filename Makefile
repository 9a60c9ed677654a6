# tlc: `make demo` and `make test` set everything up on a fresh machine with python3 and make.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench setup system-pocl lint clean

demo: setup
	$(PY) examples/demo.py

test: setup
	$(PY) -m pytest

# Side by side with XLA CPU (jax) and IREE (benchmarks/stablehlo_models.py; docs/performance.md).
# BENCH_ARGS passes options, e.g. make bench BENCH_ARGS='--quick --filter softmax'.
bench: setup $(VENV)/.bench-installed
	$(PY) benchmarks/stablehlo_models.py $(BENCH_ARGS)

$(VENV)/.bench-installed: pyproject.toml
	$(PY) -m pip install -q -e '.[dev,bench]'
	touch $@

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-pocl
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

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

lint: setup
	$(VENV)/bin/ruff check frontend tensorlang backend_opencl tests

clean:
	rm -rf $(VENV) build *.egg-info
