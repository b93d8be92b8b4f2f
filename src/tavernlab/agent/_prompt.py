"""Prompt assembly: upstream's default agent system prompt (V5), the runtime catalogs
appended to it, the drift-recovery nudges and the initial messages tavernlab (the host) builds.

The default prompt is materialized from the Profile (its default presentation, not a run's)
and the invocation's advertised tools; a Profile's ``instructions.agentSystemPrompt``
replaces it verbatim. The catalogs (the effective skills, and the agent catalog when
delegation tools are advertised) are appended to the system-prompt message of the request,
once per invocation, never to the stored prompt snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import tavernlab.layout as layout
from tavernlab.agent._tools import Mode, ToolSnapshot, visible_roots_text, writable_roots_text
from tavernlab.workspace.roots import Profile

#: The last line of the default prompt.
CLOSING_LINE = "Anyway: TOOLS&SKILLS IS ALL YOU NEED"


def default_system_prompt(profile: Profile, snapshot: ToolSnapshot, *, mode: Mode = "root"
                          ) -> str:
    """The V5 default agent system prompt for an invocation advertising ``snapshot``."""
    if profile.instructions.agent_system_prompt is not None:
        return profile.instructions.agent_system_prompt

    def has(native: str) -> bool:
        return snapshot.has(native)

    def a(native: str) -> str:
        return snapshot.alias(native)

    lines = ["---", "tools:", *[f"- {b.alias}" for b in snapshot.bindings], "---", "",
             "# Agent Mode is active.",
             "- Work using the available agent tools. Tool results are working context, not "
             "chat messages.",
             "- Every model turn must include at least one Agent tool call. Plain text alone "
             "does not complete the current stage.", ""]
    if has("agent.delegate") and has("agent.await"):
        lines += [f"- Use {a('agent.delegate')} to ask another Agent to handle a self-contained "
                  "task. You can continue working after delegating; use "
                  f"{a('agent.await')} when you need a delegated result or status before "
                  "deciding.",
                  "- If delegated task results are provided later, review them before "
                  "finalizing."]
    elif has("agent.delegate"):
        lines.append(f"- Use {a('agent.delegate')} to ask another Agent to handle a "
                     "self-contained task. You can continue working after delegating.")
    if has("agent.handoff"):
        lines += [f"- Use {a('agent.handoff')} when you have finished your part and another "
                  "Agent should continue. Provide a self-contained handoff brief with the "
                  "objective, relevant workspace paths, decisions, constraints, and what done "
                  "looks like.",
                  f"- After {a('agent.handoff')} succeeds, your part is done; do not call more "
                  "tools."]
    if has("workspace.shell"):
        lines.append("- Workspace tools share the same files. Each shell call starts a new "
                     "session; files persist between calls.")
        if has("workspace.read_file") and (has("workspace.apply_patch")
                                           or has("workspace.write_file")):
            lines.append(f"- After editing a file with {a('workspace.shell')}, read it with "
                         f"{a('workspace.read_file')} before patching or replacing it with the "
                         "text tools.")
    if has("workspace.commit"):
        lines.append(f"- Use {a('workspace.commit')} to publish Run workspace files into the "
                     "current chat message. Without arguments, it will replace the current "
                     f"run's chat message with {profile.workspace.message_body_path}; mode "
                     "append will append to the same message, creating it if this run has not "
                     "committed yet.")
    if (layout.PERSIST in profile.workspace.visible_roots
            and layout.PERSIST in profile.workspace.writable_roots):
        lines += ["- Use persist/ to store concise information that should carry over into "
                  "subsequent runs of the same chat, such as persistent plot facts, unresolved "
                  "threads, relationship states, and user style preferences.",
                  "- **Do not** copy full chat history, final replies, tool results, or "
                  "temporary reasoning into persist/."]
    visible = f"- Readable workspace directories: {visible_roots_text(profile)}."
    writable = f"- Writable workspace directories: {writable_roots_text(profile)}."
    if has("task.return"):
        lines += ["- Delegated task workspace: use the same logical workspace paths as the "
                  "Agent that asked for this task. Do not invent private path mappings.",
                  "- Use the workspace paths named in the task brief. Write supporting notes "
                  "or artifacts only under writable roots.", visible, writable,
                  "# **Important**: You are completing a delegated task. Return your result "
                  f"only by calling {a('task.return')} with a concise result for the "
                  "requesting Agent.",
                  "- If useful, write supporting notes or requested artifacts, then reference "
                  "those workspace paths in task_return."]
    else:
        lines += [visible, writable,
                  '> You may encounter: "No visible workspace files found." This happens '
                  "because there are no persisted files; please continue."]
        finish, commit = has("workspace.finish"), has("workspace.commit")
        handoff = has("agent.handoff")
        foreground = profile.run.presentation == "foreground"
        if finish and foreground and commit:
            lines.append(f"# **Important**: Before calling {a('workspace.finish')}, you **must "
                         f"successfully call {a('workspace.commit')} at least once** so that "
                         "the user can see the final chat message.")
        elif finish and foreground:
            lines.append(f"# **Important**: Call {a('workspace.finish')} only when this "
                         "foreground stage can end without you publishing a new chat commit.")
        elif finish:
            lines.append(f"# Background runs may call {a('workspace.finish')} without "
                         "committing a chat message.")
        elif handoff:
            lines.append("# **Important**: You cannot finish the run directly with the "
                         "available tools. When your part is complete, call "
                         f"{a('agent.handoff')}.")
        else:
            lines.append("# **Important**: You do not have a finish or handoff tool. Use "
                         "another available Agent tool to move the work forward.")
        if finish:
            lines.append("# **Important**: Do not answer in plain text. Finish by calling "
                         f"{a('workspace.finish')}.")
        elif handoff:
            lines.append("# **Important**: Do not answer in plain text. Continue by calling "
                         f"{a('agent.handoff')}.")
    if has("workspace.commit") and has("workspace.finish"):
        commit_alias, finish_alias = a("workspace.commit"), a("workspace.finish")
        lines += ["", "# Basic tool calling flow (adjusted based on the actual situation, but "
                  f"the flow must include {commit_alias} + {finish_alias}):", "",
                  "A simple template you can follow:", "    (thoughts before actions)",
                  "    (call tools)(optional)", "",
                  f'    Now I need to call "{commit_alias}" once.',
                  "    Good, it has been committed. Finally, don't forget to call "
                  f'"{finish_alias}".', "",
                  "You also can follow commit-N-times template:",
                  "    (thoughts before actions)"]
        if has("workspace.read_file"):
            lines.append(f"    ({a('workspace.read_file')})")
        if has("worldinfo.read_activated"):
            lines.append(f"    ({a('worldinfo.read_activated')})")
        lines += [f"    (call {commit_alias} with append mode)", "    (think)",
                  "    (edit if necessary)", f"    ({commit_alias} with append mode)", ""]
    lines.append(CLOSING_LINE)
    return "\n".join(lines)


def skill_catalog(skills: Iterable[Any]) -> str:
    """The ``Available skills:`` appendix (each skill once, its description as a JSON string
    literal and its ``SKILL.md`` path); ``""`` without skills."""
    ordered = list(skills)
    if not ordered:
        return ""
    entries = "".join(f"- {s.name}: {json.dumps(s.description, ensure_ascii=False)}\n"
                      f"  Path: skills/{s.name}/SKILL.md\n" for s in ordered)
    return ("\n\nAvailable skills:\n" + entries + "\nRead a skill's SKILL.md before using it. "
            "Resolve referenced files relative to its directory.")


def agent_catalog(entries: Iterable[tuple[str, list[str], str]]) -> str:
    """``Available agents:`` with ``- <id> [<ops>]: <description>`` per target, or
    ``Available agents:\\nNone.`` when no target qualifies."""
    listed = [f"- {agent_id} [{', '.join(ops)}]: {description}"
              for agent_id, ops, description in entries]
    if not listed:
        return "Available agents:\nNone."
    return ("Available agents:\n" + "\n".join(listed)
            + "\n\nUse the listed ID as agentId for the indicated operation.")


def runtime_catalogs(skills: Iterable[Any], agents: str | None) -> str:
    """What is appended to the system-prompt component: the skill catalog, then (when
    delegation tools are advertised) the agent catalog."""
    text = skill_catalog(skills)
    if agents is not None:
        text += "\n\n" + agents
    return text


def completion_tool_name(snapshot: ToolSnapshot, mode: Mode) -> str:
    """The tool an invocation must end with, as failures name it."""
    if mode == "child":
        return "task_return"
    if snapshot.has("workspace.finish"):
        return "workspace_finish"
    if snapshot.has("agent.handoff"):
        return "agent_handoff"
    return "an available Agent control tool"


def drift_nudge(snapshot: ToolSnapshot, mode: Mode, attempt: int, committed: int,
                path: str | None) -> str:
    """The user message that answers a response without tool calls (upstream's texts;
    ``path`` is where the direct text was saved, if any)."""
    head = f"[system reminder, direct output recovery attempt {attempt}]"
    if mode == "child":
        hint = (f" I saved your direct text to {path}. If it is useful, summarize it or "
                "reference that path in task_return.artifacts." if path else "")
        return (f"{head} You replied with plain text, but this delegated task must end through "
                "task_return. Call task_return with a concise summary, status, and any useful "
                "findings, warnings, questions, next actions, or artifact paths."
                f"{hint} Do NOT answer directly in plain text.")
    if snapshot.has("workspace.finish"):
        hint = (f" I saved your direct text to {path}. If that text is the intended reply, "
                f'call workspace_commit with path "{path}" before workspace_finish.'
                if path else "")
        if committed > 0:
            return (f"{head} You replied with plain text but the run is still open. You have "
                    f"committed {committed} message(s) to the chat via workspace_commit; "
                    "complete cleanly by calling workspace_finish. If you need to revise the "
                    "committed content, update the workspace file with workspace_apply_patch "
                    "or workspace_write_file, then call workspace_commit again before "
                    f"workspace_finish.{hint} Do NOT repeat the content in plain text; "
                    "continue through Agent tools.")
        return (f"{head} You replied with plain text, but this run must continue through Agent "
                "tools until workspace_finish. Inspect the workspace if needed, produce the "
                "answer through workspace_write_file and workspace_commit, then call "
                f"workspace_finish.{hint} Do NOT answer directly in plain text.")
    if snapshot.has("agent.handoff"):
        hint = (f" I saved your direct text to {path}. If it is useful, mention that path in "
                "the handoff brief." if path else "")
        return (f"{head} You replied with plain text, but this Agent stage cannot finish the "
                "run directly. Continue by calling agent_handoff with a clear objective, "
                "context summary, workspace references, and preservation constraints for the "
                f"next Agent.{hint} Do NOT answer directly in plain text.")
    hint = (f" I saved your direct text to {path}. If it is useful, reference that path when "
            "continuing." if path else "")
    return (f"{head} You replied with plain text, but this run must continue through Agent "
            "tools. Use an available Agent control tool to continue or complete the stage."
            f"{hint} Do NOT answer directly in plain text.")


def prompt_snapshot(system_prompt: str, task: str, params: Mapping[str, Any]
                    ) -> dict[str, Any]:
    """``input/prompt_snapshot.json`` as tavernlab (the host) submits it: the generation
    parameters, the system-prompt component (tagged ``agentSystemPrompt``) and the task as
    the user message, and the context policy."""
    return {
        "generationParameters": dict(params),
        "messages": [
            {"role": "system", "parts": [{"type": "text", "text": system_prompt}],
             "providerMetadata": {"promptComponent": "agentSystemPrompt"}},
            {"role": "user", "parts": [{"type": "text", "text": task}],
             "providerMetadata": {}},
        ],
        "contextPolicy": {"initialChatHistoryMessages": -1, "includeActivatedWorldInfo": True},
    }
