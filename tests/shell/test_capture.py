"""The capture of a call's streams and the listener beside it.

:class:`StreamCapture` keeps each stream in a list of its own; it must keep exactly what the
former capture (one mapping of lists and one of sizes, by stream name) kept, chunk by chunk,
cap and cut multi-byte characters included.
"""

from __future__ import annotations

import random

import pytest

from tavernlab.shell import ShellOutcome, execute_shell
from tavernlab.shell._engine import StreamCapture
from tavernlab.shell._limits import MAX_STREAM_BYTES
from tavernlab.shell._resources import ShellOptions

from .conftest import Workspace


class FormerCapture:
    """The capture as it was: a mapping of parts and one of sizes, by stream name."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.truncated = False
        self._parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._sizes = {"stdout": 0, "stderr": 0}

    def feed(self, stdout: str, stderr: str) -> None:
        if stdout:
            self._append("stdout", stdout)
        if stderr:
            self._append("stderr", stderr)

    def _append(self, stream: str, text: str) -> None:
        room = self.limit - self._sizes[stream]
        if room <= 0:
            self.truncated = True
            return
        data = text.encode("utf-8")
        if len(data) > room:
            text = data[:room].decode("utf-8", errors="ignore")
            data = text.encode("utf-8")
            self.truncated = True
        self._parts[stream].append(text)
        self._sizes[stream] += len(data)

    @property
    def stdout(self) -> str:
        return "".join(self._parts["stdout"])

    @property
    def stderr(self) -> str:
        return "".join(self._parts["stderr"])


PIECES = ["", "a", "hi\n", "é", "日本", "😀", "x" * 7, "ü😀\n", "\n"]


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5, 8, 17, 64])
def test_the_capture_keeps_what_the_former_capture_kept(limit: int) -> None:
    chooser = random.Random(limit)
    for _ in range(200):
        ours, former = StreamCapture(limit), FormerCapture(limit)
        for _ in range(chooser.randrange(1, 12)):
            out = "".join(chooser.choices(PIECES, k=chooser.randrange(0, 4)))
            err = "".join(chooser.choices(PIECES, k=chooser.randrange(0, 4)))
            ours.feed(out, err)
            former.feed(out, err)
            assert (ours.stdout, ours.stderr, ours.truncated) == (
                former.stdout, former.stderr, former.truncated)


def test_the_default_cap_is_the_stream_limit() -> None:
    capture = StreamCapture()
    capture.feed("x" * MAX_STREAM_BYTES, "")
    assert not capture.truncated
    capture.feed("y", "z")
    assert capture.truncated
    assert capture.stdout == "x" * MAX_STREAM_BYTES and capture.stderr == "z"


def test_a_listener_hears_every_chunk_the_capture_keeps_and_what_it_drops(
        ws: Workspace) -> None:
    heard: list[tuple[str, str]] = []
    big = "for i in $(seq 1 1400); do printf '%099d\\n' $i; done; echo done >&2"
    result = execute_shell(ws.scope, None, big,
                           options=ShellOptions(on_output=lambda o, e: heard.append((o, e))))
    assert result.outcome is ShellOutcome.COMPLETED and result.output_truncated
    everything = "".join(o for o, _ in heard)
    assert everything == "".join(f"{i:099d}\n" for i in range(1, 1401))
    assert result.stdout == everything[:MAX_STREAM_BYTES]
    assert "".join(e for _, e in heard) == result.stderr == "done\n"
    quiet = execute_shell(ws.scope, None, "echo hi; echo oops >&2")
    assert (quiet.stdout, quiet.stderr, quiet.output_truncated) == ("hi\n", "oops\n", False)
