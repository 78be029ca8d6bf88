"""What the filesystem answers about itself and its files' extended
attributes, as tracefs and procfs do (a mixin of ``adapter.FakeFS``).

* ``statfs``: ``simple_statfs()``: 4 KB blocks, names of up to NAME_MAX.
* Extended attributes: tracefs and procfs have no xattr handlers, so
  ``vfs_listxattr()`` gives what the LSM lists for the inode: nothing on a
  Debian kernel (AppArmor lists none), an empty list, not an error.
  ``getxattr``/``setxattr``/``removexattr`` are EOPNOTSUPP there: left
  unimplemented here (ENOSYS), which the kernel's FUSE turns into
  EOPNOTSUPP.  (``system.posix_acl_*`` never reaches the daemon: FUSE
  without ACL support answers ENODATA for it itself, where tracefs says
  EOPNOTSUPP.)
"""

from __future__ import annotations

import pyfuse3

from ..kernel.fs.namei import NAME_MAX


class FsInfo:
    """statfs and listxattr of ``FakeFS`` (which gives ``node()``)."""

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_namemax = NAME_MAX
        return s

    async def listxattr(self, inode, ctx):
        self.node(inode)                     # ENOENT for an inode gone
        return ()
