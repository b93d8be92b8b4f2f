"""The names a caller hands the worktree tools: slugs, refs and repository-relative paths.

Each rule lives here once and is used by the tool input models, the configuration models
and the glob expanders alike:

* a slug is lowercase kebab-case (docs/worktrees.md), matched in full (a trailing newline is not
  "the end"), so it is safe as a directory and branch name;
* ``base`` and ``branch`` are ref names by ``git check-ref-format`` rules (one-level names
  such as ``main`` allowed) and never start with ``-``, so no value can be read as a git
  option (tavernlab's addition; upstream passes them to git as given);
* ``writeFiles`` paths, ``linkPaths``, ``copyGlobs`` and ``cloneGlobs`` are relative and have
  no ``..`` segment, so nothing lands outside the worktree or reads outside the repository
  (tavernlab's addition: upstream lets ``linkPaths`` reach a sibling with ``..``).
"""

from __future__ import annotations

import os
import re

SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]*")
SLUG_MESSAGE = "slug must be lowercase kebab-case"

#: Characters ``git check-ref-format`` never allows in a ref name.
_FORBIDDEN_REF_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def is_slug(value: str) -> bool:
    """Whether ``value`` is lowercase kebab-case, as a whole."""
    return SLUG_PATTERN.fullmatch(value) is not None


def ref_name_problem(value: str) -> str | None:
    """Why ``value`` is not a usable ref name, or ``None`` when it is.

    The ``git check-ref-format --allow-onelevel`` rules, plus: not empty and no leading
    ``-``.
    """
    if not value:
        return "must not be empty"
    if value.startswith("-"):
        return "must not start with '-'"
    if _FORBIDDEN_REF_CHARS.search(value):
        return "must not contain spaces, control characters or any of ~ ^ : ? * [ \\"
    if value == "@" or "@{" in value:
        return "must not be '@' or contain '@{'"
    if ".." in value:
        return "must not contain '..'"
    if value.startswith("/") or value.endswith("/") or "//" in value:
        return "must not start or end with '/' or contain '//'"
    if value.endswith("."):
        return "must not end with '.'"
    for component in value.split("/"):
        if component.startswith(".") or component.endswith(".lock"):
            return "no component may start with '.' or end with '.lock'"
    return None


def check_ref_name(value: str) -> str:
    """Return ``value`` or raise ``ValueError("not a valid ref name (<why>): '<value>'")``;
    the validation error that carries it names the field."""
    problem = ref_name_problem(value)
    if problem is not None:
        raise ValueError(f"not a valid ref name ({problem}): {value!r}")
    return value


def relative_path_problem(value: str) -> str | None:
    """Why ``value`` may escape its root (absolute, or a ``..`` segment), or ``None``."""
    if os.path.isabs(value) or value.startswith("\\"):
        return "is an absolute path"
    if ".." in value.replace("\\", "/").split("/"):
        return "has a '..' segment"
    return None


def check_relative_path(value: str) -> str:
    """Return ``value`` or raise ``ValueError("'<value>' escapes the repo root (path
    traversal): absolute paths and '..' segments are not allowed")``; the validation error
    that carries it names the field."""
    if relative_path_problem(value) is not None:
        raise ValueError(f"'{value}' escapes the repo root (path traversal): "
                         "absolute paths and '..' segments are not allowed")
    return value


def default_worktree_dir(repo_root: str, slug: str) -> str:
    """``<repoRoot>/../_worktrees/<slug>``, absolute (repo ``/code/app`` → ``/code/_worktrees``)."""
    return os.path.abspath(os.path.join(repo_root, "..", "_worktrees", slug))


def default_branch_name(slug: str) -> str:
    """``wt/<slug>``."""
    return f"wt/{slug}"
