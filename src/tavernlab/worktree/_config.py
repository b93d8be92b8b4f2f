"""The two configuration files (docs/worktrees.md).

* ``agentproto.json`` is read **only** from the committed base ref with
  ``git show <base>:agentproto.json``: a feature branch, or an agent editing files in a
  worktree, can never inject hooks or service commands.
* ``<repoRoot>/.agentproto/worktree.json`` is the machine owner's local, gitignored file, read
  straight from disk in the source checkout (never from the new worktree).

Both are pydantic models with upstream's camelCase aliases. Unknown keys are accepted and
dropped; a type or range violation raises :class:`ConfigError` with upstream's message. Paths
and globs must stay inside their root (:func:`tavernlab.worktree._names.check_relative_path`,
tavernlab's addition), so a configuration can never write or link outside the worktree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from tavernlab.cancel import CancelToken
from tavernlab.ondisk import Model
from tavernlab.worktree._errors import ConfigError, SpawnError
from tavernlab.worktree._git import DEFAULT_REF, END_OF_OPTIONS, git_run
from tavernlab.worktree._names import check_relative_path

COMMITTED_CONFIG_FILE = "agentproto.json"
LOCAL_CONFIG_FILE = ".agentproto/worktree.json"

#: Lower-cased git stderr fragments meaning "this ref has no agentproto.json" (not opted in).
_NOT_FOUND_MARKERS = (
    "does not exist",
    "exists on disk, but not in",
    "unknown revision",
    "bad revision",
    "invalid object name",
    "ambiguous argument",
)


class _Model(Model):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The upstream JSON shape: camelCase keys, absent values left out."""
        return self.model_dump(by_alias=True, exclude_none=True)


#: A path or glob that stays inside its root: relative, no ``..`` segment.
RelativePath = Annotated[str, AfterValidator(check_relative_path)]


