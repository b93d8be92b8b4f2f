"""Shell limits (docs/shell.md): per-file read cap, listing cap and the aggregate input budget."""

from __future__ import annotations

from .conftest import Workspace

MIB = 1024 * 1024


def test_a_file_of_exactly_8_mib_is_read(ws: Workspace) -> None:
    (ws.dir / "scratch" / "big.bin").write_bytes(b"a" * (8 * MIB))
    assert ws.shell("wc -c < /scratch/big.bin").stdout.strip() == str(8 * MIB)


def test_a_file_over_8_mib_fails_with_the_storage_message(ws: Workspace) -> None:
    (ws.dir / "scratch" / "big.bin").write_bytes(b"a" * (8 * MIB + 1))
    result = ws.shell("cat /scratch/big.bin")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ("cat: /scratch/big.bin: Workspace read exceeds 8388608 bytes: "
                             "scratch/big.bin\n")


def test_a_listing_over_4096_entries_fails(ws: Workspace) -> None:
    many = ws.dir / "scratch" / "many"
    many.mkdir()
    for index in range(4097):
        (many / f"f{index:04d}").write_bytes(b"")
    result = ws.shell("ls /scratch/many | wc -l")
    assert "Workspace directory exceeds 4096 entries: scratch/many" in result.stderr
    (many / "f4096").unlink()
    assert ws.shell("ls /scratch/many | wc -l").stdout.strip() == "4096"


def test_the_input_budget_is_8_mib_per_call(ws: Workspace) -> None:
    (ws.dir / "scratch" / "a.bin").write_bytes(b"a" * (5 * MIB))
    (ws.dir / "scratch" / "b.bin").write_bytes(b"b" * (4 * MIB))
    result = ws.shell("wc -c < /scratch/a.bin; wc -c < /scratch/b.bin")
    assert result.stdout == f"{5 * MIB}\n"
    assert result.stderr.endswith(
        "Shell input budget exceeded: this call would read 9437184 bytes, over the "
        "8388608-byte limit.\n")
    # the budget belongs to one call: the next call reads the second file
    assert ws.shell("wc -c < /scratch/b.bin").stdout == f"{4 * MIB}\n"
