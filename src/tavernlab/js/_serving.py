"""Driving one job on one worker: output, capability calls, stopping, crashes.

:func:`serve_job` runs in the thread that submitted the job. It sends the job, then sleeps on
the worker's socket and the job's wake pipe and handles what arrives:

* ``out``: console output, from the worker's output pipe, handed to the server's ``output``
  in order before anything that arrives on the socket after it (that is the stream a caller's
  ``on_output`` sees). During the job's first :data:`OUTPUT_DELAY` it waits in the pipe until
  the next message, so a short job wakes this thread once; after that each chunk wakes it;
* ``call``: a capability call, served by the server in this thread - so the Invocation's
  ``ScopedWorkspaceFs``, its lock and its mutation tracker are used exactly as by the other
  tools - unless the job is stopping, in which case it is refused (the guest sees the call
  fail, then jsbox interrupts it: :mod:`tavernlab.js._engine`);
* ``done``: the outcome;
* ``retire``: the worker left after its previous job (its memory stayed over the limit)
  before it read this one; a fresh process takes its place and, once ``ready``, the job.

Stopping: once the :class:`~tavernlab.js._stopping.StopRequest` has a reason (cancel, the
deadline, a KeyboardInterrupt, an exception from the server) a cancel notice is sent; a worker
that has not reported within ``grace`` seconds (a pure CPU loop: jsbox cannot be interrupted
from outside) is killed and a fresh process is started in its place. The worker's own jsbox
timeout fires at the deadline; the kill at ``deadline + grace`` is the hard backstop. A worker
that dies fails only its own job, with ``The JavaScript worker process exited unexpectedly
(...)``, and is replaced.
"""

from __future__ import annotations

import time
from typing import Any

from tavernlab.errors import Cancelled
from tavernlab.js._errors import CapabilityError
from tavernlab.js._job import CapabilityServer, Job, JobOutcome
from tavernlab.js._process import WorkerProcess
from tavernlab.js._stopping import StopRequest

#: How long after sending a job the parent starts waking for console output on its own. Until
#: then output waits in the worker's output pipe and is taken, in order, when the next call,
#: the outcome or the worker's end arrives: a job that prints and ends within this time wakes
#: the parent once instead of twice. After it, each chunk wakes the parent as it comes.
OUTPUT_DELAY = 0.002


def serve_job(worker: WorkerProcess, job: Job, server: CapabilityServer, deadline: float,
              stop: StopRequest, grace: float) -> tuple[JobOutcome, BaseException | None]:
    """Run ``job`` on ``worker`` (ready and idle) until it reports, dies or is killed.

    Returns the outcome and the exception the server raised, if any (the caller re-raises it
    once the worker is back in the pool).
    """
    worker.send(("job", job, deadline))
    return _ServedJob(worker, job, server, deadline, stop, grace).run()


class _ServedJob:
    """The parent's side of one running job."""

    def __init__(self, worker: WorkerProcess, job: Job, server: CapabilityServer,
                 deadline: float, stop: StopRequest, grace: float) -> None:
        self.worker = worker
        self.job = job
        self.server = server
        self.deadline = deadline
        self.stop = stop
        self.grace = grace
        self.fault: BaseException | None = None
        self.stopping_since: float | None = None
        #: Until then output is only taken with the next message (see ``OUTPUT_DELAY``).
        self.output_from: float | None = time.monotonic() + OUTPUT_DELAY

    def run(self) -> tuple[JobOutcome, BaseException | None]:
        worker = self.worker
        assert worker.conn is not None
        while True:
            try:
                wake_at = (self.deadline if self.stopping_since is None
                           else self.stopping_since + self.grace)
                quiet_until = self.output_from
                if quiet_until is not None:
                    wake_at = min(wake_at, quiet_until)
                readable, output = worker.wait_job(wake_at, self.stop.wake_fd,
                                                   quiet_until is None)
                if quiet_until is not None and time.monotonic() >= quiet_until:
                    self.output_from = None
                    output = True
                if output or readable:
                    self._take_output()
                if readable:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        return self._crashed(), self.fault
                    outcome = self._handle(message)
                    if outcome is not None:
                        return outcome, self.fault
                elif not output:
                    self.stop.drain()
            except KeyboardInterrupt:  # only when SIGINT could not be routed to the stop
                self.stop.interrupt()
                return self._killed("cancel"), self.fault
            stopped = self._enforce_stop()
            if stopped is not None:
                return stopped, self.fault

    def _take_output(self) -> None:
        """Deliver the output messages waiting in the worker's output pipe, in order (the worker
        wrote each before anything it sent on the socket after it)."""
        for message in self.worker.take_output():
            self._handle(message)

    def _handle(self, message: tuple[Any, ...]) -> JobOutcome | None:
        kind = message[0]
        if kind == "done":
            self.worker.rss = message[1].get("idle_rss")
            return JobOutcome.from_worker(message[1], self.worker.pid)
        if kind == "out":
            try:
                self.server.output(message[1], message[2])
            except Exception as exc:  # a failing output callback: stop the job, re-raise
                self._fail(exc)
        elif kind == "call":
            self.worker.send(("reply", self._reply(message[1], message[2], message[3])))
        elif kind == "retire":  # it retired before reading the job: give it to a fresh one
            self.worker.restart()
        elif kind == "ready":
            self.worker.ready = True
            self.worker.send(("job", self.job, self.deadline))
        return None

    def _reply(self, op: str, a: Any, b: Any) -> tuple[Any, ...]:
        reason = self.stop.poll(self.deadline)
        if reason is not None:
            return ("interrupt", reason)
        try:
            return ("ok", self.server.serve(op, a, b))
        except CapabilityError as exc:
            return ("error", exc.kind, exc.message)
        except Cancelled:  # the scope's own cancel check (the shell's flag)
            self.stop.reason = "cancel"
            return ("interrupt", "cancel")
        except Exception as exc:  # an internal fault: stop the job, re-raise
            self._fail(exc)
            return ("interrupt", "cancel")

    def _fail(self, exc: Exception) -> None:
        if self.fault is None:
            self.fault = exc
        self.stop.reason = self.stop.reason or "cancel"

    def _enforce_stop(self) -> JobOutcome | None:
        """Send the cancel notice once; kill the worker after the grace period."""
        reason = self.stop.poll(self.deadline)
        if reason is None:
            return None
        now = time.monotonic()
        if self.stopping_since is None:
            self.stopping_since = now
            self.worker.send(("cancel", reason))
        if self.stop.urgent or now - self.stopping_since >= self.grace:
            return self._killed(reason)
        return None

    def _killed(self, reason: str) -> JobOutcome:
        self._take_output()
        pid = self.worker.pid
        self.worker.restart()
        return JobOutcome("interrupted", reason=reason, pid=pid)

    def _crashed(self) -> JobOutcome:
        self._take_output()
        pid = self.worker.pid
        why = self.worker.death()
        self.worker.restart()
        return JobOutcome("crashed", pid=pid,
                          text=f"The JavaScript worker process exited unexpectedly ({why}).")