def _hook_value(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise ValueError("expected a string or an array of strings")


class WorktreeSection(_Model):
    """``agentproto.json`` → ``worktree``: lifecycle hooks and declarative defaults."""

    setup: Any = None
    teardown: Any = None
    deps_cmd: str | None = Field(default=None, alias="depsCmd")
    link_paths: list[RelativePath] | None = Field(default=None, alias="linkPaths")

    _check_setup = field_validator("setup", "teardown", mode="before")(_hook_value)

    @property
    def setup_commands(self) -> list[str]:
        """The setup hooks as a list: one string is **one** command (it may span lines)."""
        return normalize_hooks(self.setup)

    @property
    def teardown_commands(self) -> list[str]:
        """The teardown hooks as a list."""
        return normalize_hooks(self.teardown)


class ScriptSpec(_Model):
    """``agentproto.json`` → ``scripts.<name>``: a one-shot script or a supervised service."""

    command: str = Field(min_length=1)
    type: Literal["service"] | None = None
    port: int | None = Field(default=None, ge=1, le=65535)


class AgentprotoConfig(_Model):
    """The committed ``agentproto.json``."""

    worktree: WorktreeSection | None = None
    scripts: dict[str, ScriptSpec] | None = None

    @property
    def setup_commands(self) -> list[str]:
        """Setup hooks (``[]`` when absent)."""
        return self.worktree.setup_commands if self.worktree else []

    @property
    def teardown_commands(self) -> list[str]:
        """Teardown hooks (``[]`` when absent)."""
        return self.worktree.teardown_commands if self.worktree else []

    def list_scripts(self) -> list[dict[str, Any]]:
        """Every script as ``{name, command, type?, port?}`` in declaration order."""
        return [{"name": name, **spec.to_json()} for name, spec in (self.scripts or {}).items()]

    def list_services(self) -> list[dict[str, Any]]:
        """Only the ``type: "service"`` scripts, in declaration order."""
        return [script for script in self.list_scripts() if script.get("type") == "service"]

    def find_script(self, name: str) -> dict[str, Any] | None:
        """One script by name, or ``None``."""
        spec = (self.scripts or {}).get(name)
        return {"name": name, **spec.to_json()} if spec is not None else None


class WriteFileSpec(_Model):
    """One ``writeFiles`` entry: ``{path, content, mode?: "create"|"append"}``."""

    path: RelativePath = Field(min_length=1)
    content: str
    mode: Literal["create", "append"] = "create"


class LocalWorktreeConfig(_Model):
    """The local ``.agentproto/worktree.json``."""

    copy_globs: list[RelativePath] | None = Field(default=None, alias="copyGlobs")
    clone_globs: list[RelativePath] | None = Field(default=None, alias="cloneGlobs")
    write_files: list[WriteFileSpec] | None = Field(default=None, alias="writeFiles")
    deps_cmd: str | None = Field(default=None, alias="depsCmd")
    link_paths: list[RelativePath] | None = Field(default=None, alias="linkPaths")


def normalize_hooks(value: str | list[str] | None) -> list[str]:
    """``"a"`` → ``["a"]``; a list stays; absent → ``[]``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def validation_message(error: ValidationError) -> str:
    """``<path joined by '.', or '<root>'>: <msg>; …`` for a pydantic error."""
    parts = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "<root>"
        parts.append(f"{path}: {item['msg']}")
    return "; ".join(parts)


def _parse(text: str, model: type[_Model], label: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{label} is not valid JSON: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{label} failed validation: {validation_message(exc)}") from exc


def parse_committed_config(text: str) -> AgentprotoConfig:
    """Parse the text of an ``agentproto.json``; raises :class:`ConfigError`."""
    config: AgentprotoConfig = _parse(text, AgentprotoConfig, COMMITTED_CONFIG_FILE)
    return config


def parse_local_config(text: str) -> LocalWorktreeConfig:
    """Parse the text of a ``.agentproto/worktree.json``; raises :class:`ConfigError`."""
    config: LocalWorktreeConfig = _parse(text, LocalWorktreeConfig, LOCAL_CONFIG_FILE)
    return config


def load_committed_config(repo_root: str | os.PathLike[str], base: str = DEFAULT_REF, *,
                          signal: CancelToken | None = None) -> AgentprotoConfig | None:
    """Read ``agentproto.json`` from the committed ``base`` ref, never from a working tree.

    Returns ``None`` when the ref or the file does not exist (the repository has not opted
    in); any other git failure raises ``ConfigError("could not read agentproto.json from
    '<base>:agentproto.json': …")``.
    """
    spec = f"{base}:{COMMITTED_CONFIG_FILE}"
    try:
        result = git_run(repo_root, ["show", END_OF_OPTIONS, spec], signal=signal)
    except SpawnError as exc:
        raise ConfigError(f"could not read agentproto.json from '{spec}': {exc}") from exc
    if result.exit_code == 0:
        return parse_committed_config(result.stdout)
    stderr = result.stderr.lower()
    if any(marker in stderr for marker in _NOT_FOUND_MARKERS):
        return None
    detail = result.stderr.strip() or f"git exited {result.exit_code}"
    raise ConfigError(f"could not read agentproto.json from '{spec}': {detail}")


def load_local_config(repo_root: str | os.PathLike[str]) -> LocalWorktreeConfig | None:
    """Read ``<repoRoot>/.agentproto/worktree.json`` from disk; missing → ``None``.

    Other read errors (permissions, a directory in the way) propagate unchanged.
    """
    path = Path(repo_root) / LOCAL_CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse_local_config(text)


def substitute_slug(write_files: list[WriteFileSpec] | None, slug: str) -> list[WriteFileSpec]:
    """Replace every literal ``{slug}`` in local ``writeFiles`` paths and contents."""
    return [
        entry.model_copy(update={
            "path": entry.path.replace("{slug}", slug),
            "content": entry.content.replace("{slug}", slug),
        })
        for entry in write_files or []
    ]


__all__ = [
    "AgentprotoConfig",
    "ConfigError",
    "LocalWorktreeConfig",
    "ScriptSpec",
    "WorktreeSection",
    "WriteFileSpec",
    "load_committed_config",
    "load_local_config",
    "normalize_hooks",
    "parse_committed_config",
    "parse_local_config",
    "substitute_slug",
]
