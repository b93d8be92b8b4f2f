"""``tavernlab skill lint``: what the V5 host will do with a skill's scripts, before it runs.

Each finding is ``<file>:<line>:<col> <code> <severity>: <message>`` (columns count
characters, paths are relative to the linted folder). Errors are what make a script fail or do
nothing under ``js /skills/<name>/scripts/<file>.js``; warnings are advice. The rules (tavernlab's
wording):

=====================  ========  ================================================================
code                   severity  finding
=====================  ========  ================================================================
invalid-package        error     the package fails validation (nothing else is checked)
source-encoding        error     a script that is not UTF-8
syntax-error           error     the first place tree-sitter cannot parse
legacy-entry           error     a ``scripts/<name>.js`` exporting ``default``/``main`` that never
                                 reads ``process.argv``: the V5 runner never calls the export
runtime-v1             error     an import of ``@tauritavern/runtime/v1`` (not available in V5)
unknown-module         error     a bare import that is neither the runtime nor a kit module
import-attributes      error     ``with {type: 'json'}`` and friends
import-extension       error     a relative import without ``.js``/``.mjs``
import-outside-skill   error     a relative import that leaves the skill
import-not-found       error     a relative import of a file the skill does not ship
host-global            error     ``setTimeout``, ``require``, ``fetch``, ``process.exit``... (the
                                 sandbox has only ``console`` and ``process.argv/exitCode``)
module-budget          error     more modules or bytes than ``skill.run_script`` (64 modules,
                                 2 MiB) or a ``js`` call (8 MiB of input) accepts
undocumented-script    warning   ``SKILL.md`` never names a script under ``scripts/``
=====================  ========  ================================================================

Only scripts directly under ``scripts/`` are entry points (legacy script names map to
``scripts/<name>.js``); modules below (``scripts/lib/``, ``scripts/vendor/``) are checked for
imports, globals and syntax only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tavernlab.js import (
    INPUT_BUDGET,
    LEGACY_MAX_MODULES,
    LEGACY_MODULE_BYTES,
    LEGACY_RUNTIME_MODULE,
    RUNTIME_MODULE,
    SpecifierSite,
    dirname,
    has_module_extension,
    join_relative,
)
from tavernlab.js.kit import KIT_MODULES
from tavernlab.skills._collection import SourceScan
from tavernlab.skills._package import SKILL_MD, SkillPackage
from tavernlab.skills._script_facts import ScriptFacts, analyze_script

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding at ``path:line:column`` (``note`` is what ``migrate`` leaves to the
    author)."""

    path: str
    line: int
    column: int
    code: str
    severity: Severity
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column} {self.code} {self.severity}: " \
               f"{self.message}"

    def to_json(self) -> dict[str, Any]:
        """``{path, line, column, code, severity, message}``."""
        return {"path": self.path, "line": self.line, "column": self.column,
                "code": self.code, "severity": self.severity, "message": self.message}


