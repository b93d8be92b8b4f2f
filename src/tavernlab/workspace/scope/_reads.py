"""Read records: what the model has seen of each file (docs/workspace.md).

Each agent of a run (an Invocation) keeps its own records; the text tools consult and update
them (a rewrite or a patch of a file needs a read of its current content first). The shell
and scripts never touch them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ReadRecord:
    """What the model has seen of a file: ``{sha256, fullRead, observedTexts[],
    patchRequiresFullRead}``."""

    sha256: str
    full_read: bool
    observed_texts: list[str] = field(default_factory=list)
    patch_requires_full_read: bool = False


class ReadRecords:
    """The read records of one invocation's tool calls, keyed by workspace path.

    The shell and scripts never touch them: after a shell edit, ``write_file`` (replace) and
    ``apply_patch`` fail as stale until the model reads the file again.
    """

    def __init__(self) -> None:
        self._records: dict[str, ReadRecord] = {}

    def get(self, path: str) -> ReadRecord | None:
        """The record of ``path``, if any."""
        return self._records.get(path)

    def __contains__(self, path: object) -> bool:
        return path in self._records

    def full(self, path: str, sha256: str) -> None:
        """A full read (or a replace write) of content with digest ``sha256``."""
        self._records[path] = ReadRecord(sha256=sha256, full_read=True)

    def partial(self, path: str, sha256: str, text: str) -> None:
        """A partial read showing ``text``.

        Same digest as a partial record: the text joins ``observedTexts``; same digest as a
        full record: nothing changes; a changed digest resets the record but keeps the
        ``patchRequiresFullRead`` flag.
        """
        record = self._records.get(path)
        if record is not None and record.sha256 == sha256:
            if not record.full_read:
                record.observed_texts.append(text)
            return
        flag = record.patch_requires_full_read if record is not None else False
        self._records[path] = ReadRecord(sha256=sha256, full_read=False, observed_texts=[text],
                                         patch_requires_full_read=flag)

    def appended(self, path: str, previous_sha256: str | None, sha256: str) -> None:
        """After an append: a full record only if the file was new, or the previous record was
        a full read of exactly the content that was appended to."""
        record = self._records.get(path)
        if previous_sha256 is None or (record is not None and record.full_read
                                       and record.sha256 == previous_sha256):
            self.full(path, sha256)

    def patched(self, path: str, sha256: str, old: str, new: str, replace_all: bool) -> None:
        """After a successful patch: the record follows the new digest; a partial record's
        observed texts get the same replacement and its flag is cleared."""
        record = self._records[path]
        record.sha256 = sha256
        record.patch_requires_full_read = False
        if not record.full_read:
            record.observed_texts = [
                t.replace(old, new) if replace_all else t.replace(old, new, 1)
                for t in record.observed_texts
            ]

    def flag(self, path: str) -> None:
        """Require a full read before the next patch of ``path``."""
        record = self._records.get(path)
        if record is not None and not record.full_read:
            record.patch_requires_full_read = True
