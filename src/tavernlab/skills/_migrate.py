"""``tavernlab skill migrate``: rewrite legacy ``skill.run_script`` scripts as V5 scripts.

Upstream's migration guide: the V5 runner never calls ``default``/``main``,
so a script needs an explicit entry. For every legacy entry point (a ``scripts/<name>.js``
exporting ``default`` or ``main`` that never reads ``process.argv``) the migration

1. makes the former entry function callable by name: a named function or binding is called
   as it is; an anonymous ``export default function (...)`` gets the name ``legacyEntry``;
   ``export default <expression>`` becomes ``const legacyEntry = <expression>; export {
   legacyEntry as default };`` on the same lines (a name the module already declares gets a
   number: ``legacyEntry2``);
2. appends the V5 entry: the JSON arguments from ``process.argv[2]`` (``{}`` without one; not
   an object -> ``args must be an object``), ``await`` the function, print its JSON result with
   ``console.log`` (serialized by ``JSON.stringify`` as it was before the call, so a script
   that replaces ``JSON`` cannot change its result, as with the legacy engine), and turn a
   thrown error (or an ``undefined`` result, which the legacy engine rejected too) into a
   message on stderr and ``process.exitCode = 1``;
3. rewrites every ``@tauritavern/runtime/v1`` import specifier (in any script) to
   ``@tauritavern/runtime``.

Every change is an edit at the byte offsets tree-sitter gives; all other bytes stay as they
were and no line moves, so stack traces keep their line numbers. The exports stay, so other
modules importing the function still work.

What cannot be migrated automatically is reported (``note``), not guessed: writes
(``workspace.writeText``) take effect immediately in V5 instead of after success;
``workspace.exists`` throws on invalid paths; ``workspace.listFiles()`` lists the visible roots;
imported names the V5 runtime lacks. An entry that is a class or a re-export, or that another
script imports (the added entry code would run on import), is left as it is and reported as an
``error``. ``SKILL.md`` lines that show ``skill.run_script`` calls are listed for the author.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tavernlab.js import LEGACY_RUNTIME_MODULE, RUNTIME_MODULE
from tavernlab.skills._errors import SkillStorageError
from tavernlab.skills._lint import (
    Finding,
    analyze_scripts,
    is_legacy_entry,
    located,
    module_graph,
    resolve_import,
)
from tavernlab.skills._package import SKILL_MD, SkillPackage
from tavernlab.skills._script_facts import EntryExport, ScriptFacts
from tavernlab.workspace.storage import replace_durably

ENTRY_NAME = "legacyEntry"

_ENTRY_BLOCK = """
// V5 entry, added by `tavernlab skill migrate`: the V5 runner never calls the `{exported}`
// export, so read the JSON arguments from process.argv[2], call it and print the result.
try {{
  const stringify = JSON.stringify;  // taken before the call, like the legacy serializer
  const args = JSON.parse(process.argv[2] ?? '{{}}');
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {{
    throw new TypeError('args must be an object');
  }}
  const result = await {name}(args);
  if (result === undefined || typeof result === 'function') {{
    throw new TypeError('skill script must return a JSON-serializable value');
  }}
  console.log(stringify(result));
}} catch (error) {{
  console.error(error instanceof Error ? `${{error}}\\n${{error.stack ?? ''}}`.trimEnd()
    : String(error));
  process.exitCode = 1;
}}
"""

Edit = tuple[int, int, bytes]


@dataclass(frozen=True, slots=True)
class ScriptMigration:
    """One rewritten script: its package path, the bytes before and after, and the function
    its new entry calls (``None`` when only runtime imports were rewritten)."""

    path: str
    before: bytes
    after: bytes
    calls: str | None

    def diff(self, shown: str | None = None) -> str:
        """The change as a unified diff (``a/<path>`` -> ``b/<path>``; ``shown`` replaces
        the path, for a package inside a larger folder)."""
        path = shown or self.path
        return "".join(difflib.unified_diff(
            self.before.decode("utf-8").splitlines(keepends=True),
            self.after.decode("utf-8").splitlines(keepends=True), f"a/{path}", f"b/{path}"))


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """What migrating one package does: rewritten scripts, ``SKILL.md`` lines to update and
    what is left to the author. Paths are relative to the package."""

    package: SkillPackage
    scripts: tuple[ScriptMigration, ...]
    usage_lines: tuple[tuple[int, str], ...]
    notes: tuple[Finding, ...]

    @property
    def complete(self) -> bool:
        """Whether every legacy entry point was migrated (no ``error`` note)."""
        return not any(n.severity == "error" for n in self.notes)


def _fresh_name(facts: ScriptFacts) -> str:
    name, number = ENTRY_NAME, 1
    while name in facts.declared:
        number += 1
        name = f"{ENTRY_NAME}{number}"
    return name


def _entry_edits(facts: ScriptFacts, entry: EntryExport) -> tuple[str, list[Edit]]:
    """The name to call and the edits that make it callable (see the module notes)."""
    if entry.local is not None:
        return entry.local, []
    name = _fresh_name(facts)
    value = entry.value
    assert value is not None  # an entry without a local name is a value of `export default`
    if entry.kind == "function":  # `function (a)` -> `function legacyEntry(a)`
        keyword = next(c for c in value.children if c.type == "function")
        parameters = value.child_by_field_name("parameters")
        gap_end = parameters.start_byte if parameters is not None else keyword.end_byte
        if facts.source[keyword.end_byte:gap_end].strip(b" \t"):
            gap_end = keyword.end_byte  # a comment or a line break: keep it, insert before
        return name, [(keyword.end_byte, gap_end, f" {name}".encode())]
    keywords_end = next(c for c in entry.statement.children if c.type == "default").end_byte
    head = facts.source[entry.statement.start_byte:keywords_end]  # `export default`
    prefix = f"const {name} =".encode() + b"\n" * head.count(b"\n")
    end = entry.statement.end_byte
    tail = b"" if facts.source[:end].endswith(b";") else b";"
    return name, [(entry.statement.start_byte, keywords_end, prefix),
                  (end, end, tail + f" export {{ {name} as default }};".encode())]


def _runtime_edits(facts: ScriptFacts) -> list[Edit]:
    edits = []
    for site in facts.imports:
        if site.value == LEGACY_RUNTIME_MODULE:
            quote = facts.source[site.start:site.start + 1]
            edits.append((site.start, site.end, quote + RUNTIME_MODULE.encode() + quote))
    return edits


def _apply(source: bytes, edits: list[Edit]) -> bytes:
    out, cursor = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        out += [source[cursor:start], text]
        cursor = end
    out.append(source[cursor:])
    return b"".join(out)


def _at(path: str, facts: ScriptFacts, offset: int, code: str, message: str,
        severity: str = "note") -> Finding:
    line, column = facts.position(offset)
    return Finding(path, line, column, code, "error" if severity == "error" else "note",
                   message)


def _semantic_notes(path: str, facts: ScriptFacts) -> Iterator[Finding]:
    """Uses of the runtime whose meaning changes between the legacy overlay and V5."""
    for call in facts.runtime_calls:
        offset = call.node.start_byte
        if call.method == "writeText":
            yield _at(path, facts, offset, "deferred-writes", "V5 writes at once and keeps the "
                      "write if the script fails later; the legacy overlay wrote only after "
                      "success, guarded against concurrent changes")
        elif call.method == "exists":
            yield _at(path, facts, offset, "exists-throws", "workspace.exists throws on an "
                      "invalid path in V5 (legacy returned false)")
        elif call.method == "listFiles" and call.argument_count == 0:
            yield _at(path, facts, offset, "listfiles-roots", "workspace.listFiles() lists "
                      "the visible roots in V5 (skills and tool-results included); legacy "
                      "listed the first segments of known files")
    for name, node in facts.runtime_imports:
        yield _at(path, facts, node.start_byte, "runtime-export",
                  f"`{name}` is not exported by {RUNTIME_MODULE}")


def _blocked(package: SkillPackage, facts: dict[str, ScriptFacts], path: str,
             entry: EntryExport) -> str | None:
    """Why an entry cannot get the V5 entry code automatically, or ``None``."""
    if entry.kind in ("class", "reexport"):
        return (f"the `{entry.exported}` export is a {entry.kind}; add the V5 entry by hand "
                "(read process.argv, call the function, print JSON)")
    importers = sorted(other for other, f in facts.items() if other != path and any(
        resolve_import(package, other, site.value) == path for site in f.imports))
    if importers:
        return (f"imported by {', '.join(importers)}: entry code added here would run on "
                "import; move the shared code into a library module first")
    return None


def _usage_lines(package: SkillPackage, stems: list[str]) -> tuple[tuple[int, str], ...]:
    """``SKILL.md`` lines naming ``skill.run_script`` or a migrated script's legacy name."""
    text = package.contents[SKILL_MD].decode("utf-8").replace("\r\n", "\n")
    marks = ["skill.run_script", "skill_run_script"]
    marks += [f"`{stem}`" for stem in stems] + [f'"{stem}"' for stem in stems]
    return tuple((number, line) for number, line in enumerate(text.split("\n"), 1)
                 if any(mark in line for mark in marks))


