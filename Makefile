# fakefs — see README.md.  `make run` mounts, `make test` tests.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
FAKEFS := $(VENV)/bin/fakefs
MNT ?= /tmp/fakefs
CMDLINE ?=
SEED ?= 1
UPSTREAM ?= ../shared/upstream
SYSPKGS := fuse3 libfuse3-dev pkg-config trace-cmd

.PHONY: install sysdeps bin-link run test unit selftests ftracetest-table bench stress clean

install: sysdeps $(VENV)/.installed bin-link

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

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

run: install
	mkdir -p $(MNT)
	$(FAKEFS) mount -f --seed $(SEED) --cmdline "$(CMDLINE)" $(MNT)

test: install unit selftests

unit: install
	$(PY) -m pytest -q

# The whole upstream ftracetest suite, with the project's and the series' tests:
# fails on any FAIL or UNDEFINED.
selftests: install
	$(FAKEFS) selftest --extra selftests/stackmap $$([ -d $(UPSTREAM) ] && echo --extra $(UPSTREAM)) all

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
