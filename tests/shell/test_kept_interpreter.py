"""A kept interpreter, reset between calls, is indistinguishable from a new one.

Each probe runs twice: on a brand-new interpreter (a cache that keeps none) and on a kept
interpreter right after a call that dirtied exactly the state the probe reads. Both must
print the same thing, and the kept cache must have built a single interpreter.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.clock import FixedClock
from tavernlab.shell import ShellOutcome, ShellResources, ShellResult, execute_shell
from tavernlab.shell._interpreters import KeptInterpreters
from tavernlab.shell._resources import ShellOptions

from .conftest import Workspace


def call(ws: Workspace, cache: KeptInterpreters, command: str, workdir: str = "/", *,
         deadline_s: float = 30.0, token: CancelToken | None = None,
         options: ShellOptions | None = None) -> ShellResult:
    """One shell call over ``ws`` taking its interpreter from ``cache``."""
    return execute_shell(ws.scope, None, command, workdir, deadline_s=deadline_s, token=token,
                         resources=ShellResources(interpreters=cache), options=options)


def new_and_kept(ws: Workspace, dirty: str, probe: str, workdir: str = "/",
                 options: ShellOptions | None = None) -> tuple[ShellResult, ShellResult]:
    """``probe`` on a new interpreter, and on a kept one after ``dirty`` ran on it."""
    fresh = call(ws, KeptInterpreters(limit=0), probe, workdir, options=options)
    kept = KeptInterpreters(limit=1)
    call(ws, kept, dirty, options=options)
    again = call(ws, kept, probe, workdir, options=options)
    assert kept.built == 1, "the second call did not reuse the first call's interpreter"
    return fresh, again


def same(fresh: ShellResult, kept: ShellResult) -> str:
    """The probe's output, after checking both runs printed exactly the same."""
    assert (kept.outcome, kept.exit_code, kept.stdout, kept.stderr) == (
        fresh.outcome, fresh.exit_code, fresh.stdout, fresh.stderr)
    assert fresh.outcome is ShellOutcome.COMPLETED
    return fresh.stdout


@pytest.fixture
def cache() -> KeptInterpreters:
    """A cache of one kept interpreter."""
    return KeptInterpreters(limit=1)


def test_variables_arrays_readonly_and_exports_do_not_survive(ws: Workspace) -> None:
    out = same(*new_and_kept(
        ws, "v=1; declare -A m=([a]=1); readonly RO=1; export XX=2 HOME=/scratch",
        "declare -p | grep -v '^declare -- _='; echo --; env | sort; echo v=${v-unset}"))
    assert "v=unset" in out
    assert "XX" not in out and "RO" not in out
    assert "HOME=/\n" in out and "BASHKIT_ALLOW_INPROCESS_PYTHON" not in out


def test_functions_and_aliases_do_not_survive(ws: Workspace) -> None:
    out = same(*new_and_kept(
        ws, "f(){ echo f; }; g(){ :; }; alias ll='ls -l'; shopt -s expand_aliases",
        "declare -f; alias; shopt -p expand_aliases; type -t f || echo no-f"))
    assert out == "shopt -u expand_aliases\nno-f\n"


def test_options_do_not_survive(ws: Workspace) -> None:
    out = same(*new_and_kept(
        ws, "set -e -u -f -o pipefail; shopt -s nullglob extglob dotglob globstar; true",
        "echo \"flags=$-\"; set -o; shopt -p; false | true; echo \"pipe=$?\"; "
        "echo \"${unset_variable-ok}\""))
    assert "pipe=0" in out and "errexit        \toff" in out and "pipefail       \toff" in out
    assert "shopt -u nullglob" in out and "shopt -u globstar" in out


def test_traps_do_not_survive(ws: Workspace) -> None:
    fresh, kept = new_and_kept(ws, "trap 'echo bye' EXIT; trap 'echo oops' ERR INT; true",
                               "trap -p; false; echo after")
    assert same(fresh, kept) == "after\n"


def test_cwd_oldpwd_dir_stack_and_umask_do_not_survive(ws: Workspace) -> None:
    (ws.dir / "scratch" / "deep").mkdir()
    probe = "pwd; echo \"PWD=$PWD OLDPWD=${OLDPWD-unset}\"; dirs -v; umask"
    dirty = "pushd /scratch; pushd /output; cd /scratch/deep; cd /output; umask 077"
    assert same(*new_and_kept(ws, dirty, probe)) == (
        "/\nPWD=/ OLDPWD=/\n 0  /\n0022\n")
    assert same(*new_and_kept(ws, dirty, probe, "/scratch/deep")) == (
        "/scratch/deep\nPWD=/scratch/deep OLDPWD=/scratch/deep\n 0  /scratch/deep\n0022\n")


