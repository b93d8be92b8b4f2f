"""``js --help`` (docs/js-and-skills.md; the wording is tavernlab's own).

The text is assembled: fixed paragraphs plus a "Built-in modules" paragraph generated from the
command's :class:`~tavernlab.js._builtins.BuiltinModules`, so the help lists exactly the
modules that resolve. When the kit joins that set (see :mod:`tavernlab.js._builtins`) the
paragraph reads ``Built-in modules: @tauritavern/runtime and the kit:
@tauritavern/kit/dayjs, es-toolkit, ...`` with no edit here.
"""

from __future__ import annotations

import textwrap

from tavernlab.js._builtins import COMMAND_BUILTINS, BuiltinModules

#: Width of the wrapped "Built-in modules" paragraph (the fixed paragraphs fit in it too).
HELP_WIDTH = 78

_BEFORE_BUILTINS = """\
js, node, deno: run a JavaScript ES module in the workspace sandbox (QuickJS).

Usage:
  js FILE [ARG...]          run a .js/.mjs workspace file
  js -- FILE [ARG...]       same; use when FILE starts with "-"
  js - [ARG...] < FILE      read the module from stdin
  js -e SOURCE [ARG...]     run SOURCE; put -- before args that look like options
  deno run FILE [ARG...] | deno eval SOURCE [ARG...]
Examples:
  js /scratch/task.js arg1 --option 'arg with spaces'
  js -e 'console.log(process.argv)' -- --help
Arguments: everything after the entry (or after the eval source) is passed
  as strings in process.argv: [command, entry, ...args]; eval has no entry.
Files: import { workspace, context, macros, log } from '@tauritavern/runtime'
  workspace.readText/writeText/exists/listFiles use workspace-root paths
  (output/main.md); writes are immediate and are not rolled back.
  Relative imports resolve from the importing file; FILE resolves from cwd.
Context: context.worldInfo, context.variables, context.macro are frozen at
  run start; macros.render(text) expands {{macros}} once.
Output: console.log/info/debug -> stdout, console.warn/error and log.* ->
  stderr; 128 KiB per stream. Print results with JSON.stringify.
Exit: process.exitCode (integer 0-255, default 0); an uncaught error exits 1.
"""

_AFTER_SUMMARY = ("Bundle other libraries into the skill (scripts/vendor/). No Node/Deno APIs, "
                  "npm, TypeScript, network, timers or processes.")


def help_text(builtins: BuiltinModules = COMMAND_BUILTINS) -> str:
    """The whole help, with the built-in modules of ``builtins``."""
    paragraph = f"Built-in modules: {builtins.summary()}. {_AFTER_SUMMARY}"
    lines = textwrap.wrap(paragraph, HELP_WIDTH, subsequent_indent="  ",
                          break_on_hyphens=False, break_long_words=False)
    return _BEFORE_BUILTINS + "\n".join(lines) + "\n"


#: The help of the ``js`` command as it is configured.
HELP_TEXT = help_text()
