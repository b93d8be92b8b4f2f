"""The manifest of a ``.tavernrun`` bundle (format version 3): what was recorded, by digest.

A bundle is a ZIP holding ``manifest.json``, ``manifest.sha256`` (the manifest's own digest)
and ``blobs/<sha256>``: every file's bytes, stored once under their SHA-256. The manifest
names files by digest:

* ``tavernlabVersion``, ``specRevisions`` (the upstream revisions this tavernlab implements) and
  ``kitKey`` (the script kit's pins, :func:`tavernlab.js.kit.kit_key`);
* ``runId``, ``record`` (``run.json`` at export), ``clock`` and ``ids``: how to rebuild the
  lab's :class:`~tavernlab.clock.FixedClock` and :class:`~tavernlab.clock.SequentialIds` as
  they stood when the run started (from the run's ``input/origin.json``);
* ``inputs``: the frozen inputs among the run files (``input/prompt_snapshot.json``,
  ``resolved_profile.json``, ``skill_bindings.json``, ``system_prompt.md``,
  ``persist_snapshot.json``, ``origin.json``, ``host_chat.json``);
* ``skills``: every bound skill package (name, scope, installed hash, files);
* ``persistBase``: the persist state the run started from, if any;
* ``actions``: the ordered actions (:mod:`tavernlab.replay._actions`);
* the outcomes: ``run`` (the run directory: events, journal, tool arguments and results,
  ``js-jobs/``, the final workspace, each file by SHA-256, and every directory), ``index``
  (the run's index entry and summary), ``persistStates`` (the states the run published) and
  ``chatOutputs`` (each chat message swipe the run committed, as stored at export);
* ``agent`` (format version 2; ``null`` for a run played by hand): what re-drives a run of
  the agent loop (:class:`AgentRecording`: the task, chat, presentation, stream flag and
  agents the loop was started with, the model binding it announced, the host's answer to
  each commit request, the failed model attempts, and every ``model-responses/`` record by
  invocation and round). Its responses themselves are run files like any other.

Format version 3 records the run's lifecycle events with upstream's payloads. Versions 1
(bundles of runs played by hand, before model-driven runs were exported: version 2 without
``agent``) and 2 are still read: their recorded lifecycle events are upgraded to the current
shapes before a replay is compared with them (:mod:`tavernlab.replay._upgrade`).

Every path is a normalized relative path (checked when a bundle is read), so nothing a
manifest names can point outside the directory it is written to.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tavernlab.ondisk import Model
from tavernlab.replay._actions import Action

FORMAT: Literal["tavernrun"] = "tavernrun"
#: The format version this tavernlab writes and the newest it reads.
FORMAT_VERSION = 3
#: The spec revisions this tavernlab implements (recorded in every bundle).
SPEC_REVISIONS: dict[str, int] = {"workspace": 2, "js-and-skills": 2, "shell": 2,
                                  "worktree": 1}


class Tree(Model):
    """A directory: each file's SHA-256 by relative path, and every directory below it."""

    files: dict[str, str] = Field(default_factory=dict)
    directories: list[str] = Field(default_factory=list)


class BoundSkill(Model):
    """A skill package the run was bound to, as installed when the run was exported."""

    name: str
    scope: dict[str, Any]
    installed_hash: str
    files: dict[str, str]


class PersistState(Model):
    """A persist state directory (``manifest.json`` and ``persist/``)."""

    state_id: str
    tree: Tree


class ChatOutput(Model):
    """A chat message swipe the run committed, as the host chat stored it at export."""

    message_index: int
    swipe_id: int
    swipe: dict[str, Any] | None = None


class RecordedResponse(Model):
    """A ``model-responses/`` record of the run: its invocation, round and run file."""

    invocation_id: str
    round: int
    path: str


class FailedAttempt(Model):
    """A model call attempt that failed in the recording (what the replay fails again):
    its invocation, round and attempt, the error text, whether it was retried, and the
    error's kind (``transient`` for a retried one; a final one's kind from the failure's
    technical message)."""

    invocation_id: str
    round: int
    attempt: int
    message: str
    retryable: bool
    kind: str


class CancelledAttempt(Model):
    """The model call attempt the run was cancelled during (the replay cancels the run at
    the same attempt, with the recorded ``run_cancelled`` message as the reason; format 2
    bundles have none and cancel with the default one)."""

    invocation_id: str
    round: int
    attempt: int
    message: str | None = None


class AgentRecording(Model):
    """How a model-driven run was driven: what :func:`tavernlab.agent.start_agent` was given
    (``task``, ``chatId``, ``presentation``, ``stream``, ``agents`` by id), the model binding
    the loop announced (``agent_model_binding_resolved``: source, format, model id, binding),
    the host's answer to each commit request in order (``null`` accepted it, a text rejected
    it), the failed attempts, the recorded responses, and the model call attempt the run was
    cancelled during, if it was."""

    task: str
    chat_id: str
    presentation: Literal["foreground", "background"]
    stream: bool
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    model: dict[str, Any]
    commit_answers: list[str | None] = Field(default_factory=list)
    failed_attempts: list[FailedAttempt] = Field(default_factory=list)
    responses: list[RecordedResponse] = Field(default_factory=list)
    cancelled_attempt: CancelledAttempt | None = None


class BundleManifest(Model):
    """``manifest.json`` of a ``.tavernrun`` bundle."""

    format: Literal["tavernrun"] = FORMAT
    format_version: int = FORMAT_VERSION
    tavernlab_version: str
    spec_revisions: dict[str, int]
    kit_key: str
    run_id: str
    record: dict[str, Any]
    clock: dict[str, Any]
    ids: dict[str, Any]
    inputs: list[str]
    skills: list[BoundSkill] = Field(default_factory=list)
    persist_base: PersistState | None = None
    actions: list[Action] = Field(default_factory=list)
    run: Tree
    index: Tree
    persist_states: list[PersistState] = Field(default_factory=list)
    chat_outputs: list[ChatOutput] = Field(default_factory=list)
    agent: AgentRecording | None = None

    def digests(self) -> dict[str, list[str]]:
        """Every blob the manifest names, with the places that name it."""
        named: dict[str, list[str]] = {}

        def add(prefix: str, files: dict[str, str]) -> None:
            for path, digest in files.items():
                named.setdefault(digest, []).append(f"{prefix}{path}")

        add("run/", self.run.files)
        add("index/", self.index.files)
        for skill in self.skills:
            add(f"skills/{skill.name}/", skill.files)
        states = ([self.persist_base] if self.persist_base else []) + self.persist_states
        for state in states:
            add(f"persistent-states/{state.state_id}/", state.tree.files)
        return named