def test_a_workdir_with_quotes_and_spaces_is_entered_exactly(ws: Workspace) -> None:
    (ws.dir / "scratch" / "it's a $dir; rm -rf x").mkdir()
    out = same(*new_and_kept(ws, "cd /output", "pwd", "/scratch/it's a $dir; rm -rf x"))
    assert out == "/scratch/it's a $dir; rm -rf x\n"


def test_exit_status_starts_at_zero(ws: Workspace) -> None:
    assert same(*new_and_kept(ws, "false", "echo \"rc=$?\"")) == "rc=0\n"


def test_random_is_seeded_alike_under_a_fixed_clock(ws: Workspace) -> None:
    options = ShellOptions(clock=FixedClock(), seed=41)
    out = same(*new_and_kept(ws, "RANDOM=5; echo $RANDOM $RANDOM",
                             "echo $RANDOM $RANDOM $RANDOM; date +%s", options=options))
    assert len(out.split()) == 4


#: One call that changes every piece of shell state a later call could observe.
WHOLE_SESSION = r"""
v=1; arr=(a b c); declare -A map=([k]=v); declare -i num=7; readonly RO=1
export XX=2 HOME=/scratch PATH=/nowhere
f() { echo f; }; g() { :; }
alias ll='ls -l'; shopt -s expand_aliases
set -f -u -o pipefail -o noclobber; shopt -s nullglob extglob dotglob globstar
trap 'echo bye' EXIT; trap 'echo oops' ERR INT
pushd /scratch >/dev/null; pushd /output >/dev/null; cd /scratch/deep; cd /output
umask 077; RANDOM=5; echo $RANDOM $RANDOM >/dev/null; history >/dev/null
false
"""

#: Everything the shell can tell about its own state, in one dump.
STATE_DUMP = r"""echo "rc=$? flags=$-"
declare -p | grep -v '^declare -- _='
echo --; declare -f; alias; set -o; shopt -p; trap -p
pwd; echo "PWD=$PWD OLDPWD=${OLDPWD-unset}"; dirs -v; umask
echo --; env | sort; history; type -t f ll g || echo none
"""


@pytest.mark.parametrize(("workdir", "fixed"), [("/", False), ("/scratch/deep", False),
                                                ("/", True), ("/scratch/deep", True)])
def test_after_a_session_that_changed_everything_the_state_is_a_new_ones(
        ws: Workspace, workdir: str, fixed: bool) -> None:
    # variables, arrays, exports, functions, aliases, set -o and shopt options, traps, cwd,
    # the directory stack, umask, $RANDOM, the history and $?: all dumped at once
    (ws.dir / "scratch" / "deep").mkdir()
    options = ShellOptions(clock=FixedClock(), seed=41) if fixed else None
    probe = STATE_DUMP + ("echo \"random $RANDOM $RANDOM\"; date +%s\n" if fixed else "")
    dirty = call(ws, KeptInterpreters(limit=0), WHOLE_SESSION, options=options)
    assert (dirty.exit_code, dirty.stdout) == (1, "oops\nbye\n")
    out = same(*new_and_kept(ws, WHOLE_SESSION, probe, workdir, options=options))
    assert out.startswith("rc=0 flags=hBc\n")
    assert f"\n{workdir}\nPWD={workdir} OLDPWD={workdir}\n 0  {workdir}\n0022\n" in out
    assert "\nHOME=/\nPWD=" in out and "XX" not in out and "/nowhere" not in out
    assert "\n    1  unset BASHKIT_ALLOW_INPROCESS_PYTHON OLDPWD" in out  # the prelude only
    assert not any(f" {name}=" in out for name in ("v", "arr", "map", "num", "RO", "XX"))
    assert "shopt -u nullglob" in out and "noclobber      \toff" in out
    assert out.rstrip().endswith("none") or fixed


def test_seconds_count_from_the_call_not_from_the_previous_one(ws: Workspace) -> None:
    # an interpreter that waited idle is reset when taken: $SECONDS starts with the call
    fresh = call(ws, KeptInterpreters(limit=0), "echo $SECONDS")
    kept = KeptInterpreters(limit=1)
    call(ws, kept, "SECONDS=100; true")
    time.sleep(1.1)
    again = call(ws, kept, "echo $SECONDS")
    assert kept.built == 1
    assert same(fresh, again) == "0\n"


