# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
PKGS   := packages/mdla-ir packages/mdla-target packages/mdla-legalize packages/mdla-quant packages/mdla-emu \
          packages/mdla-runtime packages/mdla-witness packages/mdla-zoo packages/mdla-compile apps/workbench apps/lipread
PYPROJECTS := $(addsuffix /pyproject.toml,$(PKGS))

.PHONY: demo test deep lint typecheck imports pytest clean venv sysdeps wheels fuzz size

venv: $(STAMP)

# torch/torchvision come first, pinned to the builds on this machine's disk, so that no
# package's looser `torch>=` pulls another build over the network.
$(STAMP): $(PYPROJECTS) requirements-dev.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.14.1 torchvision==0.29.1
	$(PIP) install -q -r requirements-dev.txt
	$(PIP) install -q -e packages/mdla-ir -e packages/mdla-target -e packages/mdla-legalize -e packages/mdla-quant \
	    -e packages/mdla-emu -e packages/mdla-runtime -e packages/mdla-witness -e 'packages/mdla-zoo[models]' -e 'packages/mdla-compile[models]' -e 'apps/workbench[models]' -e 'apps/lipread[auto]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m workbench.demo
	@echo "lipread: the three synthetic sample videos (each file name holds the sentence spoken),"
	@echo "front-end INT8 on the emulator (mtk-mdla), GRU tail in numpy"
	@for f in apps/lipread/samples/synthetic_*.mp4; do \
	    printf '   %-55s -> ' "$$(basename $$f)"; $(VENV)/bin/lipread "$$f" || exit 1; done

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

imports: $(STAMP)
	$(VENV)/bin/lint-imports

# Debian packages the tests need (clang, the aarch64 cross compiler, qemu-user, valgrind, sshd).
sysdeps:
	bash scripts/sysdeps.sh

# The suite less the deep checks, with its slowest tests named, so that growth towards the
# 30-minute budget is seen when it happens. It runs on PYTEST_WORKERS processes (pytest-xdist;
# one test at a time kept one of the two cores idle most of the run). --dist loadscope gives each
# module (or class) to one worker, so a module-scoped fixture (a compiled model, a built phone)
# is made once, not once per worker.
PYTEST_WORKERS ?= 2
pytest: $(STAMP) sysdeps
	$(PY) -m pytest -m "not deep" -n $(PYTEST_WORKERS) --dist loadscope --durations=25

# The deep checks: each package's wheel built and installed alone in a fresh venv, and the
# libFuzzer runs of the C reader and the engine. .ci/run runs them after `make test`.
deep: $(STAMP) sysdeps
	$(PY) -m pytest -m deep --durations=10

# sysdeps first: on a machine without the system tools (and no root or sudo), make test stops in
# its first seconds with one line naming the packages, before building anything.
test: sysdeps lint typecheck imports pytest size

# Lines per distribution, files over 400 lines and functions over 60 (scripts/sz.py): printed by
# every `make test` so that growth is seen when it happens, not a wave later.
size: $(STAMP)
	$(PY) scripts/sz.py

# Every package as a wheel in dist/; any one installs alone with its siblings from there:
#   pip install --find-links dist mdla-runtime
wheels: $(STAMP)
	$(PIP) wheel -q --no-deps --no-build-isolation -w dist $(PKGS)
	rm -rf $(addsuffix /build,$(PKGS))

# The engine fuzz harness (csrc/fuzz_engine.c: reader, planning, the emulator's build, compile and
# execution, the partition planner and the cpu device, under ASan + UBSan) for FUZZ_RUNS
# executions on both cores, with a progress line per
# round; prints the count, exits 1 on any finding (crash files under ~/.cache/mdla/fuzz-engine).
FUZZ_RUNS ?= 10000000
fuzz: $(STAMP)
	PYTHONPATH=. $(PY) -m tests.runtime.fuzzing $(FUZZ_RUNS)

clean:
	rm -rf $(VENV) dist .mypy_cache .pytest_cache .ruff_cache
