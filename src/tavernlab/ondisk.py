"""The one base model of every JSON file tavernlab writes or reads on disk.

Run records (``run.json``, the manifest, the persist snapshot), the events and journal lines,
the chat file, Profiles, the session files, replay bundles' manifests, the skill index and
sidecar, and the worktree configuration all inherit from :class:`Model`, so one place says
how a Python field meets its JSON key: camelCase aliases (``run_id`` is ``runId``), either
name accepted when building a model, unknown keys kept (a record written by a newer version
reads back without loss). A family with a stricter rule narrows it in its own base (the skill
sidecar rejects unknown keys and snake_case names; the worktree configuration is strict and
ignores unknown keys); the events put their :class:`~tavernlab.events.Event` envelope on top.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Base for on-disk JSON: camelCase aliases, populated by either name, unknown keys kept."""

    # ``defer_build``: a model's validator is built on its first use, not at import (a
    # process that runs one tool call builds the dozen models it needs, not all of them).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True,
                              extra="allow", ser_json_timedelta="float", defer_build=True)
