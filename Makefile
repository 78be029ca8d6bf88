# fakefs — see README.md.  `make run` mounts, `make test` tests.
# make test:  everything CI runs (~10 min on 2 idle fast cores, ~30 on a slow host): the
#             ftracetest harness fetched (once: linux-source-6.12, ~153 MB, announced), then
#             the unit tests (pytest-xdist, PYTEST_JOBS=2) and the upstream ftracetest side
#             by side (its second shard once the unit tests are done); one line per phase
#             with its time.  Parts: make unit, make selftests
#             (alone: SELFTEST_JOBS=2 shards at once, each its own mount).
# make check: the unit tests that mount nothing (-m "not mount"), in a few minutes: for
#             development.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
FAKEFS := $(VENV)/bin/fakefs
MNT ?= /tmp/fakefs
CMDLINE ?=
SEED ?= 1
UPSTREAM ?= ../shared/upstream
PYTEST_JOBS ?= 2
# ftracetest's shards (fakefs selftest -j: each takes the next tests left): 2 alone; in make
# test one beside the unit tests and the second once they are done (--more-jobs-when: two
# at once beside them left 2 cores to 4 busy processes, and a sandbox test of 44 s went
# past its 120)
SELFTEST_JOBS ?= 2
TEST_SELFTEST_JOBS ?= 2
PYTEST_ARGS ?=
SYSPKGS := fuse3 libfuse3-dev pkg-config trace-cmd

.PHONY: install sysdeps bin-link bytecode run test unit check fetch selftests ftracetest-table bench stress clean

install: sysdeps $(VENV)/.installed bin-link bytecode

# fakefs's bytecode, made here: with PYTHONDONTWRITEBYTECODE set (as in some CI
# containers) every process would compile every module again (~0.3 s a mount)
bytecode: $(VENV)/.installed
	@$(PY) -m compileall -q fakefs >/dev/null

# `fakefs` on the user's PATH: a symbolic link in BINDIR to the venv's (said when made)
BINDIR ?= $(HOME)/.local/bin
bin-link: $(VENV)/.installed
	@want="$(abspath $(FAKEFS))"; link="$(BINDIR)/fakefs"; \
	if [ -e "$$link" ] && [ ! -L "$$link" ]; then \
	  echo "$$link exists and is not a link: left alone; use $$want"; \
	elif [ "$$(readlink "$$link")" != "$$want" ]; then \
	  mkdir -p "$(BINDIR)" && ln -sfn "$$want" "$$link" && echo "installed $$link -> $$want"; \
	fi; \
	case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "$(BINDIR) is not on your PATH; add it:" \
	  "export PATH=\"$(BINDIR):\$$PATH\" (e.g. in ~/.profile)";; esac

