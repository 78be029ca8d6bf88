"""The work directory: a copy of the harness, the --extra tests, the selection.

The upstream ftrace selftest directory is copied to ``<work>/ftrace``, each
``--extra`` directory into ``test.d/<name>/`` (so its tests find
``test.d/functions``), and the TEST arguments are resolved to ``.tc`` files
of that copy, numbered as ftracetest numbers its cases.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SelftestError

_GLOB_CHARS = set("*?[")


@dataclass
class WorkTree:
    root: Path                     # the work directory
    ftrace: Path                   # root/ftrace: ftracetest + test.d
    extras: dict[str, Path] = field(default_factory=dict)   # test.d name -> source dir

    @property
    def test_d(self) -> Path:
        return self.ftrace / "test.d"

    def rel(self, test: Path) -> str:
        return test.relative_to(self.test_d).as_posix()


def _ignore_copy(directory, names):
    return [n for n in names if n in ("logs", "__pycache__") or n.startswith(".")]


def make_work_tree(ftrace_src: Path, root: Path) -> WorkTree:
    """Copy the ftrace selftest directory to ``root/ftrace``."""
    dst = root / "ftrace"
    shutil.copytree(ftrace_src, dst, symlinks=True, ignore=_ignore_copy)
    return WorkTree(root=root, ftrace=dst)


def _unique_name(tree: WorkTree, base: str) -> str:
    name = base or "extra"
    n = 1
    while (tree.test_d / name).exists():
        n += 1
        name = "%s-%d" % (base, n)
    return name


def add_extra(tree: WorkTree, src: Path) -> str:
    """Copy the test directory *src* into ``test.d/<name>/``; return the name.

    Files are copied byte for byte (no exec bits are needed: ftracetest
    sources the ``.tc`` files).
    """
    src = Path(src)
    if not src.is_dir():
        raise SelftestError("--extra %s: not a directory" % src)
    real = src.resolve()
    for name, s in tree.extras.items():
        if s == real:
            return name
    if not any(real.rglob("*.tc")):
        raise SelftestError("--extra %s: no .tc files in it" % src)
    name = _unique_name(tree, real.name)
    dst = tree.test_d / name
    shutil.copytree(real, dst, symlinks=False, ignore=_ignore_copy,
                    copy_function=shutil.copyfile)
    for d in [dst, *(p for p in dst.rglob("*") if p.is_dir())]:
        d.chmod(0o755)   # copytree copies directory modes (e.g. a read-only source)
    tree.extras[name] = real
    return name


def _tc_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.tc") if p.is_file())


def select_tests(tree: WorkTree, specs: list[str], cwd: Path | None = None) -> list[Path]:
    """Resolve TEST arguments to ``.tc`` files of the work tree.

    Each spec is tried, in order, as: ``all`` (every test in test.d); a path
    relative to test.d (file or directory); a path relative to each extra
    directory; a glob over the paths relative to test.d (or to an extra
    directory); an existing path (a ``.tc`` file or a directory of tests,
    which is copied in like an --extra).  Without specs: the tests of the
    extra directories, or all of test.d if there are none.
    """
    cwd = cwd or Path.cwd()
    test_d = tree.test_d
    out: list[Path] = []

    def add(paths):
        for p in paths:
            if p not in out:
                out.append(p)

    def expand(p: Path) -> list[Path]:
        if p.is_dir():
            return _tc_files(p)
        if p.is_file() and p.name.endswith(".tc"):
            return [p]
        return []

    if not specs:
        if tree.extras:
            for name in tree.extras:
                add(_tc_files(test_d / name))
        else:
            add(_tc_files(test_d))
        return out

    all_rel = None
    for spec in specs:
        if spec == "all":
            add(_tc_files(test_d))
            continue
        s = spec.rstrip("/") or spec
        found: list[Path] = []
        if not os.path.isabs(s) and ".." not in Path(s).parts:
            found = expand(test_d / s)
            if not found:
                for name in tree.extras:
                    found += expand(test_d / name / s)
            if not found and _GLOB_CHARS & set(s):
                if all_rel is None:
                    all_rel = [(tree.rel(p), p) for p in _tc_files(test_d)]
                pats = [s] + ["%s/%s" % (name, s) for name in tree.extras]
                found = [p for rel, p in all_rel
                         if any(fnmatch.fnmatchcase(rel, pat) or
                                fnmatch.fnmatchcase(rel, pat + "/*") for pat in pats)]
        if not found:
            p = Path(s) if os.path.isabs(s) else cwd / s
            if p.is_dir() and any(p.rglob("*.tc")):
                name = add_extra(tree, p)
                found = _tc_files(test_d / name)
            elif p.is_file() and p.name.endswith(".tc"):
                real = p.resolve()
                for name, src in tree.extras.items():
                    if real.is_relative_to(src):
                        found = [test_d / name / real.relative_to(src)]
                        break
                else:
                    dst_dir = test_d / "cmdline"
                    dst_dir.mkdir(exist_ok=True)
                    dst = dst_dir / real.name
                    if not dst.exists():
                        shutil.copyfile(real, dst)
                    found = [dst]
        if not found:
            raise SelftestError("no test matches %r (looked in test.d%s)" % (
                spec, "".join(", " + n for n in tree.extras)))
        add(found)
    return out


_INSTANCE_RE = re.compile(r"^#[ \t]*flags:.*instance", re.M)
_DESC_RE = re.compile(r"^#[ \t]*description:(.*)$", re.M)


def expected_cases(tree: WorkTree, tests: list[Path]) -> list[tuple[int, str, bool]]:
    """ftracetest's case numbering: (caseno, test path rel. to test.d, instance?)."""
    cases = []
    n = 0
    for t in tests:
        n += 1
        cases.append((n, tree.rel(t), False))
    for t in tests:
        if _INSTANCE_RE.search(t.read_text(errors="replace")):
            n += 1
            cases.append((n, tree.rel(t), True))
    return cases



