"""Views of installed skills (index entries) and of what an installation did."""

from __future__ import annotations

from collections.abc import Sequence

from tavernlab.skills import SkillIndexEntry, SkillInstallReport
from tavernlab.views._markup import badge, card, code, escape, table

_ACTION_TONES = {"installed": "ok", "replaced": "info", "already_installed": "muted",
                 "skipped": "warn"}


def _facts(entry: SkillIndexEntry) -> str:
    facts = [f"{entry.file_count} files", f"{entry.total_bytes} bytes"]
    if entry.has_scripts:
        facts.append("scripts")
    if entry.has_binary:
        facts.append("binary files")
    return ", ".join(facts)


def skill_entries_text(entries: Sequence[SkillIndexEntry]) -> str:
    """One block per skill: ``name (scope) version`` then description, facts and hash."""
    if not entries:
        return "no skills installed"
    lines = []
    for entry in entries:
        version = f" {entry.version}" if entry.version else ""
        lines += [f"{entry.name} ({entry.scope.key}){version}: {entry.description}",
                  f"  {_facts(entry)}; installed {entry.installed_at:%Y-%m-%d %H:%M:%S}",
                  f"  hash {entry.installed_hash}"]
        if entry.tags:
            lines.append(f"  tags: {', '.join(entry.tags)}")
    return "\n".join(lines)


def skill_entries_html(entries: Sequence[SkillIndexEntry]) -> str:
    """A table of the installed skills with every index field a reader needs."""
    if not entries:
        return "<i>no skills installed</i>"
    rows = [[code(e.name), escape(e.scope.key), escape(e.version or ""), escape(e.description),
             escape(_facts(e)), escape(", ".join(e.tags)), code(e.installed_hash)]
            for e in entries]
    return table(["skill", "scope", "version", "description", "files", "tags", "hash"], rows)


def install_report_text(report: SkillInstallReport) -> str:
    """``install: NAME -> ACTION`` per package, its warnings, then ``invalid: WHERE: WHY``."""
    lines = [f"install into {report.scope.key}:"]
    for result in report.results:
        lines.append(f"  {result.name} -> {result.action}")
        lines += [f"    warning: {w}" for w in result.warnings]
    lines += [f"  invalid: {i.location}: {i.message}" for i in report.invalid]
    if len(lines) == 1:
        lines.append("  no packages found")
    return "\n".join(lines)


def install_report_html(report: SkillInstallReport) -> str:
    """A card listing each package's outcome and warnings, and each invalid package."""
    rows = [[code(r.name), badge(r.action.replace("_", " "), _ACTION_TONES[r.action]),
             "<br>".join(escape(w) for w in r.warnings)] for r in report.results]
    rows += [[escape(i.location), badge("invalid", "error"), escape(i.message)]
             for i in report.invalid]
    body = table(["package", "outcome", "notes"], rows) if rows else "<i>no packages</i>"
    return card(f"Skill install into {code(report.scope.key)}", [], body)
