"""Many replays at once: :func:`replay_many` over any :class:`concurrent.futures.Executor`.

Each bundle is replayed by :func:`replay_one` in a worker (its own temporary lab; nothing is
shared between replays), so anything that runs a picklable top-level function on the
workers will do: the default :class:`~concurrent.futures.ProcessPoolExecutor` sized to the
machine (``spawn`` workers, so a script calling :func:`replay_many` needs the usual
``if __name__ == "__main__":`` guard), a thread pool, or a cluster's executor. A skill
replacement names a skill of the corpus; a bundle whose run did not bind it replays its own
skills. A Dask cluster's ``client.get_executor()``
and Ray's ``ray.util`` executors are such executors::

    from distributed import Client
    client = Client("tcp://scheduler:8786")        # a real cluster
    reports = replay_many(paths, executor=client.get_executor())

Every worker needs tavernlab installed (the same version is best) and must be able to read
the bundle paths (a shared file system), or pass :class:`~.bundle.Bundle` objects, which
travel by pickle. Workers that run ``js`` jobs need the script kit in their cache
(``tavernlab kit fetch``) when the runs used it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tavernlab.errors import TavernlabError
from tavernlab.replay._bundle import Bundle, read_bundle
from tavernlab.replay._play import replay_bundle
from tavernlab.replay._replaying import SkillSources
from tavernlab.replay._report import Divergence, ReplayReport

BundleSource = Bundle | str | Path


def replay_one(bundle: BundleSource, skills: SkillSources | None = None) -> ReplayReport:
    """Replay one bundle in its own temporary lab (replacing only the skills its run bound);
    a bundle that cannot be replayed at all gives a report with one ``setup`` divergence, so
    one bad bundle never stops a corpus: a refusal gives its code and message, any other
    failure its exception type and message."""
    try:
        loaded = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
        bound = {s.name for s in loaded.manifest.skills}
        relevant = {n: p for n, p in (skills or {}).items() if n in bound}
        return replay_bundle(loaded, None, relevant or None)
    except TavernlabError as exc:
        return failed_report(bundle, exc.code, exc.message)
    except Exception as exc:  # a bundle must not stop the corpus, whatever it holds
        return failed_report(bundle, type(exc).__name__, str(exc))


def failed_report(bundle: BundleSource, subject: str, message: str) -> ReplayReport:
    """The report of a bundle that could not be replayed: one ``setup`` divergence."""
    name = str(bundle.path) if isinstance(bundle, Bundle) else str(bundle)
    return ReplayReport(bundle=name, run_id="", actions=0, divergences=[
        Divergence(-1, "start of the run", "setup", subject, None, message)])


def _result(future: Future[ReplayReport], bundle: BundleSource) -> ReplayReport:
    """The report of one submitted replay; a worker that died or could not take the bundle
    (a lost process, a bundle that does not pickle) is that bundle's failed report."""
    try:
        return future.result()
    except Exception as exc:
        return failed_report(bundle, type(exc).__name__, str(exc) or type(exc).__name__)


@dataclass
class ReplaySummary:
    """The reports of :func:`replay_many`, in the order of the bundles, and their table."""

    reports: list[ReplayReport]

    @property
    def identical(self) -> int:
        """How many bundles replayed identically."""
        return sum(r.identical for r in self.reports)

    def rows(self) -> list[dict[str, object]]:
        """One row per bundle: bundle, run, actions, identical, divergences, first."""
        return [{"bundle": r.bundle, "run": r.run_id, "actions": r.actions,
                 "identical": r.identical, "divergences": len(r.divergences),
                 "first": r.first.summary() if r.first else ""} for r in self.reports]

    def table(self) -> str:
        """The summary as a plain-text table (one line per bundle, then the totals)."""
        lines = [f"{'bundle':<40} {'actions':>7} {'result':<9} first divergence"]
        for row in self.rows():
            result = "identical" if row["identical"] else f"{row['divergences']} diff"
            lines.append(f"{Path(str(row['bundle'])).name:<40} {row['actions']:>7} "
                         f"{result:<9} {row['first']}")
        lines.append(f"{self.identical} of {len(self.reports)} identical")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def replay_many(bundles: Iterable[BundleSource], skills: SkillSources | None = None,
                executor: Executor | None = None) -> ReplaySummary:
    """Replay every bundle (see :func:`tavernlab.replay.replay`), each in its own temporary
    lab, on ``executor`` (default: a process pool with one worker per CPU of the machine,
    shut down afterwards; a given executor is left running for its owner). A bundle that
    cannot be replayed, for whatever reason, is reported in its row of the table and the
    others go on."""
    corpus = list(bundles)
    own = executor is None
    pool = executor or ProcessPoolExecutor(max_workers=os.cpu_count() or 1,
                                           mp_context=multiprocessing.get_context("spawn"))
    try:
        sources: Mapping[str, str | Path] | None = (
            {name: str(Path(path).resolve()) for name, path in skills.items()} if skills
            else None)
        futures = [pool.submit(replay_one, bundle, sources) for bundle in corpus]
        return ReplaySummary([_result(future, bundle) for future, bundle in
                              zip(futures, corpus, strict=True)])
    finally:
        if own:
            pool.shutdown(wait=True)