# Tests that need what a user namespace cannot give (mounting a real
# tracefs, remounting with options): reported UNSUPPORTED there.
NEEDS_INIT_USERNS = {
    "00basic/mount_options.tc": "mounts a real tracefs (not allowed in a user namespace)",
    "00basic/test_ownership.tc": "remounts tracefs with gid= (not allowed in a user namespace)",
}

# Tests whose checks need what the test's own shell does where no request
# reaches the mount (a system call touching no file of ours): the simulated
# kernel never sees it, so they are reported UNSUPPORTED, with the reason.
NEVER_REACHES_MOUNT = {
    "dynevent/add_remove_eprobe.tc":
        "expects its shell's chdir() in sys_enter_chdir: the shell's own system calls never "
        "reach the mount, so the simulated kernel has no such event",
    "kprobe/kprobe_args_user.tc":
        "reads user memory in do_sys_openat2() at the shell's own open() of /dev/null and in "
        "vfs_symlink() at ln's symlink() in $TMPDIR: system calls that never reach the mount, "
        "so the simulated kernel makes no such call",
}


def mark_unsupported_in_userns(tree: "WorkTree", tests: list[Path]) -> list[str]:
    """Make the tests a user namespace cannot run exit UNSUPPORTED (in the
    work tree's copy only); returns their names."""
    return mark_unsupported(tree, tests, NEEDS_INIT_USERNS)


def mark_unsupported(tree: "WorkTree", tests: list[Path], reasons: dict) -> list[str]:
    """Make the tests named in ``reasons`` exit UNSUPPORTED after saying
    why (in the work tree's copy only); returns their names."""
    marked = []
    for t in tests:
        rel = tree.rel(t)
        why = reasons.get(rel)
        if why is None:
            continue
        lines = t.read_text().splitlines(keepends=True)
        n = 0                          # the leading comments (requires: ...) stay first
        while n < len(lines) and lines[n].startswith("#"):
            n += 1
        t.write_text("".join(lines[:n]) + "echo %s\nexit_unsupported\n" % shlex.quote("fakefs: " + why)
                     + "".join(lines[n:]))
        marked.append(rel)
    return marked
