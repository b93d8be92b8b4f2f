"""What one skill script says about itself, read from its tree-sitter syntax tree.

Shared by ``tavernlab skill lint`` (:mod:`tavernlab.skills._lint`) and ``tavernlab skill
migrate`` (:mod:`tavernlab.skills._migrate`). The module's import specifiers come from the
sandbox's own scanner (:func:`tavernlab.js._modules.scan_module`, the one that resolves imports
at run time); everything else comes from the same parser's tree (:func:`parse_module`): the
legacy entry exports (``default`` and ``main``), uses of ``process``, references to host
globals the sandbox lacks, calls into the runtime's ``workspace``, and every declared name.
Nothing here reads code with regular expressions.

tavernlab choices (a linter's approximation, documented): a global counts as *declared*, and
so is never reported, when the module declares that name anywhere (any scope); ``typeof X``
is a feature test, not a use.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node

from tavernlab.js import (
    LEGACY_RUNTIME_MODULE,
    RUNTIME_MODULE,
    SpecifierSite,
    parse_module,
    scan_module,
    walk_nodes,
)

#: Globals of Node, Deno and browsers that the sandbox does not have (docs/js-and-skills.md).
HOST_GLOBALS = frozenset({
    "require", "module", "exports", "Buffer", "fetch", "XMLHttpRequest", "window", "document",
    "setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval",
    "__dirname", "__filename"})
#: The only members of the sandbox's ``process``.
PROCESS_MEMBERS = frozenset({"argv", "exitCode"})
#: The exports of ``@tauritavern/runtime`` (V5).
RUNTIME_EXPORTS = frozenset({"workspace", "context", "macros", "log"})

#: Parent node types (and the child's field, ``None`` for any) that declare an identifier.
_DECLARING = {
    ("variable_declarator", "name"), ("function_declaration", "name"),
    ("function_expression", "name"), ("generator_function_declaration", "name"),
    ("generator_function", "name"), ("class_declaration", "name"), ("class", "name"),
    ("formal_parameters", None), ("assignment_pattern", "left"), ("array_pattern", None),
    ("rest_pattern", None), ("pair_pattern", "value"), ("object_assignment_pattern", "left"),
    ("namespace_import", None), ("import_clause", None),
    ("catch_clause", "parameter"), ("arrow_function", "parameter"),
    ("for_in_statement", "left"),
}


@dataclass(frozen=True, slots=True)
class EntryExport:
    """A ``default`` or ``main`` export: the statement, and how to call what it exports.

    ``local`` is the name to call (``None`` when the export has none: an anonymous function or
    an expression); ``kind`` is ``function`` (a declaration or a function expression),
    ``expression`` (``export default <expr>``), ``binding`` (an ``export {x as main}`` or a
    ``const``), ``class`` or ``reexport`` (``export ... from``).
    """

    exported: str
    kind: str
    local: str | None
    statement: Node
    value: Node | None = None


@dataclass(frozen=True, slots=True)
class RuntimeCall:
    """A call ``workspace.<method>(...)`` on the runtime's ``workspace``."""

    method: str
    node: Node
    argument_count: int


