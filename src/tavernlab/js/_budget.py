"""The aggregate input budget of one shell call (docs/shell.md).

Every byte a shell call pulls in from the workspace - file bytes read through the bridge,
JavaScript module sources (including stdin and ``-e`` modules) and bytes returned by
``workspace.readText`` - is charged to one :class:`InputBudget`. Upstream's value is unknown;
tavernlab chooses 8 MiB.

How it is passed (tavernlab's choice): the shell creates one budget per ``workspace.shell``
call and hands it to every ``js`` run of that call with
``run_js_command(..., budget=budget)``. A ``js`` run started without one (``run.js(...)``,
``%%js``) gets a fresh 8 MiB budget of its own.
"""

from __future__ import annotations

import threading

from tavernlab.errors import WorkspaceError
from tavernlab.js._limits import INPUT_BUDGET


class InputBudgetExceeded(WorkspaceError):
    """The call read more than its budget allows; the shell reports it as an I/O error."""

    code = "shell.input_budget_exceeded"


class InputBudget:
    """A thread-safe byte counter with a hard limit; charging past the limit fails."""

    def __init__(self, limit: int = INPUT_BUDGET) -> None:
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        """Bytes charged so far."""
        return self._used

    @property
    def remaining(self) -> int:
        """Bytes that may still be charged."""
        return max(self.limit - self._used, 0)

    def charge(self, size: int) -> None:
        """Count ``size`` more bytes, or raise :class:`InputBudgetExceeded` and count nothing."""
        with self._lock:
            total = self._used + size
            if total > self.limit:
                raise InputBudgetExceeded(self.exceeded_message(total))
            self._used = total

    def exceeded_message(self, total: int) -> str:
        """``Shell input budget exceeded: ...`` (tavernlab's wording; upstream's is unknown)."""
        return (f"Shell input budget exceeded: this call would read {total} bytes, over the "
                f"{self.limit}-byte limit.")
