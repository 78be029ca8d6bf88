"""The shell blocks of the docs run as written (on a mount point of their
own; the lessons have their own runner, the README tour tests/test_readme.py)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from mountlib import REPO, fresh_mountpoint, is_mounted, requires_fuse

# doc -> the mount point its commands use
DOCS = {"docs/pictures.md": "/tmp/k"}


def sh_blocks(doc: str) -> list[str]:
    with open(os.path.join(REPO, doc)) as fh:
        return re.findall(r"```sh\n(.*?)```", fh.read(), re.S)


def test_the_docs_have_blocks_to_run():
    for doc in DOCS:
        blocks = sh_blocks(doc)
        assert len(blocks) >= 3 and "fakefs mount" in blocks[0], doc


@requires_fuse
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_the_shell_blocks_of_a_doc_run_as_written(doc, tmp_path):
    with fresh_mountpoint("fakefs-doc-") as mnt:
        script = "set -e\nfakefs() { \"$PY\" -m fakefs \"$@\"; }\n"
        for block in sh_blocks(doc):
            script += block.replace(DOCS[doc], mnt)
        script += "fakefs umount %s\n" % mnt
        env = dict(os.environ, PY=os.path.join(REPO, ".venv", "bin", "python"),
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if not os.path.exists(env["PY"]):
            env["PY"] = "python3"
        out = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        made = sorted(p.name for p in tmp_path.iterdir())
        assert made, "the doc's commands wrote no file"
        for name in made:
            assert (tmp_path / name).stat().st_size > 0, name
        assert not is_mounted(mnt)
