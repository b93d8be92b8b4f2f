"""Input models of the seven worktree tools (docs/worktrees.md), validated before dispatch.

Each model has upstream's camelCase field names and defaults. A violation becomes
``ToolError("input_invalid", "<field path>: <message>; …")`` and nothing has changed yet.
Beyond upstream's schemas (tavernlab's additions, each refusing input that would otherwise
reach git or the file system unchecked): ``base`` and ``branch`` must be ref names,
path and glob lists must stay inside their root, and an existing ``setupLogPath`` must be a
regular file. Unknown fields are rejected (``extra="forbid"``) so a typo never silently falls
back to a default (upstream host detail unknown; tavernlab's choice).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tavernlab.errors import ToolError
from tavernlab.worktree._config import RelativePath, WriteFileSpec
from tavernlab.worktree._git import DEFAULT_REF
from tavernlab.worktree._names import SLUG_MESSAGE, check_ref_name, is_slug

M = TypeVar("M", bound="ToolInput")


class ToolInput(BaseModel):
    """Strict, frozen, camelCase-aliased, unknown fields rejected.

    One model is the input in every form: camelCase on the wire (:meth:`wire`, what a tool
    call carries), snake_case in Python (the attributes, and :meth:`from_python`'s keywords).
    Errors always name the camelCase field, whichever form the values came in."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)

    @classmethod
    def from_python(cls, **values: Any) -> Self:
        """Validate snake_case keyword values (``None`` means not given); a violation is
        ``ToolError("input_invalid", …)`` naming the camelCase fields, as for wire input."""
        aliases = {name: field.alias or name for name, field in cls.model_fields.items()}
        return validate_input(cls, {aliases.get(key, key): value
                                    for key, value in values.items() if value is not None})

    def wire(self) -> dict[str, Any]:
        """The camelCase input as a tool call carries it (only the fields that were given)."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    @classmethod
    def wire_names(cls) -> frozenset[str]:
        """The camelCase names of the input's fields."""
        return frozenset(field.alias or name for name, field in cls.model_fields.items())


def _absolute(field: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, str) and not os.path.isabs(value):
            raise ValueError(f"{field} must be an absolute path")
        return value
    return check


def _ref(value: Any) -> Any:
    return check_ref_name(value) if isinstance(value, str) else value


def _regular_log(value: Any) -> Any:
    if isinstance(value, str):
        try:
            mode = os.stat(value).st_mode
        except FileNotFoundError:
            return value
        except OSError as exc:
            raise ValueError(f"setupLogPath cannot be used: {exc.strerror}") from exc
        if not stat.S_ISREG(mode):
            raise ValueError("setupLogPath must be a regular file (or not exist yet)")
    return value


def _check_slug(value: Any) -> Any:
    if isinstance(value, str) and not is_slug(value):
        raise ValueError(SLUG_MESSAGE)
    return value


class ProvisionInput(ToolInput):
    """``worktree.provision`` 0.3.0 input: the one form of a provision request, from the
    tool call, the command layer and the ``worktree-agent`` workflow to the provisioning
    itself."""

    repo_root: str = Field(alias="repoRoot")
    base: str = DEFAULT_REF
    slug: str
    branch: str | None = None
    dir: str | None = None
    deps_cmd: str | None = Field(default=None, alias="depsCmd")
    copy_globs: list[RelativePath] | None = Field(default=None, alias="copyGlobs")
    clone_globs: list[RelativePath] | None = Field(default=None, alias="cloneGlobs")
    link_paths: list[RelativePath] | None = Field(default=None, alias="linkPaths")
    write_files: list[WriteFileSpec] | None = Field(default=None, alias="writeFiles")
    run_setup: bool = Field(default=True, alias="runSetup")
    setup_log_path: str | None = Field(default=None, alias="setupLogPath")
    retry_setup_on_failure: bool = Field(default=False, alias="retrySetupOnFailure")

    _abs_root = field_validator("repo_root")(_absolute("repoRoot"))
    _abs_log = field_validator("setup_log_path")(_absolute("setupLogPath"))
    _log_file = field_validator("setup_log_path")(_regular_log)
    _slug = field_validator("slug")(_check_slug)
    _base = field_validator("base")(_ref)
    _branch = field_validator("branch")(_ref)


class GateInput(ToolInput):
    """``worktree.run-gate`` input."""

    cwd: str
    cmd: str


class CleanupInput(ToolInput):
    """``worktree.cleanup`` 0.2.0 input."""

    repo_root: str = Field(alias="repoRoot")
    cwd: str
    branch: str | None = None
    delete_branch: bool = Field(default=False, alias="deleteBranch")
    base: str = DEFAULT_REF
    run_teardown: bool = Field(default=True, alias="runTeardown")
    discard_untracked: bool = Field(default=False, alias="discardUntracked")
    discard_modified: bool = Field(default=False, alias="discardModified")

    _base = field_validator("base")(_ref)
    _branch = field_validator("branch")(_ref)


class ScriptInput(ToolInput):
    """``worktree.run-script`` input."""

    repo_root: str = Field(alias="repoRoot")
    worktree_path: str = Field(alias="worktreePath")
    branch: str
    script: str
    base: str = DEFAULT_REF

    _base = field_validator("base")(_ref)


class StartServiceInput(ScriptInput):
    """``worktree.start-service`` input."""

    proxy_port: int | None = Field(default=None, alias="proxyPort", ge=1, le=65535)


class StopServiceInput(ToolInput):
    """``worktree.stop-service`` input."""

    worktree_path: str = Field(alias="worktreePath")
    script: str


class ListServicesInput(ToolInput):
    """``worktree.list-services`` input."""

    repo_root: str = Field(alias="repoRoot")
    worktree_path: str = Field(alias="worktreePath")
    branch: str
    base: str = DEFAULT_REF
    proxy_port: int | None = Field(default=None, alias="proxyPort", ge=1, le=65535)

    _base = field_validator("base")(_ref)


def _validation_text(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "<root>"
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{path}: {message}")
    return "; ".join(parts)


def validate_input(model: type[M], data: Any) -> M:
    """Validate tool input (an instance of ``model`` is already valid and returned as is);
    a violation raises ``ToolError("input_invalid", …)``."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ToolError("input_invalid", _validation_text(exc)) from exc
