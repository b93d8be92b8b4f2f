"""Comparing a replayed run with its recording, outcome by outcome.

Everything is compared from the files the two runs left, so a run played by
:func:`tavernlab.replay.replay` and one played cell by cell in a notebook are checked the
same way:

1. each **tool call**'s stored result (``isError``/``errorCode``, the shell's exit code, the
   content with a unified diff, the structured content, the resource refs);
2. each **js job**'s ``js-jobs/`` record (exit code, stdout and stderr with diffs);
3. the **record stream** (events and journal merged): records are compared without their
   envelope (``seq``, ``id``, ``runId``, ``timestamp``, ``eventSeq``), aligned with
   :class:`difflib.SequenceMatcher`, so an extra, missing or changed record is one divergence
   at the action that produced it; a drift of the envelope alone (a clock read once more) is
   reported once, where it starts, unless an earlier divergence already explains it;
4. every **file** of the run directory (bytes; text gets a diff), the run's **index** entry
   and summary, the **persist states** it published and the **chat swipes** it committed.

A file already reported through 1-3 (a result, a job record, the two logs) is not reported
again as a file. When the replay ran another version of a skill, that skill's installed hash
is the change asked for (the report names both hashes): the replayed hash is read as the
recorded one wherever the replayed files hold it, and every other difference counts.
"""

from __future__ import annotations

import difflib
import heapq
import json
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import tavernlab.layout as layout
from tavernlab.events import Event, parse_event
from tavernlab.host import WORKSPACES_DIR, Run, RunIndex, order_key
from tavernlab.replay._actions import JsJob, ToolCall, action_at, describe
from tavernlab.replay._bundle import Bundle, sha256_of
from tavernlab.replay._errors import BundleInvalid
from tavernlab.replay._manifest import Tree
from tavernlab.replay._report import Divergence, DivergenceKind
from tavernlab.replay._trees import scan_tree
from tavernlab.workspace.storage import INTERNAL_NAMES

#: Envelope fields of a record: compared only after the content matched.
ENVELOPE = ("seq", "id", "runId", "timestamp", "eventSeq")
LOGS = layout.LOGS


