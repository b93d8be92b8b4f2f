"""One error hierarchy for tavernlab.

Every error carries the upstream ``code`` and the exact upstream ``message`` so that a
notebook user, a test and the model-facing tool result all see the same text. Families
(workspace storage, tools, sandbox, skills, worktree) subclass :class:`TavernlabError`;
subsystems may define their own subclasses next to their code, but always below this root.
"""

from __future__ import annotations

from typing import Any


class TavernlabError(Exception):
    """Root of every tavernlab error: an upstream ``code`` plus its exact ``message``."""

    code: str = "tavernlab.error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """The ``{code, message}`` object upstream puts under ``structured.error``."""
        return {"code": self.code, "message": self.message}
