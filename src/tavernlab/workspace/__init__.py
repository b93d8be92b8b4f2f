"""The storage floor's workspace, one room per concept: ``roots`` (roots, policy, profiles,
identifiers), ``storage`` (``WorkspaceFs``, the one byte-level door to a run's files),
``scope`` (an invocation's view, read records, tracking, the tree), ``text`` (measures and
the read window), ``records`` (``run.json``, ``manifest.json``), ``persist`` (persist
versions and the chat host), ``macros`` (frozen macros and context) and ``tools`` (the
model-facing workspace tools and the ``ToolContext`` seam). Import from a room's face, for
example ``from tavernlab.workspace.storage import WorkspaceFs``; a run's logs live with the
events (:mod:`tavernlab.events`)."""
