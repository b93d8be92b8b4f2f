"""``skill.list`` and ``skill.read``: the legacy skill tools, offered in compatibility mode only.

V5 has no skill tools (models read ``skills/`` with the workspace tools). Legacy error messages
still point at ``skill_list`` and ``skill_read``, so tavernlab offers them as thin wrappers
while ``skills.legacyRunScript`` is on (docs/js-and-skills.md, a documented
tavernlab choice): ``skill.list`` takes no arguments and returns one line per effective
skill, ``<name>: <description> (skills/<name>/SKILL.md)``, with structured
``{skills: [{name, description, path}]}``; ``skill.read`` ``{name, path? = "SKILL.md",
start_line?, line_count?}`` is exactly ``workspace.read_file`` on ``skills/<name>/<path>``.
"""

from __future__ import annotations

from tavernlab.workspace.tools import (
    READ_FILE_ARGUMENTS,
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    invalid_arguments,
    read_file,
)


def list_skills(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``skill.list``: the Invocation's effective skills."""
    from tavernlab.skills._binding import skill_list

    content, structured = skill_list(ctx.skills)
    return ToolResult(content=content or "No skills are available for this task.",
                      structured=structured,
                      resource_refs=[s["path"] for s in structured["skills"]])


def read_skill(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``skill.read``: ``workspace.read_file`` on ``skills/<name>/<path>``."""
    name = args.string("name", required=True) or ""
    path = args.string("path", default="SKILL.md") or "SKILL.md"
    if "/" in name or not name.strip():
        raise invalid_arguments("name must be a skill name")
    forwarded = {"path": f"skills/{name}/{path}"}
    for key in ("start_line", "line_count"):
        if args.has(key):
            forwarded[key] = args.value(key)
    return read_file(ctx, Arguments(forwarded, READ_FILE_ARGUMENTS))


#: The legacy skill tools besides ``skill.run_script`` (compatibility mode only).
SKILL_COMPAT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("skill.list", list_skills, False, "List the skills available to this task.", (),
             compat=True),
    ToolSpec("skill.read", read_skill, False,
             "Read a file of an available skill (default SKILL.md).",
             ("name", "path", "start_line", "line_count"), compat=True),
)
