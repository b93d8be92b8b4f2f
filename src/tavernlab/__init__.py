"""tavernlab: agent workspaces, sandboxed JavaScript skill scripts and git worktrees in Jupyter."""

from tavernlab.errors import TavernlabError

__all__ = ["TavernlabError"]
__version__ = "0.1.0"
