"""The workspace shell's limits (docs/shell.md).

The aggregate input budget (8 MiB) is shared with the ``js`` command and lives in
:mod:`tavernlab.js._budget`; the JavaScript limits are in :mod:`tavernlab.js._limits`, and so
is the whole-call deadline (``DEFAULT_DEADLINE_S``, 30 s), which the shell and ``js`` share.
"""

from __future__ import annotations

#: The ``command`` argument, in UTF-8 bytes.
MAX_COMMAND_BYTES = 131_072
#: stdout and stderr are each capped at this many UTF-8 bytes.
MAX_STREAM_BYTES = 131_072
#: One file read through the bridge.
MAX_FILE_READ_BYTES = 8 * 1024 * 1024
#: One directory listing through the bridge.
MAX_DIR_ENTRIES = 4096
