"""statfs and extended attributes (fsinfo.py), called directly and through a mount."""

import errno
import os

import pyfuse3
import pytest

from fakefs.fuse.fsinfo import FsInfo
from mountlib import requires_fuse


class Fs(FsInfo):
    def node(self, inode):
        if inode != pyfuse3.ROOT_INODE:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return object()


async def test_listxattr_is_an_empty_list_statfs_says_name_max():
    fs = Fs()
    assert list(await fs.listxattr(pyfuse3.ROOT_INODE, None)) == []
    with pytest.raises(pyfuse3.FUSEError) as e:
        await fs.listxattr(12345, None)
    assert e.value.errno == errno.ENOENT
    assert (await fs.statfs(None)).f_namemax == 255


@requires_fuse
def test_xattrs_through_the_mount_as_tracefs_and_procfs_answer(mnt, tracing):
    """As the host's tracefs and /proc (private namespace, no LSM listing):
    listxattr an empty list, getxattr/setxattr/removexattr EOPNOTSUPP."""
    for p in (tracing, os.path.join(tracing, "trace"), os.path.join(tracing, "events/sched/enable"),
              os.path.join(mnt, "proc/kallsyms")):
        assert os.listxattr(p) == [], p
        for call in (lambda: os.getxattr(p, "user.x"), lambda: os.getxattr(p, "security.selinux"),
                     lambda: os.setxattr(p, "user.x", b"1"), lambda: os.removexattr(p, "user.x")):
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno == errno.EOPNOTSUPP, p
        fd = os.open(p, os.O_RDONLY)
        try:
            assert os.listxattr(fd) == []
        finally:
            os.close(fd)
