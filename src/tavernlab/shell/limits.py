"""The workspace shell's limits (spec/shell.md section 3), in one place."""

from __future__ import annotations

#: Whole-call deadline in seconds (injectable per run; this is the default).
DEFAULT_DEADLINE_S = 30.0
#: The ``command`` argument, in UTF-8 bytes.
MAX_COMMAND_BYTES = 131_072
#: stdout and stderr are each capped at this many UTF-8 bytes.
MAX_STREAM_BYTES = 131_072
#: One file read through the bridge.
MAX_READ_BYTES = 8 * 1024 * 1024
#: One directory listing through the bridge.
MAX_DIR_ENTRIES = 4096
#: Aggregate input budget of one call (file bytes read, JavaScript module sources). Upstream's
#: value is unknown; tavernlab chooses 8 MiB (spec/shell.md section 3).
INPUT_BUDGET_BYTES = 8 * 1024 * 1024