def text_diff(recorded: str, replayed: str, name: str) -> str:
    """A unified diff of two texts (``recorded/<name>`` → ``replayed/<name>``)."""
    lines = difflib.unified_diff(recorded.splitlines(), replayed.splitlines(),
                                 f"recorded/{name}", f"replayed/{name}", lineterm="")
    return "\n".join(lines) + "\n"


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class Comparison:
    """One comparison of a recording (``bundle``) with the replayed ``run``."""

    def __init__(self, bundle: Bundle, run: Run,
                 substitutions: Mapping[str, str] | None = None) -> None:
        self.bundle = bundle
        self.substitutions = [(new.encode(), old.encode())
                              for new, old in (substitutions or {}).items() if new != old]
        self.manifest = bundle.manifest
        self.run = run
        self.dir = run.dir
        self.actions = self.manifest.actions
        self.labels = [describe(a) for a in self.actions]
        self.starts = [a.at for a in self.actions]
        self.found: list[Divergence] = []
        self.covered: set[str] = set()

    def replayed(self, path: Path) -> bytes | None:
        """A file the replay left (``None`` when missing), substitutions applied."""
        if not path.is_file():
            return None
        data = path.read_bytes()
        for new, old in self.substitutions:
            data = data.replace(new, old)
        return data

    def replayed_json(self, path: Path) -> Any:
        """A JSON file the replay left (``None`` when missing)."""
        data = self.replayed(path)
        return None if data is None else json.loads(data)

    @property
    def end(self) -> int:
        """The index of the state after the last action."""
        return len(self.actions)

    def add(self, index: int, kind: DivergenceKind, subject: str, expected: Any = None,
            actual: Any = None, diff: str | None = None) -> None:
        """Record a divergence at action ``index``."""
        if index < 0:
            label = "start of the run"
        elif index >= self.end:
            label = "after the last action"
        else:
            label = self.labels[index]
        self.found.append(Divergence(index, label, kind, subject,
                                     None if expected is None else str(expected),
                                     None if actual is None else str(actual), diff))

    def run_all(self) -> list[Divergence]:
        """Every comparison, divergences ordered by action."""
        self.results()
        self.jobs()
        self.stream()
        self.files()
        self.elsewhere()
        return sorted(self.found, key=lambda d: d.index)

    # -- 1 and 2: results of tool calls and js jobs ----------------------------------------------

    def results(self) -> None:
        """Each tool call's stored result."""
        for index, action in enumerate(self.actions):
            if not isinstance(action, ToolCall) or action.result_path is None:
                continue
            path = action.result_path
            recorded = self.bundle.run_json(path)
            replayed = self.replayed_json(self.dir / path)
            before = len(self.found)
            if replayed is None:
                self.add(index, "result", path, "stored", "missing")
            else:
                self._result(index, path, recorded, replayed)
            if len(self.found) > before:
                self.covered.add(path)

    def _result(self, index: int, path: str, recorded: dict[str, Any],
                replayed: dict[str, Any]) -> None:
        def code(result: dict[str, Any]) -> str:
            return str(result.get("errorCode")) if result.get("isError") else "ok"

        if code(recorded) != code(replayed):
            self.add(index, "error_code", "of the result", code(recorded), code(replayed))
        exits = [r["structured"].get("exitCode") if isinstance(r.get("structured"), dict)
                 else None for r in (recorded, replayed)]
        if exits[0] != exits[1]:
            self.add(index, "exit_code", "of the shell", exits[0], exits[1])
        content = [str(r.get("content", "")) for r in (recorded, replayed)]
        if content[0] != content[1]:
            self.add(index, "result", "content", diff=text_diff(content[0], content[1], path))
        elif recorded.get("structured") != replayed.get("structured"):
            self.add(index, "result", "structured content", diff=text_diff(
                _pretty(recorded.get("structured")), _pretty(replayed.get("structured")), path))
        if recorded.get("resourceRefs") != replayed.get("resourceRefs"):
            self.add(index, "result", "resource refs", recorded.get("resourceRefs"),
                     replayed.get("resourceRefs"))

    def jobs(self) -> None:
        """Each js job's exit code and output."""
        for index, action in enumerate(self.actions):
            if not isinstance(action, JsJob):
                continue
            recorded = self.bundle.run_json(action.job_path)
            replayed = self.replayed_json(self.dir / action.job_path)
            before = len(self.found)
            if replayed is None:
                self.add(index, "exit_code", "of the job", recorded.get("exitCode"),
                         "no record")
            else:
                if recorded.get("exitCode") != replayed.get("exitCode"):
                    self.add(index, "exit_code", "of the job", recorded.get("exitCode"),
                             replayed.get("exitCode"))
                for stream in ("stdout", "stderr"):
                    texts = [str(r.get(stream, "")) for r in (recorded, replayed)]
                    if texts[0] != texts[1]:
                        self.add(index, stream, "of the job", diff=text_diff(
                            texts[0], texts[1], f"{action.job_path}:{stream}"))
            if len(self.found) > before:
                self.covered.add(action.job_path)

    # -- 3: the record stream ---------------------------------------------------------------------

    def scan(self, top: Path, skip: frozenset[str] = frozenset()) -> Tree:
        """A replayed directory's tree, substitutions applied before hashing."""
        def digest(data: bytes) -> str:
            for new, old in self.substitutions:
                data = data.replace(new, old)
            return sha256_of(data)

        return scan_tree(top, add=digest, skip=skip)

    def _logs(self) -> tuple[list[bytes], list[bytes]]:
        recorded = [self.bundle.run_file(n) if self.bundle.has_run_file(n) else b""
                    for n in LOGS]
        if self.manifest.format_version < 3:  # compared as upgraded, never as recorded bytes
            recorded = [self.bundle.recorded_events(), self.bundle.recorded_journal()]
            self.covered.update(LOGS)
        replayed = [self.replayed(self.dir / n) or b"" for n in LOGS]
        return recorded, replayed

    def stream(self) -> None:
        """The merged events and journal, record by record."""
        recorded_logs, replayed_logs = self._logs()
        if recorded_logs == replayed_logs:
            return
        self.covered.update(LOGS)
        recorded, replayed = _merged(*recorded_logs), _merged(*replayed_logs)
        keys = [[_content_key(raw) for raw in side] for side in (recorded, replayed)]
        matcher = difflib.SequenceMatcher(None, keys[0], keys[1], autojunk=False)
        first_content: int | None = None
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                if first_content is None:
                    self._envelope(recorded, replayed, i1, i2, j1)
                continue
            first_content = i1 if first_content is None else first_content
            index = action_at(self.starts, i1 if tag != "insert" else max(i1 - 1, 0))
            types = [[r.get("type") for r in side[a:b]]
                     for side, a, b in ((recorded, i1, i2), (replayed, j1, j2))]
            self.add(index, "event", f"records {i1}..{i2 - 1} of the recording"
                     if tag != "insert" else f"records inserted before record {i1}",
                     ", ".join(map(str, types[0])) or "none",
                     ", ".join(map(str, types[1])) or "none",
                     text_diff("\n".join(_pretty(r) for r in recorded[i1:i2]),
                               "\n".join(_pretty(r) for r in replayed[j1:j2]), "records"))

    def _envelope(self, recorded: list[dict[str, Any]], replayed: list[dict[str, Any]],
                  i1: int, i2: int, j1: int) -> None:
        if any(d.kind == "event" and "envelope" in d.subject for d in self.found):
            return
        for offset in range(i2 - i1):
            a, b = recorded[i1 + offset], replayed[j1 + offset]
            fields = [f for f in ENVELOPE if a.get(f) != b.get(f)]
            if fields:
                position = i1 + offset
                self.add(action_at(self.starts, position), "event",
                         f"envelope of record {position} ({a.get('type')}): "
                         f"{', '.join(fields)} drift from here on",
                         {f: a.get(f) for f in fields}, {f: b.get(f) for f in fields})
                return

    # -- 4: files, index, persist states, chat ------------------------------------------------

    def files(self) -> None:
        """Every file and directory of the run directory."""
        replayed = self.scan(self.dir, skip=INTERNAL_NAMES)
        self._tree("file", "", self.manifest.run, replayed, self.dir, self._owner)

    def _tree(self, kind: DivergenceKind, prefix: str, recorded: Tree, replayed: Tree,
              top: Path, owner: Any) -> None:
        for path in sorted(set(recorded.files) | set(replayed.files)):
            if prefix + path in self.covered:
                continue
            a, b = recorded.files.get(path), replayed.files.get(path)
            if a == b:
                continue
            index = owner(path)
            if b is None:
                self.add(index, kind, prefix + path, "present", "missing")
            elif a is None:
                self.add(index, kind, prefix + path, "absent", "present")
            else:
                texts = _text(self.bundle.blob(a)), _text(self.replayed(top / path) or b"")
                if texts[0] is not None and texts[1] is not None:
                    self.add(index, kind, prefix + path, diff=text_diff(
                        texts[0], texts[1], prefix + path))
                else:
                    self.add(index, kind, prefix + path, f"sha256 {a}", f"sha256 {b}")
        for directory in sorted(set(recorded.directories) ^ set(replayed.directories)):
            present = directory in replayed.directories
            self.add(owner(directory), kind, f"{prefix}{directory}/",
                     "absent" if present else "present", "present" if present else "missing")

    @cached_property
    def _owners(self) -> dict[str, int]:
        """Run file -> the action that last wrote it in the recording."""
        owners: dict[str, int] = {}
        by_id: dict[str, int] = {}
        for index, action in enumerate(self.actions):
            if isinstance(action, ToolCall):
                by_id[action.call_id] = index
                owners[action.arguments_path] = index
                owners.update({p: index for p in (action.result_path,) if p})
            elif isinstance(action, JsJob):
                by_id[action.job_id] = index
                owners[action.job_path] = index
        for raw in _lines(self.bundle.run_file(layout.JOURNAL)
                          if self.bundle.has_run_file(layout.JOURNAL) else b""):
            payload = raw.get("payload", {})
            if raw.get("type") == "file_changed" and payload.get("callId") in by_id:
                owners[str(payload.get("path"))] = by_id[payload["callId"]]
        return owners

    def _owner(self, path: str) -> int:
        """The action that last wrote a run file (from the recording), else the end."""
        return self._owners.get(path, self.end)

    def elsewhere(self) -> None:
        """The run's index entry and summary, its persist states and its chat swipes."""
        chat = self.run.chat
        assert chat is not None
        index = RunIndex(chat.data_dir / WORKSPACES_DIR)
        top = index.runs_dir.parent
        replayed = Tree(files={p: sha256_of(data) for p in
                               (f"runs/{self.run.id}.json", f"run-summaries/{self.run.id}.json")
                               if (data := self.replayed(top / p)) is not None})
        self._tree("file", "index/", self.manifest.index, replayed, top, lambda _: self.end)
        base = self.manifest.persist_base.state_id if self.manifest.persist_base else None
        published = {s.state_id: s.tree for s in self.manifest.persist_states}
        present = [i for i in chat.persist.state_ids() if i != base]
        for state_id in sorted(set(published) | set(present)):
            folder = chat.persist.state_dir(state_id)
            tree = self.scan(folder) if state_id in present else Tree()
            self._tree("persist_state", f"{state_id}/", published.get(state_id, Tree()),
                       tree, folder, lambda _: self.end)
        stored = self.replayed_json(chat.path) or {}
        messages = stored.get("messages", [])
        for output in self.manifest.chat_outputs:
            message = messages[output.message_index] if output.message_index < len(messages) \
                else {}
            swipes = message.get("swipes", [])
            swipe = swipes[output.swipe_id] if output.swipe_id < len(swipes) else None
            if swipe != output.swipe:
                self.add(self.end, "chat", f"message {output.message_index} swipe "
                         f"{output.swipe_id}", diff=text_diff(_pretty(output.swipe),
                                                              _pretty(swipe), "chat"))


