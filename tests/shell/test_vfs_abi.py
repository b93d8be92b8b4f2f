"""The ctypes FileSystem.v1 export: every buffer lent to bashkit is given back and every
exported filesystem is released when its interpreter is gone (no leak per call)."""

from __future__ import annotations

import gc

from tavernlab.shell import vfs_abi

from .conftest import Workspace


def test_calls_leave_no_lent_buffers_or_exports(ws: Workspace) -> None:
    ws.shell("ls -R /; cat /output/main.md /input/x /nope; mkdir /x; ln -s a /scratch/b; "
             "find / -name '*.md' | xargs cat; python3 -c 'print(1)'; exit 2")
    ws.shell("while :; do ls / > /dev/null; done", deadline_s=0.3)
    gc.collect()
    assert vfs_abi._LENT == {}
    assert vfs_abi._EXPORTS == {}
