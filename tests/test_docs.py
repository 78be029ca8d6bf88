"""The shell blocks of the docs run as written (on a mount point of their
own; the lessons have their own runner, the README tour tests/test_readme.py)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import pytest

from mountlib import REPO, fresh_mountpoint, is_mounted, requires_fuse

# doc -> (the mount point its commands use, repository files its commands
# read and may rewrite: they run on copies)
DOCS = {"docs/pictures.md": ("/tmp/k", ()),
        "docs/lessons/README.md": ("/tmp/lesson", ("docs/lessons/03-stackmap.md",))}


def leaves_it_mounted(script: str) -> bool:
    """Whether the commands leave the mount for the test to unmount."""
    return "fakefs umount" not in script


def sh_blocks(doc: str) -> list[str]:
    with open(os.path.join(REPO, doc)) as fh:
        return re.findall(r"```sh\n(.*?)```", fh.read(), re.S)


def shown_heads(doc: str) -> list[tuple[str, list[str]]]:
    """(FILE, the lines shown) for each ``sh`` block that ends with ``head -N
    FILE`` and is followed by a ``text`` block: what the doc says FILE begins
    with.  The doc says the counts at the ends of the lines vary."""
    with open(os.path.join(REPO, doc)) as fh:
        text = fh.read()
    found = []
    for m in re.finditer(r"```sh\n(?:.*\n)?head -(\d+) (\S+)\n```\n+```text\n(.*?)```", text,
                         re.S):
        lines = m.group(3).splitlines()
        assert len(lines) == int(m.group(1)), (doc, m.group(0))
        found.append((m.group(2), lines))
    return found


def without_counts(line: str) -> str:
    assert re.search(r" \d+$", line), line
    return re.sub(r" \d+$", " N", line)


def test_pictures_shows_what_the_folded_stacks_begin_with():
    assert [f for f, _ in shown_heads("docs/pictures.md")] == ["stacks.folded"]


def test_the_docs_have_blocks_to_run():
    for doc in DOCS:
        blocks = sh_blocks(doc)
        assert len(blocks) >= 2 and "fakefs mount" in blocks[0], doc


@requires_fuse
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_the_shell_blocks_of_a_doc_run_as_written(doc, tmp_path):
    mountpoint, copies = DOCS[doc]
    for rel in copies:
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        shutil.copy(os.path.join(REPO, rel), tmp_path / rel)
    if os.path.isdir(os.path.join(REPO, ".venv")):
        os.symlink(os.path.join(REPO, ".venv"), tmp_path / ".venv")
    with fresh_mountpoint("fakefs-doc-") as mnt:
        script = "set -e\nfakefs() { \"$PY\" -m fakefs \"$@\"; }\n"
        for block in sh_blocks(doc):
            script += block.replace(mountpoint, mnt)
        if leaves_it_mounted(script):
            script += "fakefs umount %s\n" % mnt
        env = dict(os.environ, PY=os.path.join(REPO, ".venv", "bin", "python"),
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if not os.path.exists(env["PY"]):
            env["PY"] = "python3"
        out = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        made = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
        for name in made:
            assert (tmp_path / name).stat().st_size > 0, name
        for rel in copies:          # a check that passes rewrites nothing
            with open(os.path.join(REPO, rel)) as a, open(tmp_path / rel) as b:
                assert a.read() == b.read(), rel
        assert made or copies, "the doc's commands did nothing to check"
        for name, shown in shown_heads(doc):
            head = (tmp_path / name).read_text().splitlines()[:len(shown)]
            assert [without_counts(ln) for ln in head] == [without_counts(ln) for ln in shown], (
                "%s shows %s beginning with %r; the commands now give %r" % (doc, name, shown, head))
        assert not is_mounted(mnt)


def test_the_readme_is_a_front_door():
    """README.md stays short: what it is, the two commands, the tour, links."""
    with open(os.path.join(REPO, "README.md")) as fh:
        text = fh.read()
    assert len(text.splitlines()) <= 120
    for page in ("cli", "sandbox", "tracefs", "procfs", "time", "how-it-is-built", "fidelity",
                 "pictures", "lessons/README"):
        assert "](docs/%s.md)" % page in text, page


def test_links_between_pages_lead_to_files():
    pages = ["README.md"] + [os.path.relpath(p, REPO) for p in
                             glob.glob(os.path.join(REPO, "docs/**/*.md"), recursive=True)]
    for page in pages:
        with open(os.path.join(REPO, page)) as fh:
            text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            path = os.path.normpath(os.path.join(REPO, os.path.dirname(page), target))
            assert os.path.exists(path), (page, target)
