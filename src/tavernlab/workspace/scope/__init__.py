"""An invocation's view of the workspace: ``ScopedWorkspaceFs`` over the run's storage, the read
records of the text tools, text-mutation tracking for auto-commit, and the tree with what
the model may do at every node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.scope._reads import ReadRecord, ReadRecords
    from tavernlab.workspace.scope._scope import (
        SKILLS_ROOT,
        MutationTracker,
        ScopedWorkspaceFs,
        SkillsMount,
    )
    from tavernlab.workspace.scope._tracking import is_text_file
    from tavernlab.workspace.scope._tree import NodeKind, TreeNode, build_tree

__all__ = [
    "SKILLS_ROOT",
    "MutationTracker",
    "NodeKind",
    "ReadRecord",
    "ReadRecords",
    "ScopedWorkspaceFs",
    "SkillsMount",
    "TreeNode",
    "build_tree",
    "is_text_file",
]

_HOMES = {
    "MutationTracker": "tavernlab.workspace.scope._scope",
    "NodeKind": "tavernlab.workspace.scope._tree",
    "ReadRecord": "tavernlab.workspace.scope._reads",
    "ReadRecords": "tavernlab.workspace.scope._reads",
    "SKILLS_ROOT": "tavernlab.workspace.scope._scope",
    "ScopedWorkspaceFs": "tavernlab.workspace.scope._scope",
    "SkillsMount": "tavernlab.workspace.scope._scope",
    "TreeNode": "tavernlab.workspace.scope._tree",
    "build_tree": "tavernlab.workspace.scope._tree",
    "is_text_file": "tavernlab.workspace.scope._tracking",
}


__getattr__ = lazy_names(__name__, _HOMES)
