"""A sub-buffer of the ring buffer (kernel/trace/ring_buffer.c's ``struct
buffer_data_page``): ``BufferPage`` and the arena of a CPU's sub-buffers
are compiled (_ring_buffer_bpage.pyx); here is the header's size.
"""

from __future__ import annotations

BUF_PAGE_HDR_SIZE = 16          # a sub-buffer's header (time_stamp, commit)
