# tlc: `make demo` and `make test` set everything up on a fresh machine with python3 and make.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench setup system-pocl system-oclgrind lint clean

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
	@$(MAKE) --no-print-directory system-oclgrind
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
	$(VENV)/bin/ruff check frontend tensorlang backend_opencl tests

clean:
	rm -rf $(VENV) build *.egg-info