def plan_migration(package: SkillPackage) -> MigrationPlan:
    """The migration of one package (nothing is written; see :func:`write_migration`)."""
    facts, notes = analyze_scripts(package)
    legacy = [p for p, f in facts.items() if is_legacy_entry(p, f)]
    touched = set().union(*(module_graph(package, facts, p) for p in legacy)) if legacy \
        else set()
    scripts, stems = [], []
    for path, script in facts.items():
        edits = _runtime_edits(script)
        calls = None
        exported = ""
        entry = script.entry
        if path in legacy and entry is not None:
            reason = _blocked(package, facts, path, entry)
            if reason is not None:
                notes.append(_at(path, script, entry.statement.start_byte, "manual-entry",
                                 reason, "error"))
            else:
                calls, entry_edits = _entry_edits(script, entry)
                edits += entry_edits
                exported = entry.exported
                stems.append(path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
        if path in touched:
            notes.extend(_semantic_notes(path, script))
        if not edits and calls is None:
            continue
        after = _apply(script.source, edits)
        if calls is not None:
            after += (b"" if after.endswith(b"\n") else b"\n") + \
                _ENTRY_BLOCK.format(name=calls, exported=exported).encode()
        scripts.append(ScriptMigration(path, script.source, after, calls))
    notes.sort(key=lambda n: (n.path, n.line, n.column, n.code))
    return MigrationPlan(package, tuple(scripts), _usage_lines(package, stems), tuple(notes))


def located_notes(plan: MigrationPlan) -> list[Finding]:
    """The plan's notes with paths relative to the folder holding the package."""
    return [located(plan.package.origin, note) for note in plan.notes]


def write_migration(folder: Path, plan: MigrationPlan) -> list[Path]:
    """Write the plan's scripts into the package's folder below ``folder``; returns the files.

    Each file is checked against the bytes the plan was made from first (a file changed since
    is refused with ``skill.storage_failed`` and nothing is written), then replaced atomically
    with its mode kept.
    """
    root = folder / plan.package.origin if plan.package.origin else folder
    targets = [(root.joinpath(*s.path.split("/")), s) for s in plan.scripts]
    for target, script in targets:
        if target.read_bytes() != script.before:
            raise SkillStorageError(f"{target} changed since it was read; run migrate again")
    for target, script in targets:
        replace_durably(target, script.after, target.stat().st_mode & 0o7777)
    return [target for target, _ in targets]