sysdeps:
	@missing=""; for p in $(SYSPKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# (setup.py builds the compiled data plane: a changed .pyx/.pxd, or a Python module it
# compiles as it is (compiled.txt), rebuilds it)
COMPILED_PY := $(shell grep -v '^\#' compiled.txt)
$(VENV)/.installed: pyproject.toml setup.py compiled.txt $(COMPILED_PY) $(wildcard fakefs/*/*.pyx fakefs/*/*/*.pyx fakefs/*/*.pxd fakefs/*/*/*.pxd)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

run: install
	mkdir -p $(MNT)
	$(FAKEFS) mount -f --seed $(SEED) --cmdline "$(CMDLINE)" $(MNT)

# The unit tests, with a line before and after: what runs, its wall and CPU time (the CPU
# of mounted daemons, which detach, is not counted).  env --default-signal: the cats and
# shells the tests start must end on SIGINT even when make runs as a background job.
UNIT_RUN = echo "== unit tests ($$(find tests -name 'test_*.py' | wc -l) files, parallel x$(PYTEST_JOBS)) =="; \
	TIMEFORMAT="== unit tests: done in %0R s (CPU %0U s user, %0S s sys) =="; \
	time env --default-signal=INT $(PY) -m pytest -q -n $(PYTEST_JOBS) --dist loadfile $(PYTEST_ARGS)

# The whole upstream ftracetest suite, with the project's tests and, when $(UPSTREAM) is
# there, the series' own (seed 004's patch 3/3): fails on any FAIL or UNDEFINED.
SELFTESTS_RUN = if [ -d $(UPSTREAM) ]; then extra="--extra $(UPSTREAM)"; \
	echo "== ftracetest: the upstream suite, selftests/stackmap and $(UPSTREAM) =="; \
	else extra=""; echo "== ftracetest: the upstream suite and selftests/stackmap;" \
	  "the series' own tests skipped: $(UPSTREAM) not present (seed 004's patch 3/3:" \
	  "stackmap-basic.tc, stackmap-instance-gate.tc) =="; fi; \
	TIMEFORMAT="== ftracetest: done in %0R s (CPU %0U s user, %0S s sys) =="; \
	time env --default-signal=INT $(FAKEFS) selftest --extra selftests/stackmap $$extra \
	  -j $(JOBS) $(MORE_JOBS) --timeout 3600 all

# ftracetest runs in the background into a log while the unit tests run in the foreground;
# the log is shown (followed while it still runs) once they are done, and its second shard
# starts then (the file beside the log).  Fails if either does.
# (env --default-signal: a background job ignores SIGINT; Ctrl-C stops and cleans up both.)
test: install fetch
	@t0=$$SECONDS; log=$$(mktemp "$${TMPDIR:-/tmp}/fakefs-ftracetest.XXXXXX"); unitdone=$$log.unit-done; \
	echo "== ftracetest: started in the background (its output: $$log) =="; \
	( $(SELFTESTS_RUN) ) >"$$log" 2>&1 </dev/null & ft=$$!; \
	( $(UNIT_RUN) ); unit=$$?; touch "$$unitdone"; \
	if kill -0 $$ft 2>/dev/null; then \
	  echo "== ftracetest: still running after $$((SECONDS - t0)) s; its output so far and on =="; \
	  tail -n +1 -f --pid=$$ft "$$log"; \
	else echo "== ftracetest: its output =="; cat "$$log"; fi; \
	wait $$ft; ft=$$?; rm -f "$$log" "$$unitdone"; \
	echo "== make test: unit tests $$([ $$unit = 0 ] && echo passed || echo FAILED)," \
	     "ftracetest $$([ $$ft = 0 ] && echo passed || echo FAILED), $$((SECONDS - t0)) s in all =="; \
	[ $$unit = 0 ] && [ $$ft = 0 ]

unit: install
	@$(UNIT_RUN)

check: install
	@echo "== quick check: the unit tests that mount nothing (-m 'not mount'), parallel x$(PYTEST_JOBS) =="
	@TIMEFORMAT="== quick check: done in %0R s (CPU %0U s user, %0S s sys) =="; \
	time $(PY) -m pytest -q -n $(PYTEST_JOBS) --dist loadfile -m "not mount" $(PYTEST_ARGS)

# The ftracetest harness: from KSRC if set, else Debian's linux-source-6.12, downloaded once
# into ~/.cache/fakefs (its size said before it starts).
fetch: install
	@echo "== fetch: the ftracetest harness =="
	@$(FAKEFS) selftest --list all >/dev/null || { echo "== fetch: FAILED (the error is" \
	  "above); 'make unit' and 'make check' run without it =="; exit 1; }

selftests: install
	@$(SELFTESTS_RUN)

# (the shards of each: after the rules, whose first line the docs' tests read)
test: JOBS = $(TEST_SELFTEST_JOBS)
test: MORE_JOBS = --more-jobs-when "$$unitdone"
selftests: JOBS = $(SELFTEST_JOBS)

# Every upstream case with its result, and why it does not pass.
ftracetest-table: install
	$(FAKEFS) selftest --table docs/ftracetest-6.12.md all

bench: install
	$(PY) -m fakefs.bench

# Long fuzz + 50-shell runs with the latency targets (make test runs short ones).
# e.g. make stress STRESS_ARGS="--fuzz-seconds 600 --shells 80"
STRESS_ARGS ?=
stress: install
	$(PY) -m fakefs.stress $(STRESS_ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