@dataclass(frozen=True, slots=True)
class LintReport:
    """The findings of one linted folder, sorted by path and position, and how many scripts
    were read."""

    findings: tuple[Finding, ...]
    scripts: int

    @property
    def errors(self) -> int:
        """How many findings are errors (``tavernlab skill lint`` exits 1 when any)."""
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        """How many findings are warnings."""
        return sum(f.severity == "warning" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """``{findings, errors, warnings, scripts}``."""
        return {"findings": [f.to_json() for f in self.findings], "errors": self.errors,
                "warnings": self.warnings, "scripts": self.scripts}


def is_script(path: str) -> bool:
    """A JavaScript module under ``scripts/``."""
    return path.startswith("scripts/") and has_module_extension(path)


def is_entry_point(path: str) -> bool:
    """A script directly under ``scripts/`` (what a legacy script name or ``js`` runs)."""
    return is_script(path) and path.count("/") == 1


def is_legacy_entry(path: str, facts: ScriptFacts) -> bool:
    """An entry point that only the legacy ``skill.run_script`` would run."""
    return is_entry_point(path) and facts.entry is not None and not facts.uses_argv


def resolve_import(package: SkillPackage, importer: str, specifier: str) -> str | None:
    """The package path a relative or ``/skills/<name>/`` import points to; ``None`` when it
    leaves the skill."""
    if specifier.startswith("/"):
        own = f"/skills/{package.name}/"
        return specifier[len(own):] if specifier.startswith(own) else None
    return join_relative(dirname(importer), specifier)


def _at(path: str, facts: ScriptFacts, offset: int, code: str, severity: Severity,
        message: str) -> Finding:
    line, column = facts.position(offset)
    return Finding(path, line, column, code, severity, message)


def _import_finding(package: SkillPackage, path: str, site: SpecifierSite
                    ) -> tuple[str, str] | None:
    """``(code, message)`` for one import, or ``None`` when it is fine."""
    spec = site.value
    if site.attributes:
        return "import-attributes", ("Import attributes are not supported; import a "
                                     ".js/.mjs module.")
    if spec == LEGACY_RUNTIME_MODULE:
        return "runtime-v1", (f"`{spec}` is the legacy runtime; V5 scripts import "
                              f"`{RUNTIME_MODULE}` (`tavernlab skill migrate` rewrites it)")
    if spec == RUNTIME_MODULE or spec in KIT_MODULES:
        return None
    if not spec.startswith(("./", "../", "/")):
        return "unknown-module", (f"`{spec}` is neither {RUNTIME_MODULE} nor a kit module "
                                  "(@tauritavern/kit/...); bundle it into the skill "
                                  "(scripts/vendor/) and import it relatively")
    target = resolve_import(package, path, spec)
    if target is None:
        return "import-outside-skill", f"`{spec}` leaves the skill {package.name}"
    if not has_module_extension(target):
        return "import-extension", f"`{spec}` needs an explicit .js or .mjs extension"
    if target not in package.contents:
        return "import-not-found", f"`{spec}` points to {target}, which the skill does not ship"
    return None


def _module_findings(package: SkillPackage, path: str, facts: ScriptFacts
                     ) -> Iterator[Finding]:
    if facts.syntax_error is not None:
        yield _at(path, facts, facts.syntax_error.start_byte, "syntax-error", "error",
                  "the module does not parse here")
    for site in facts.imports:
        problem = _import_finding(package, path, site)
        if problem is not None:
            yield _at(path, facts, site.start, problem[0], "error", problem[1])
    for name, node in facts.host_globals:
        reason = ("only process.argv and process.exitCode exist; set process.exitCode "
                  "instead" if name.startswith("process.") else
                  "the sandbox has no Node, Deno or browser APIs, timers or network")
        yield _at(path, facts, node.start_byte, "host-global", "error",
                  f"`{name}` is not available: {reason}")
    entry = facts.entry
    if entry is not None and is_legacy_entry(path, facts):
        yield _at(path, facts, entry.statement.start_byte, "legacy-entry", "error",
                  f"exports `{entry.exported}` but never reads process.argv: the V5 js runner "
                  "never calls it, so the script does nothing (`tavernlab skill migrate` "
                  "adds the entry code)")


def module_graph(package: SkillPackage, facts: Mapping[str, ScriptFacts], entry: str
                 ) -> set[str]:
    """``entry`` and every module of the package it imports, directly or not."""
    seen = {entry}
    pending = [entry]
    while pending:
        path = pending.pop()
        for site in facts[path].imports if path in facts else ():
            target = resolve_import(package, path, site.value)
            if target is not None and target in package.contents and target not in seen:
                seen.add(target)
                pending.append(target)
    return seen


def _budget_findings(package: SkillPackage, facts: Mapping[str, ScriptFacts]
                     ) -> Iterator[Finding]:
    legacy = sorted(p for p, f in facts.items() if is_legacy_entry(p, f))
    snapshot = [p for p in package.contents if p.startswith("scripts/") and p.endswith(".js")]
    size = sum(len(package.contents[p]) for p in snapshot)
    if legacy and (len(snapshot) > LEGACY_MAX_MODULES or size > LEGACY_MODULE_BYTES):
        yield Finding(legacy[0], 1, 1, "module-budget", "error",
                      f"skill.run_script loads every scripts/**/*.js file: {len(snapshot)} "
                      f"modules, {size} bytes exceed the {LEGACY_MAX_MODULES}-module / "
                      f"{LEGACY_MODULE_BYTES}-byte snapshot limit")
    for path in sorted(p for p in facts if is_entry_point(p) and p not in legacy):
        total = sum(len(package.contents[p]) for p in module_graph(package, facts, path))
        if total > INPUT_BUDGET:
            yield Finding(path, 1, 1, "module-budget", "error",
                          f"the script and its imports are {total} bytes, over the "
                          f"{INPUT_BUDGET}-byte input budget of one js call")


def _documented(skill_md: str, path: str, facts: ScriptFacts) -> bool:
    name = path.rsplit("/", 1)[-1]
    if name in skill_md:
        return True
    stem = name.rsplit(".", 1)[0]
    return is_legacy_entry(path, facts) and (f"`{stem}`" in skill_md or f'"{stem}"' in skill_md)


def analyze_scripts(package: SkillPackage) -> tuple[dict[str, ScriptFacts], list[Finding]]:
    """The facts of every UTF-8 script of the package, and a finding for each other one."""
    facts: dict[str, ScriptFacts] = {}
    findings: list[Finding] = []
    for path in sorted(p for p in package.contents if is_script(p)):
        data = package.contents[path]
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            findings.append(Finding(path, 1, 1, "source-encoding", "error",
                                    "JavaScript source must be UTF-8."))
            continue
        facts[path] = analyze_script(data)
    return facts, findings


def lint_package(package: SkillPackage) -> list[Finding]:
    """Every finding of one valid package, paths relative to the package."""
    facts, findings = analyze_scripts(package)
    for path, script in facts.items():
        findings.extend(_module_findings(package, path, script))
    findings.extend(_budget_findings(package, facts))
    skill_md = package.contents[SKILL_MD].decode("utf-8")
    for path in sorted(p for p in facts if is_entry_point(p)):
        if not _documented(skill_md, path, facts[path]):
            findings.append(Finding(path, 1, 1, "undocumented-script", "warning",
                                    "SKILL.md never mentions this script; document its "
                                    "command line, output and file side effects"))
    return findings


def located(origin: str, finding: Finding) -> Finding:
    """``finding`` with its path relative to the folder holding the package at ``origin``."""
    if not origin:
        return finding
    return Finding(f"{origin}/{finding.path}", finding.line, finding.column, finding.code,
                   finding.severity, finding.message)


def lint_source(scan: SourceScan) -> LintReport:
    """Lint every package of a scanned folder; an invalid package is one finding."""
    findings = [Finding(f"{i.origin}/{SKILL_MD}" if i.origin else SKILL_MD, 1, 1,
                        "invalid-package", "error", i.message) for i in scan.invalid]
    scripts = 0
    for package in scan.packages:
        findings.extend(located(package.origin, f) for f in lint_package(package))
        scripts += sum(is_script(p) for p in package.contents)
    findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return LintReport(tuple(findings), scripts)
