"""``fakefs selftest``: run the upstream ftracetest against a fakefs mount.

The upstream harness (``ftracetest`` + ``test.d/functions`` + ``test.d/``) is
never part of this repository.  It is taken at run time from a kernel tree
(``--ksrc DIR`` or ``KSRC=DIR``) or, by default, from Debian's
``linux-source-6.12`` package, which is downloaded once with ``apt-get
download`` and cached (with the extracted ftrace selftest directory) under
``${XDG_CACHE_HOME:-~/.cache}/fakefs/``.

A run:

1. copies the harness into a temporary work directory and every ``--extra``
   directory into ``test.d/<name>/`` (so the tests find ``test.d/functions``);
2. re-executes itself inside ``unshare -m --propagation private`` (the
   *inner* stage; without root, ``unshare -Ur -m ...``: a user namespace
   where the user is root, if the kernel allows unprivileged ones), which
   detaches every ``/proc/mounts`` line mentioning ``tracefs`` (only in that
   private namespace), starts ``fakefs mount -f -o fsname=tracefs`` on a
   temporary mount point, bind-mounts its ``sys/kernel/tracing`` onto
   ``/sys/kernel/tracing``, detaches the original mount (so the first
   ``tracefs`` line is ``/sys/kernel/tracing``, as ftracetest wants), runs
   ``ftracetest`` on the chosen tests, then unmounts and stops the daemon;
3. prints ftracetest's summary and a final ``N passed, N failed, N skipped``
   line; the exit status is non-zero when a test failed or none ran.

The modules, in the order of a run:

* ``command``: the arguments, the outer stage (``run``) and ``main``;
* ``fetch``: obtaining ftracetest (kernel tree, tarball, the cached .deb);
* ``worktree``: the work directory, the --extra tests, the test selection;
* ``namespace``: host checks and the mount table of the private namespace;
* ``inner``: the inner stage (daemon, bind mounts, ftracetest, clean-up);
* ``results``: parsing ftracetest's output and the final report;
* ``errors``: SelftestError and the harness's messages.
"""

from .command import add_arguments, main, run
from .errors import SelftestError

__all__ = ["add_arguments", "main", "run", "SelftestError"]
