"""Tab completion of the magics' lines: subcommands, options and their values.

IPython completes a line by asking its *matchers* in turn; :func:`install_completion` adds one
(API v2) to ``shell.Completer.custom_matchers``. On a line that starts with one of the magics
of :data:`MAGIC_COMPLETERS` (``%tavern``, ``%worktree``, ``%js``/``%%js``, ``%ws_shell``/
``%%ws_shell``; a cell magic on its cell's first line) it answers from the magic's own parser
and suppresses every other matcher, so ``%tavern tree --`` offers ``--depth`` and ``--hidden``,
not Python's builtins. Anywhere else it answers nothing and IPython completes as usual.

What a word completes to comes from the parsers the magics already have:

* a :class:`~tavernlab.notebook._commands.CommandTable` (``%tavern``, ``%worktree``) offers its
  command names word by word (``%tavern run `` → ``cancel finish new open``), then the
  command's options;
* an ``argparse`` parser (the ``magic_arguments`` of ``%%js``, ``%ws_shell``) offers its
  options (those already given are not offered again, unless repeatable) and its choices;
* a value is completed by the argument's ``completer`` attribute when it has one (the
  convention of argcomplete: ``parser.add_argument(...).completer = fn``), else by its
  metavar through :data:`VALUE_COMPLETERS`: ``RUN_ID`` the current lab's run ids, ``PATH``,
  ``ARG`` and ``CMD`` the current run's workspace paths, ``DIR`` its folders (``--cwd``,
  ``--workdir``), ``A,B`` skill names (after the last comma), ``TYPE`` event types, ``VAR``
  the user's variables, ``SLUG`` and ``PATH|SLUG`` the repository's linked worktrees; a lab
  or a skill to install completes to folders and archives on disk (:func:`local_paths`).

Completing never changes anything: no lab is created, no run started (a value that needs one
completes to nothing until it exists). A later magic plugs in with one entry:
``MAGIC_COMPLETERS["agent"] = parser_completer(lambda magics: magics.agent.parser)``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.completer import SimpleCompletion, context_matcher

from tavernlab.events import EVENT_TYPES, JOURNAL_TYPES
from tavernlab.notebook._commands import CommandTable
from tavernlab.paths import WorkspacePath
from tavernlab.worktree import list_worktrees, main_repo_root

#: ``(magics, word) -> candidates``: what the word being typed may become (whole words).
ValueCompleter = Callable[[Any, str], list[str]]
#: ``(magics, words before the cursor, the word being typed) -> candidates``.
LineCompleter = Callable[[Any, list[str], str], list[str]]

#: At most this many candidates are offered for one word.
LIMIT = 200


def _state(magics: Any) -> Any:
    return magics.state


def run_ids(magics: Any, word: str) -> list[str]:
    """The ids of the current lab's runs, newest first (none while no lab is open or on
    disk)."""
    lab = _state(magics).existing_lab()
    return [] if lab is None else [r.id for r in lab.runs() if r.id.startswith(word)]


def skill_names(magics: Any, word: str) -> list[str]:
    """Installed skill names for a comma-separated list: the part after the last comma."""
    lab = _state(magics).existing_lab()
    if lab is None:
        return []
    head, _, tail = word.rpartition(",")
    given = set(head.split(",")) if head else set()
    prefix = f"{head}," if head else ""
    names = sorted({entry.name for entry in lab.skills.list()} - given)
    return [prefix + name for name in names if name.startswith(tail)]


def event_types(magics: Any, word: str) -> list[str]:
    """Every type of ``events.jsonl`` and ``journal.jsonl``."""
    return sorted(t for t in EVENT_TYPES | JOURNAL_TYPES if t.startswith(word))


def workspace_paths(magics: Any, word: str) -> list[str]:
    """Paths of the current run's workspace in the typed folder, as the model sees them
    (folders end in ``/``); none while there is no current run. A leading ``/`` is kept
    (the shell's and the scripts' form)."""
    state = _state(magics)
    if not state.has_run:
        return []
    slash = "/" if word.startswith("/") else ""
    folder = word[len(slash):].rpartition("/")[0]
    try:
        listing = state.run.internals.scope.list_files(
            WorkspacePath.parse_optional(folder or None), 1, LIMIT)
    except Exception:  # a folder that does not exist or is not visible completes to nothing
        return []
    candidates = sorted(slash + e.path + ("/" if e.kind == "directory" else "")
                        for e in listing.entries)
    return [c for c in candidates if c.startswith(word)]


def workspace_folders(magics: Any, word: str) -> list[str]:
    """The folders among :func:`workspace_paths` (a shell's working directory)."""
    return [p for p in workspace_paths(magics, word) if p.endswith("/")]


def namespace_names(magics: Any, word: str) -> list[str]:
    """The user's variables (names not starting with ``_``)."""
    names = magics.shell.user_ns if magics.shell is not None else {}
    return sorted(n for n in names if n.startswith(word) and not n.startswith("_")
                  and n.isidentifier())


def local_paths(magics: Any, word: str) -> list[str]:
    """Folders (ending in ``/``) and skill archives on disk, relative to the working
    directory as typed."""
    folder, _, stem = word.rpartition("/")
    base = Path(os.path.expanduser(folder or "."))
    if word.startswith("/") and not folder:
        base = Path("/")
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    prefix = f"{folder}/" if folder or word.startswith("/") else ""
    found = []
    for entry in entries:
        if not entry.name.startswith(stem) or (entry.name.startswith(".") and not stem):
            continue
        if entry.is_dir():
            found.append(f"{prefix}{entry.name}/")
        elif entry.name.lower().endswith((".zip", ".ttskill", ".tavernrun")):
            found.append(prefix + entry.name)
    return found


def worktree_slugs(magics: Any, word: str) -> list[str]:
    """The slugs (folder names) of the linked worktrees of the repository around the
    working directory."""
    try:
        records = list_worktrees(main_repo_root(os.path.abspath(".")))[1:]
    except Exception:  # not in a git repository
        return []
    return sorted(s for r in records if (s := os.path.basename(r["path"])).startswith(word))


def scopes(magics: Any, word: str) -> list[str]:
    """The skill scopes: ``global`` and the prefixes of the others."""
    return [s for s in ("global", "preset:", "profile:", "character:") if s.startswith(word)]


def no_values(magics: Any, word: str) -> list[str]:
    """Nothing to offer (a new name, such as the slug of a worktree to create)."""
    return []


def completes_with(action: argparse.Action, completer: ValueCompleter) -> argparse.Action:
    """Give the argument ``action`` its own value completer (instead of its metavar's)."""
    action.completer = completer  # type: ignore[attr-defined]
    return action


#: Value completers by metavar (an argument's own ``completer`` attribute wins).
VALUE_COMPLETERS: dict[str, ValueCompleter] = {
    "RUN_ID": run_ids,
    "PATH": workspace_paths,
    "ARG": workspace_paths,
    "CMD": workspace_paths,
    "A,B": skill_names,
    "TYPE": event_types,
    "VAR": namespace_names,
    "DIR": workspace_folders,
    "SLUG": worktree_slugs,
    "PATH|SLUG": worktree_slugs,
    "SCOPE": scopes,
}


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(action, argparse._HelpAction)


def _value_completer(action: argparse.Action) -> ValueCompleter | None:
    own = getattr(action, "completer", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    name = action.metavar if isinstance(action.metavar, str) else None
    return VALUE_COMPLETERS.get(name or action.dest.upper())


def _values(magics: Any, action: argparse.Action, word: str) -> list[str]:
    if action.choices is not None:
        return [str(c) for c in action.choices if str(c).startswith(word)]
    completer = _value_completer(action)
    return [] if completer is None else completer(magics, word)


def complete_arguments(magics: Any, parser: argparse.ArgumentParser, words: list[str],
                       word: str) -> list[str]:
    """Candidates for ``word`` after ``words`` on a line parsed by ``parser``: the pending
    option's values, else options (for a word starting with ``-``) or the next positional
    argument's values (and the options, for an empty word)."""
    options = {s: a for a in parser._actions for s in a.option_strings}
    positionals = [a for a in parser._actions if not a.option_strings]
    used: set[argparse.Action] = set()
    pending: argparse.Action | None = None
    position, rest = 0, False
    for token in words:
        if pending is not None:
            pending = None
        elif rest:
            continue
        elif token == "--":
            rest = True
        elif token.startswith("-") and token.split("=", 1)[0] in options:
            action = options[token.split("=", 1)[0]]
            used.add(action)
            if _takes_value(action) and "=" not in token:
                pending = action
        elif position < len(positionals):
            current = positionals[position]
            if current.nargs in (argparse.REMAINDER, "*", "+"):
                rest = True
            else:
                position += 1
    if pending is not None:
        return _values(magics, pending, word)
    if word.startswith("--") and "=" in word and not rest:
        option, _, value = word.partition("=")
        named = options.get(option)
        return [] if named is None else [f"{option}={v}" for v in _values(magics, named, value)]
    offered: list[str] = []
    if not rest and (word.startswith("-") or not word):
        for action in parser._actions:
            if action in used and not isinstance(action, argparse._AppendAction):
                continue
            long = [s for s in action.option_strings if s.startswith("--")]
            offered += [s for s in long or action.option_strings if s.startswith(word)]
        if word.startswith("-"):
            return sorted(offered)
    if rest and positionals and positionals[-1].nargs in (argparse.REMAINDER, "*", "+"):
        values = _values(magics, positionals[-1], word)
    elif position < len(positionals):
        values = _values(magics, positionals[position], word)
    else:
        values = []
    return values + sorted(offered)


def parser_completer(parser_of: Callable[[Any], argparse.ArgumentParser]) -> LineCompleter:
    """A line completer for a magic whose line one ``argparse`` parser reads
    (``parser_of(magics)``, e.g. ``lambda m: m.js.parser``)."""
    def complete(magics: Any, words: list[str], word: str) -> list[str]:
        return complete_arguments(magics, parser_of(magics), words, word)
    return complete


def table_completer(table_of: Callable[[Any], CommandTable]) -> LineCompleter:
    """A line completer for a magic with subcommands (``table_of(magics)``): command names
    word by word, then the command's own arguments."""
    def complete(magics: Any, words: list[str], word: str) -> list[str]:
        table = table_of(magics)
        names = [tuple(name.split()) for name in table.names]
        size = len(words)
        offered = sorted({n[size] for n in names
                          if len(n) > size and list(n[:size]) == words
                          and n[size].startswith(word)})
        matched = [n for n in names if len(n) <= size and list(n) == words[:len(n)]]
        if matched:
            longest = max(matched, key=len)
            command = table.get(" ".join(longest))
            assert command is not None
            offered += complete_arguments(magics, table.parser(command),
                                          words[len(longest):], word)
        return offered
    return complete


#: Line completers by magic name (without ``%``); a cell magic completes its first line.
MAGIC_COMPLETERS: dict[str, LineCompleter] = {
    "tavern": table_completer(lambda magics: magics.tavern_commands),
    "worktree": table_completer(lambda magics: magics.worktree_commands),
    "js": parser_completer(lambda magics: magics.js.parser),
    "ws_shell": parser_completer(lambda magics: magics.ws_shell.parser),
}

_MAGIC_LINE = re.compile(r"^\s*%{1,2}([A-Za-z_][\w]*)(\s.*)?$", re.DOTALL)


def _split(text: str) -> tuple[list[str], str]:
    """The finished words of ``text`` and the word being typed (an open quote is closed to
    split it)."""
    for closing in ("", '"', "'"):
        try:
            words = shlex.split(text + closing)
        except ValueError:
            continue
        if text[-1:].isspace() or not text:
            return words, ""
        return words[:-1], words[-1] if words else ""
    return text.split(), ""


def complete_line(magics: Any, before_cursor: str, *, first_line: bool = True
                  ) -> tuple[list[str], str] | None:
    """Candidates for the word before the cursor and the fragment they replace, when
    ``before_cursor`` is a completable magic line (``None`` otherwise, and for a line of a
    cell magic's body: ``first_line`` false)."""
    match = _MAGIC_LINE.match(before_cursor)
    if match is None or not first_line:  # a cell magic's body is the magic's, not a line
        return None
    completer = MAGIC_COMPLETERS.get(match.group(1))
    if completer is None or match.group(2) is None:
        return None
    words, word = _split(match.group(2))
    fragment = re.split(r"\s", before_cursor)[-1]
    if fragment.lstrip("'\"") != word:  # a quoted word with spaces: not completed
        return [], fragment
    try:
        candidates = completer(magics, words, word)
    except Exception:  # completion must never break the shell; it offers nothing instead
        return [], fragment
    return list(dict.fromkeys(candidates))[:LIMIT], fragment


def _matcher(magics: Any) -> Callable[[Any], dict[str, Any]]:
    @context_matcher(identifier="tavernlab.magic_arguments")  # type: ignore[untyped-decorator]
    def tavernlab_magic_matcher(context: Any) -> dict[str, Any]:
        """IPython matcher (API v2) for the tavernlab magics' lines."""
        in_cell_body = context.cursor_line > 0 and context.full_text.lstrip().startswith("%%")
        found = complete_line(magics, context.text_until_cursor, first_line=not in_cell_body)
        if found is None:
            return {"completions": [], "suppress": False}
        candidates, fragment = found
        # Nothing to offer is an answer too: the word as typed stands alone, so that Python
        # names never appear on a magic's line.
        return {"completions": [SimpleCompletion(c, type="param")
                                for c in candidates or [fragment]],
                "matched_fragment": fragment, "suppress": True, "ordered": True}

    return tavernlab_magic_matcher  # type: ignore[no-any-return]


def install_completion(shell: Any, magics: Any) -> Callable[[], None]:
    """Add the magics' matcher to ``shell``'s completer; returns what removes it again."""
    completer = getattr(shell, "Completer", None)
    if completer is None:
        return lambda: None
    matcher = _matcher(magics)
    completer.custom_matchers.append(matcher)

    def remove() -> None:
        if matcher in completer.custom_matchers:
            completer.custom_matchers.remove(matcher)
    return remove


__all__ = [
    "MAGIC_COMPLETERS",
    "VALUE_COMPLETERS",
    "complete_arguments",
    "complete_line",
    "install_completion",
    "parser_completer",
    "table_completer",
]
