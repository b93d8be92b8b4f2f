"""A listing answers the stats that follow it: each listed entry's full shell path is known
as parsed (find stats every entry it lists), and the mode bits shown follow the policy
exactly as a stat of the same node shows them."""

from __future__ import annotations

from .conftest import Workspace


def test_find_over_a_listing_sees_what_stat_sees(ws: Workspace) -> None:
    for name in ("a.md", "b.md", "sub/c.md"):
        (ws.dir / "scratch" / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (ws.dir / "scratch" / "tree" / name).write_text(name)
    listed = ws.shell("find /scratch/tree -type f | sort; stat -c '%a %s' "
                      "/scratch/tree/sub/c.md /scratch/tree/sub /scratch/tree")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "/scratch/tree/a.md", "/scratch/tree/b.md", "/scratch/tree/sub/c.md",
        "644 8", "755 0", "755 0"]


def test_a_listed_name_with_a_backslash_is_still_refused_by_its_path(ws: Workspace) -> None:
    (ws.dir / "scratch" / "odd").mkdir()
    (ws.dir / "scratch" / "odd" / "back\\slash.md").write_text("x")
    result = ws.shell("ls /scratch/odd; cat '/scratch/odd/back\\slash.md'")
    assert result.stdout.splitlines() == ["back\\slash.md"]
    assert "use / in workspace paths" in result.stderr


def test_read_only_roots_and_their_children_show_their_modes(ws: Workspace) -> None:
    result = ws.shell("stat -c '%n %a' / /scratch /output")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["/ 555", "/scratch 755", "/output 755"]