def test_a_kept_interpreter_serves_each_call_its_own_workspace_and_builtins(
        tmp_path: Path, cache: KeptInterpreters) -> None:
    first, second = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    assert call(first, cache, "touch /scratch/one; echo a > /scratch/a.txt").exit_code == 0
    result = call(second, cache, "touch /scratch/two; ls /scratch; cat /scratch/a.txt")
    assert cache.built == 1
    assert result.stdout == "two\n"
    assert result.exit_code == 1
    assert first.tree("scratch") == ["scratch/a.txt", "scratch/one"]
    assert second.tree("scratch") == ["scratch/two"]


def test_the_next_call_still_times_out_is_cancelled_and_capped(
        ws: Workspace, cache: KeptInterpreters) -> None:
    # a timed-out call, then a normal one, then a shorter deadline: each on the same one
    timed = call(ws, cache, "echo started; while :; do :; done", deadline_s=0.4)
    assert timed.content == "Command timed out.\nstarted"
    assert call(ws, cache, "echo alive").content == "Exit code: 0\nalive"
    assert call(ws, cache, "sleep 30; echo late", deadline_s=0.3).content == "Command timed out."
    assert call(ws, cache, "python3 -c 'while True: pass'",
                deadline_s=0.3).outcome is ShellOutcome.TIMED_OUT
    # a cancelled call leaves no cancellation behind; a later one is cancelled again
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    assert call(ws, cache, "while :; do :; done",
                token=token).outcome is ShellOutcome.CANCELLED
    assert call(ws, cache, "echo fine").content == "Exit code: 0\nfine"
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    assert call(ws, cache, "sleep 30", token=token).outcome is ShellOutcome.CANCELLED
    # the caps count each call's output alone
    big = "for i in $(seq 1 2000); do printf '%099d\\n' $i; done"
    assert call(ws, cache, big).output_truncated
    small = call(ws, cache, "for i in $(seq 1 1000); do printf '%099d\\n' $i; done")
    assert not small.output_truncated and len(small.stdout) == 100_000
    assert call(ws, cache, big).output_truncated
    assert cache.built == 1


def test_calls_on_several_threads_never_share_an_interpreter(ws: Workspace) -> None:
    cache = KeptInterpreters(limit=4)
    barrier = threading.Barrier(3)
    outputs: list[str] = []

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(5):
            result = call(ws, cache, f"x={n}{i}; sleep 0.01; echo $x")
            outputs.append(result.stdout)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outputs) == sorted(f"{n}{i}\n" for n in range(3) for i in range(5))
    assert 1 <= cache.built <= 3
    assert cache.idle() == cache.built


def test_a_workdir_gone_since_its_check_is_still_where_the_command_runs(
        ws: Workspace, cache: KeptInterpreters) -> None:
    # the engine alone (the workdir check is the adapter's): never the root instead
    from tavernlab.shell._engine import BashkitEngine

    engine = BashkitEngine(ws.scope, None, ShellResources(interpreters=cache))
    run = engine.run("pwd; ls", "/scratch/gone", 1e18, CancelToken(), ShellOptions())
    assert run.stdout == "/scratch/gone\n"
    assert run.exit_code != 0
    assert call(ws, cache, "pwd").stdout == "/\n"


def test_an_interrupted_call_drops_its_interpreter_and_the_next_call_runs(
        ws: Workspace, cache: KeptInterpreters) -> None:
    import gc
    import os
    import signal
    import time

    from tavernlab.shell import _vfs_abi as vfs_abi

    assert call(ws, cache, "echo warm").exit_code == 0
    exports = len(vfs_abi._EXPORTS)

    def interrupt_once_running() -> None:
        while not ws.exists("scratch/before.txt"):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running).start()
    with pytest.raises(KeyboardInterrupt):
        call(ws, cache, "echo x > /scratch/before.txt; sleep 60")
    gc.collect()
    # the interrupted interpreter is gone, export and all; the next call builds another
    assert cache.idle() == 0 and len(vfs_abi._EXPORTS) == exports - 1
    assert call(ws, cache, "echo next").stdout == "next\n"
    assert cache.built == 2 and cache.idle() == 1


