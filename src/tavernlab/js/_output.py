"""Where the output of one ``js`` run goes: collected in full, streamed as it is produced.

The worker sends every ``console.*`` line the moment the script writes it (the parent takes it
at once, or in a job's first 2 ms with the job's next message), and ``log.*`` lines arrive as
capability calls, so the parent sees output in the order the script produced it.
:class:`CommandOutput` keeps all of it (already capped by the worker at 128 KiB per stream)
for the final :class:`~tavernlab.js.CommandResult`, and hands each chunk to an
optional callback at once: ``on_output(stream, text)`` with ``stream`` ``"stdout"`` or
``"stderr"``. That is how the notebook shows a cell's output while it runs. The command's own
text is delivered the same way: the help, an argument or load error line, and the failure
report as the last stderr chunk (the result's stderr holds the report fitted into the cap,
with earlier stderr trimmed if needed; the streamed chunks are never taken back).

The callback runs in the thread that called ``run_js_command`` (the thread serving the job),
between two messages of the worker: keep it short, and marshal to another thread (a widget's,
a kernel's output routing) if needed. An exception it raises cancels the job and propagates
out of ``run_js_command`` once the worker has stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

OutputStream = Literal["stdout", "stderr"]
#: ``on_output(stream, text)``: one chunk of a run's output, as soon as it exists.
OutputCallback = Callable[[OutputStream, str], None]


class CommandOutput:
    """The stdout and stderr of one run, plus the optional streaming callback."""

    def __init__(self, on_output: OutputCallback | None = None) -> None:
        self.on_output = on_output
        self._stdout: list[str] = []
        self._stderr: list[str] = []

    def write(self, stream: OutputStream, text: str) -> None:
        """Keep ``text`` and deliver it to the callback."""
        (self._stdout if stream == "stdout" else self._stderr).append(text)
        if self.on_output is not None and text:
            self.on_output(stream, text)

    @property
    def stdout(self) -> str:
        """Everything written to stdout so far."""
        return "".join(self._stdout)

    @property
    def stderr(self) -> str:
        """Everything written to stderr so far."""
        return "".join(self._stderr)