def _lines(data: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of a log, one a line; a line that is not one is ``BundleInvalid``
    (only a recording can hold such a line)."""
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise BundleInvalid(f"log line {number} of the recording is not JSON: {exc}"
                                ) from None
        if not isinstance(value, dict):
            raise BundleInvalid(f"log line {number} of the recording is not a JSON object")
        yield value


def _event(raw: dict[str, Any]) -> Event:
    try:
        return parse_event(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise BundleInvalid(f"a log record of the recording is not an event: {where}: "
                            f"{error['msg']}") from None


def _merged(events: bytes, journal: bytes) -> list[dict[str, Any]]:
    """Both logs' records (raw JSON) in the feed's merged order."""
    def typed(data: bytes) -> list[tuple[Event, dict[str, Any]]]:
        return [(_event(raw), raw) for raw in _lines(data)]

    merged = heapq.merge(typed(events), typed(journal), key=lambda pair: order_key(pair[0]))
    return [raw for _, raw in merged]


def _content_key(raw: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in raw.items() if k not in ENVELOPE}, sort_keys=True)


def compare(bundle: Bundle, run: Run, substitutions: Mapping[str, str] | None = None
            ) -> list[Divergence]:
    """Every divergence between the recording in ``bundle`` and the replayed ``run``
    (``substitutions``: replayed text -> recorded text, the hashes of replaced skills)."""
    return Comparison(bundle, run, substitutions).run_all()