@pytest.mark.parametrize("workdir", ["/", "/scratch/deep"])
def test_the_python_permission_variable_cannot_be_seen_or_used(
        ws: Workspace, workdir: str) -> None:
    # the interpreter is built with the embedded Python's permission variable; no command
    # ever sees it, and setting it again changes nothing (the embedded Python is allowed
    # for the whole life of the interpreter, whatever the variable says)
    (ws.dir / "scratch" / "deep").mkdir()
    probe = ("echo \"${BASHKIT_ALLOW_INPROCESS_PYTHON-unset}\"; env | grep -c BASHKIT_; "
             "declare -p BASHKIT_ALLOW_INPROCESS_PYTHON; "
             "python3 -c \"import os; print(os.getenv('BASHKIT_ALLOW_INPROCESS_PYTHON'), "
             "sorted(os.environ))\"; "
             "export BASHKIT_ALLOW_INPROCESS_PYTHON=0; python3 -c 'print(7)'")
    fresh, kept = new_and_kept(ws, "export BASHKIT_ALLOW_INPROCESS_PYTHON=1; true", probe,
                               workdir)
    assert (kept.exit_code, kept.stdout, kept.stderr) == (fresh.exit_code, fresh.stdout,
                                                         fresh.stderr)
    assert fresh.stdout == "unset\n0\nNone ['HOME', 'PWD']\n7\n"
    assert fresh.stderr == "bash: line 1: declare: BASHKIT_ALLOW_INPROCESS_PYTHON: not found\n"


@pytest.mark.parametrize("workdir", ["/", "/scratch/deep"])
def test_oldpwd_is_unset_and_cd_dash_fails_as_in_a_new_shell(ws: Workspace, workdir: str) -> None:
    (ws.dir / "scratch" / "deep").mkdir()
    probe = "declare -p OLDPWD; cd -; echo \"rc=$? $PWD\""
    fresh, kept = new_and_kept(ws, "cd /scratch; cd /output; export OLDPWD=/scratch", probe,
                               workdir)
    assert (kept.stdout, kept.stderr) == (fresh.stdout, fresh.stderr)
    assert fresh.stdout == f"rc=1 {workdir}\n"
    assert fresh.stderr == ("bash: line 1: declare: OLDPWD: not found\n"
                            "bash: line 1: cd: OLDPWD not set\n")


def test_history_shows_the_prelude_alone_never_an_earlier_calls_commands(
        ws: Workspace) -> None:
    # what a call's `history` lists: the one-line prelude that ran before its command (its
    # own command is recorded once it finished), nothing of an earlier call on the same
    # interpreter; $_ is the prelude's last word and $LINENO counts the command's own lines
    (ws.dir / "scratch" / "deep").mkdir()
    probe = "echo \"[$_]\"\necho one\nhistory\necho \"line $LINENO\""
    fresh, kept = new_and_kept(ws, "echo secret-earlier-call; history", probe)
    assert same(fresh, kept) == (
        "[OLDPWD]\none\n    1  unset BASHKIT_ALLOW_INPROCESS_PYTHON OLDPWD\nline 4\n")
    fresh, kept = new_and_kept(ws, "echo secret-earlier-call; history", probe, "/scratch/deep")
    assert same(fresh, kept) == (
        "[OLDPWD]\none\n    1  unset BASHKIT_ALLOW_INPROCESS_PYTHON OLDPWD; "
        "cd -- /scratch/deep && unset OLDPWD\nline 4\n")


def test_a_forked_child_builds_its_own_interpreter_and_deadline_thread(
        ws: Workspace, cache: KeptInterpreters) -> None:
    # the parent's kept interpreter and watchdog thread do not exist in a child: the child
    # builds an interpreter, its deadline still stops an endless loop, and the parent's kept
    # one serves the parent again afterwards
    import json
    import os

    assert call(ws, cache, "echo parent").stdout == "parent\n"
    assert call(ws, cache, "while :; do :; done", deadline_s=0.3).outcome is (
        ShellOutcome.TIMED_OUT)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: two calls, what it saw, then leave at once
        try:
            first = call(ws, cache, "echo child").stdout
            timed = call(ws, cache, "while :; do :; done", deadline_s=0.3).outcome.value
            report = [first, timed, cache.built, cache.idle()]
        except BaseException as error:  # reported to the parent
            report = [repr(error)]
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    import select
    import signal

    if not select.select([read], [], [], 60)[0]:  # never wait forever on a stuck child
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    assert text, "the child reported nothing within 60 s"
    assert json.loads(text) == ["child\n", "timed_out", 2, 1]
    assert call(ws, cache, "echo again").stdout == "again\n"
    assert cache.built == 1
