"""One process of a fault test: it works on a lab the test built, and may be killed at an
exact point or run out of disk or descriptors while it does.

``python fault_worker.py LAB MODE [options]`` (the test puts tavernlab on ``PYTHONPATH``):

* ``burst RUN``: ``--calls`` ``workspace.write_file`` calls writing ``output/<tag>-<i>.md``;
  after each call returns, one JSON line ``{"callId", "path", "content"}`` on stdout (an
  error result prints ``error: ToolResult: <code>: -: <message>``).
* ``finish RUN``: write and commit ``output/main.md``, then ``workspace.finish`` (a run that
  has ended already is only reported).
* ``export RUN``: export the run to ``--out``.
* ``install``: install the skill folder ``--source`` with ``replace``.
* ``--gate PATH`` (any mode): once the lab is open, create ``PATH.<tag>`` and wait for
  ``PATH`` to exist (at most ``--timeout`` seconds), so several workers start together.
* ``follow RUN``: print every record ``lab.follow`` yields as ``{"seq", "type", "journal"}``
  until the run ends (``--timeout`` seconds with nothing new stops it too).

``--kill-at N`` kills the process (``SIGKILL``, nothing runs after it) just before the
``N``-th file-system operation it makes once the lab is open: an ``open``, a rename, a
removal, a link or a new folder, as the interpreter's audit events report them (``0``: never;
the number made is printed on stderr as ``operations: N`` at the end; ``--trace`` prints each
one as ``op: N <event> <file name>``). ``--kill-on EVENT:TEXT:N`` kills just before the
``N``-th operation ``EVENT`` on a file whose name holds ``TEXT``. ``--fsize BYTES`` and
``--nofile COUNT`` set ``RLIMIT_FSIZE`` / ``RLIMIT_NOFILE`` (``COUNT`` new descriptors at most:
the limit is the lowest free one plus ``COUNT``) once the lab is open, or just before the
``--limit-at``-th operation; an error then
prints ``error: <class>: <code>: <errno>: <message>`` and the process goes on with its next
call (``--nofile`` is lifted again after the first error, and a run that an error failed is
resumed, to show nothing stayed wedged). With ``FAULT_TRACEBACK`` set in the environment each
error's traceback goes to stderr too (to see where a failure came from).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import time
from typing import Any

OPERATIONS = frozenset({"open", "os.rename", "os.remove", "os.link", "os.mkdir", "os.rmdir",
                        "shutil.rmtree", "os.truncate"})


class Killer:
    """Counts file-system operations; kills the process just before the chosen one, and
    with ``trace`` prints each on stderr (``op: <number> <event> <file name>``)."""

    def __init__(self, at: int, *, trace: bool, on: str | None = None, limit_at: int = 0,
                 limit: Any = None) -> None:
        self.at = at
        self.limit_at = limit_at
        self.limit = limit
        self.limiting = False
        self.trace = trace
        self.seen = 0
        self.on: tuple[str, str, int] | None = None
        self.matched = 0
        if on:
            event, text, count = on.split(":")
            self.on = (event, text, int(count))

    def __call__(self, event: str, args: Any) -> None:
        if event in OPERATIONS:
            self.seen += 1
            # The folder and the file: a staged write is told apart from the other temporary
            # files of the lab (``.tavernlab-staging/.tavernlab-tmp-…``).
            path = str(args[0]) if args else ""
            name = "/".join(path.split("/")[-2:])
            if self.seen == self.at:
                os.kill(os.getpid(), signal.SIGKILL)
            if self.seen == self.limit_at and not self.limiting:
                self.limiting = True  # the limit's own listing is an operation too
                self.limit()
            if self.on is not None and event == self.on[0] and self.on[1] in name:
                self.matched += 1
                if self.matched == self.on[2]:
                    os.kill(os.getpid(), signal.SIGKILL)
            if self.trace:
                print(f"op: {self.seen} {event} {name}", file=sys.stderr, flush=True)


def report_error(exc: BaseException) -> None:
    if os.environ.get("FAULT_TRACEBACK"):
        import traceback
        traceback.print_exception(exc)
    code = getattr(exc, "code", "-")
    number = getattr(exc, "errno", None)
    print(f"error: {type(exc).__name__}: {code}: {number}: {exc}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("lab")
    parser.add_argument("mode", choices=("burst", "finish", "export", "install", "follow"))
    parser.add_argument("run", nargs="?")
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--tag", default="w")
    parser.add_argument("--ids", default="faults-worker")
    parser.add_argument("--out")
    parser.add_argument("--source")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--fsize", type=int)
    parser.add_argument("--nofile", type=int)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--kill-on")
    parser.add_argument("--limit-at", type=int, default=0)
    parser.add_argument("--gate")
    args = parser.parse_args()

    from tavernlab.clock import FixedClock, SequentialIds
    from tavernlab.errors import TavernlabError
    from tavernlab.host import Lab

    lab = Lab(args.lab, clock=FixedClock(), ids=SequentialIds(args.ids))
    run = lab.open_run(args.run) if args.run and args.mode != "follow" else None
    if args.mode == "export":
        import tavernlab.replay  # noqa: F401  (registers run.export)
    if args.mode == "install":
        from tavernlab.skills import SkillRepository

        repository = SkillRepository(args.lab)
    soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)

    def limit() -> None:
        if args.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize, resource.RLIM_INFINITY))
        if args.nofile is not None:
            lowest_free = os.open(os.devnull, os.O_RDONLY)
            os.close(lowest_free)
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (lowest_free + args.nofile, soft_nofile[1]))

    killer = Killer(args.kill_at, trace=args.trace, on=args.kill_on,
                    limit_at=args.limit_at, limit=limit)
    if not args.limit_at:
        limit()
    sys.addaudithook(killer)
    failures = (TavernlabError, OSError)
    if args.gate:  # start together with the other workers: say ready, wait for the gate
        open(f"{args.gate}.{args.tag}", "w").close()
        waited = 0.0
        while not os.path.exists(args.gate) and waited < args.timeout:
            time.sleep(0.01)
            waited += 0.01
    if args.mode == "burst":
        assert run is not None
        for index in range(args.calls):
            path, content = f"output/{args.tag}-{index}.md", f"{args.tag} wrote {index}\n"
            try:
                result = run.call_tool("workspace.write_file", {"path": path, "content": content})
            except failures as exc:
                report_error(exc)
                if args.nofile is not None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, soft_nofile)
                if run.status == "failed":  # the host's error ended it: go on
                    try:
                        run.resume()
                    except failures as again:
                        report_error(again)
                continue
            if result.is_error:  # the tool itself could not write (a full disk)
                print(f"error: ToolResult: {result.error_code}: -: {result.content}",
                      flush=True)
                continue
            print(json.dumps({"callId": result.call_id, "path": path, "content": content}),
                  flush=True)
    elif args.mode == "finish":
        assert run is not None
        if run.status in ("completed", "partial_success", "cancelled", "failed"):
            print(json.dumps({"finished": True, "status": run.status}), flush=True)
            return 0  # an earlier process finished it (and was killed afterwards)
        run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "done\n"})
        run.call_tool("workspace.commit", {"path": "output/main.md"})
        result = run.finish()
        print(json.dumps({"finished": not result.is_error, "status": run.status}), flush=True)
    elif args.mode == "export":
        assert run is not None and args.out
        run.export(args.out)
        print(json.dumps({"exported": args.out}), flush=True)
    elif args.mode == "install":
        (result,) = repository.install(args.source, on_conflict="replace").results
        print(json.dumps({"action": result.action, "hash": result.skill.installed_hash}),
              flush=True)
    else:
        for record in lab.follow(args.run, timeout=args.timeout):
            print(json.dumps({"seq": record.seq, "type": record.type,
                              "journal": record.source == "journal"}), flush=True)
    print(f"operations: {killer.seen}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