@dataclass(slots=True)
class ScriptFacts:
    """Everything lint and migrate need from one module (byte offsets into ``source``)."""

    source: bytes
    imports: tuple[SpecifierSite, ...]
    syntax_error: Node | None = None
    entries: dict[str, EntryExport] = field(default_factory=dict)
    uses_argv: bool = False
    host_globals: list[tuple[str, Node]] = field(default_factory=list)
    runtime_calls: list[RuntimeCall] = field(default_factory=list)
    runtime_imports: list[tuple[str, Node]] = field(default_factory=list)
    declared: set[str] = field(default_factory=set)

    @property
    def entry(self) -> EntryExport | None:
        """The function the legacy engine would call: ``default``, else ``main``."""
        return self.entries.get("default") or self.entries.get("main")

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column (in characters) of a byte offset."""
        line_start = self.source.rfind(b"\n", 0, offset) + 1
        column = len(self.source[line_start:offset].decode("utf-8", "replace")) + 1
        return self.source.count(b"\n", 0, offset) + 1, column

    def text(self, node: Node) -> str:
        """The source text of ``node``."""
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _first_error(root: Node) -> Node | None:
    if not root.has_error:
        return None
    return next((n for n in walk_nodes(root) if n.is_error or n.is_missing), root)


def _is_declaration(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if node.type == "shorthand_property_identifier_pattern":
        return True
    if parent.type == "import_specifier":  # `a as b` binds b; a plain `a` binds a
        alias = parent.child_by_field_name("alias")
        return alias is None or alias.id == node.id
    if (parent.type, None) in _DECLARING:
        return True
    return any(kind == parent.type and name is not None
               and (child := parent.child_by_field_name(name)) is not None
               and child.id == node.id for kind, name in _DECLARING)


def _specifier_names(facts: ScriptFacts, node: Node) -> tuple[str, str]:
    """``(local, exported)`` of an ``export_specifier`` (``x as default`` has no alias field
    because ``default`` is a keyword)."""
    children = [c for c in node.children if c.type != "comment"]
    local = facts.text(children[0])
    exported = facts.text(children[2]) if len(children) >= 3 else local
    return local, exported


def _exports(facts: ScriptFacts, statement: Node) -> Iterator[EntryExport]:
    """The ``default``/``main`` exports of one ``export_statement``."""
    is_default = any(c.type == "default" for c in statement.children)
    declaration = statement.child_by_field_name("declaration")
    value = statement.child_by_field_name("value")
    if statement.child_by_field_name("source") is not None:
        clause = next((c for c in statement.children if c.type == "export_clause"), None)
        for spec in clause.named_children if clause is not None else ():
            if (exported := _specifier_names(facts, spec)[1]) in ("default", "main"):
                yield EntryExport(exported, "reexport", None, statement)
        return
    if declaration is not None:
        name_node = declaration.child_by_field_name("name")
        if declaration.type in ("class_declaration", "class"):
            if is_default or (name_node is not None and facts.text(name_node) == "main"):
                yield EntryExport("default" if is_default else "main", "class", None, statement)
        elif declaration.type in ("function_declaration", "generator_function_declaration"):
            name = facts.text(name_node) if name_node is not None else None
            if is_default or name == "main":
                yield EntryExport("default" if is_default else "main", "function", name,
                                  statement, declaration)
        else:  # export const main = ...
            for declarator in declaration.named_children:
                target = declarator.child_by_field_name("name")
                if target is not None and facts.text(target) == "main":
                    yield EntryExport("main", "binding", "main", statement)
        return
    if value is not None:
        if value.type == "identifier":
            yield EntryExport("default", "binding", facts.text(value), statement, value)
        elif value.type == "function_expression":
            name_node = value.child_by_field_name("name")
            yield EntryExport("default", "function",
                              facts.text(name_node) if name_node is not None else None,
                              statement, value)
        elif value.type == "class":
            yield EntryExport("default", "class", None, statement, value)
        else:
            yield EntryExport("default", "expression", None, statement, value)
        return
    clause = next((c for c in statement.children if c.type == "export_clause"), None)
    for spec in clause.named_children if clause is not None else ():
        local, exported = _specifier_names(facts, spec)
        if exported in ("default", "main"):
            yield EntryExport(exported, "binding", local, statement)


def _runtime_bindings(facts: ScriptFacts, statement: Node) -> tuple[set[str], set[str]]:
    """Local names bound to the runtime's ``workspace`` and to its namespace by one import
    statement of either runtime module; records imported names the V5 runtime lacks."""
    source = statement.child_by_field_name("source")
    specifier = next((site.value for site in facts.imports
                      if source is not None and site.start == source.start_byte), None)
    if specifier not in (RUNTIME_MODULE, LEGACY_RUNTIME_MODULE):
        return set(), set()
    workspace_names: set[str] = set()
    namespaces: set[str] = set()
    for node in walk_nodes(statement):
        if node.type == "namespace_import":
            namespaces.update(facts.text(c) for c in node.named_children)
        elif node.type == "import_specifier":
            imported = facts.text(node.child_by_field_name("name") or node)
            alias = node.child_by_field_name("alias")
            if imported == "workspace":
                workspace_names.add(facts.text(alias) if alias is not None else imported)
            elif imported not in RUNTIME_EXPORTS:
                facts.runtime_imports.append((imported, node))
    return workspace_names, namespaces


def _runtime_call(facts: ScriptFacts, node: Node, workspace: set[str],
                  namespaces: set[str]) -> RuntimeCall | None:
    function = node.child_by_field_name("function")
    if function is None or function.type != "member_expression":
        return None
    target = function.child_by_field_name("object")
    method = function.child_by_field_name("property")
    if target is None or method is None:
        return None
    if target.type == "member_expression":  # rt.workspace.<method>, rt a namespace import
        space = target.child_by_field_name("object")
        member = target.child_by_field_name("property")
        on_workspace = (space is not None and space.type == "identifier"
                        and facts.text(space) in namespaces
                        and member is not None and facts.text(member) == "workspace")
    else:
        on_workspace = target.type == "identifier" and facts.text(target) in workspace
    if not on_workspace:
        return None
    arguments = node.child_by_field_name("arguments")
    count = len([c for c in arguments.named_children if c.type != "comment"]) if arguments \
        else 0
    return RuntimeCall(facts.text(method), node, count)


def _note_reference(facts: ScriptFacts, node: Node, name: str) -> None:
    """``process`` and host-global references (``typeof X`` is a feature test)."""
    parent = node.parent
    if parent is not None and parent.type == "unary_expression":
        operator = parent.child_by_field_name("operator")
        if operator is not None and operator.type == "typeof":
            return
    if name == "process":
        member = parent.child_by_field_name("property") if parent is not None and \
            parent.type == "member_expression" else None
        if member is None:
            facts.uses_argv = True  # process passed on or destructured: assume it reads argv
        elif facts.text(member) == "argv":
            facts.uses_argv = True
        elif facts.text(member) not in PROCESS_MEMBERS:
            facts.host_globals.append((f"process.{facts.text(member)}", parent or node))
    elif name in HOST_GLOBALS:
        facts.host_globals.append((name, node))


def analyze_script(source: bytes) -> ScriptFacts:
    """The facts of one module (see the module notes)."""
    root = parse_module(source).root_node
    facts = ScriptFacts(source, scan_module(source).sites, _first_error(root))
    workspace: set[str] = set()
    namespaces: set[str] = set()
    references: list[Node] = []
    for node in walk_nodes(root):
        if node.type == "export_statement":
            for export in _exports(facts, node):
                facts.entries.setdefault(export.exported, export)
        elif node.type == "import_statement":
            names, spaces = _runtime_bindings(facts, node)
            workspace |= names
            namespaces |= spaces
        elif node.type in ("identifier", "shorthand_property_identifier",
                           "shorthand_property_identifier_pattern"):
            if _is_declaration(node):
                facts.declared.add(facts.text(node))
            else:
                references.append(node)
    for node in walk_nodes(root):
        if node.type == "call_expression" and (
                call := _runtime_call(facts, node, workspace, namespaces)) is not None:
            facts.runtime_calls.append(call)
    for node in references:
        name = facts.text(node)
        if name not in facts.declared:
            _note_reference(facts, node, name)
    return facts
