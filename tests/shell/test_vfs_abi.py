"""The ctypes FileSystem.v1 export: every buffer lent to bashkit is given back and every
exported filesystem is released when its interpreter is gone (no leak per call; measured as
a difference, since an earlier test's traceback may still hold an interpreter)."""

from __future__ import annotations

import gc

from tavernlab.shell import _vfs_abi as vfs_abi

from .conftest import Workspace


def test_calls_leave_no_lent_buffers_or_exports(ws: Workspace) -> None:
    gc.collect()
    exports_before, lent_before = set(vfs_abi._EXPORTS), set(vfs_abi._LENT)
    ws.shell("ls -R /; cat /output/main.md /input/x /nope; mkdir /x; ln -s a /scratch/b; "
             "find / -name '*.md' | xargs cat; python3 -c 'print(1)'; exit 2")
    ws.shell("while :; do ls / > /dev/null; done", deadline_s=0.3)
    gc.collect()
    assert set(vfs_abi._EXPORTS) <= exports_before
    assert set(vfs_abi._LENT) <= lent_before
