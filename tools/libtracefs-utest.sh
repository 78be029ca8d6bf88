#!/bin/sh
# libtracefs's own unit tests (utest/trace-utest) against the simulated
# kernel, in `fakefs sandbox` (issue 35: "libtracefs 1.6.4's unit tests pass
# inside the sandbox wherever they pass on a real kernel").  Not part of
# `make test`.  Needs root (the sandbox's tracefs line), gcc, make and
# Debian's libtraceevent-dev, libcunit1-dev and pkg-config:
#
#   apt-get install libtraceevent-dev libcunit1-dev pkg-config
#   tools/libtracefs-utest.sh [LIBTRACEFS_SOURCE_TREE]
#
# Without a tree, libtracefs 1.6.4 (Debian 12's) is cloned from kernel.org.
# The tests link libtracefs statically (they call its internal
# find_tracing_dir()), so the library is built from the same tree.
set -eu
src=${1:-}
work=$(mktemp -d /tmp/libtracefs-utest.XXXXXX)
if [ -z "$src" ]; then
    src=$work/libtracefs
    git clone -q --depth 1 --branch libtracefs-1.6.4 \
        https://git.kernel.org/pub/scm/libs/libtrace/libtracefs.git "$src"
fi
make -C "$src" -s >"$work/build.log" 2>&1
make -C "$src" -s test >>"$work/build.log" 2>&1
fakefs=$(command -v fakefs || echo "$(dirname "$0")/../.venv/bin/fakefs")
exec "$fakefs" sandbox -q -- "$src/utest/trace-utest"
