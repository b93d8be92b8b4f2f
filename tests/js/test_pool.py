"""The worker pool as an object: ownership, closing, the shared process-wide default."""

from __future__ import annotations

import time

import pytest

from tavernlab.errors import SandboxError, TavernlabError
from tavernlab.js import errors as js_errors
from tavernlab.js.command import run_js_command
from tavernlab.js.errors import PoolClosedError
from tavernlab.js.pool import WorkerPool, default_pool
from tavernlab.workspace.scope import ScopedWorkspaceFs

from .conftest import frozen


def alive(pid: int) -> bool:
    """Whether a process with ``pid`` still exists (and is not a zombie of ours)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_pool_owns_its_workers_and_close_stops_them(scope: ScopedWorkspaceFs) -> None:
    with WorkerPool(2) as pool:
        pool.warm()
        pids = pool.worker_pids()
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        assert not set(pids) & set(default_pool().worker_pids())
        result = run_js_command(["-e", "console.log('own pool')"], scope=scope,
                                context=frozen(), pool=pool)
        assert result.stdout == "own pool\n"
    assert pool.closed and pool.worker_pids() == []
    assert not any(alive(pid) for pid in pids)
    with pytest.raises(PoolClosedError) as caught:
        run_js_command(["-e", "1"], scope=scope, context=frozen(), pool=pool,
                       deadline=time.monotonic() + 5)
    assert (caught.value.code, caught.value.message) == (
        "js.pool_closed", "The JavaScript worker pool is closed.")


def test_the_default_pool_is_shared_and_sized_by_the_process_wide_cap() -> None:
    assert default_pool() is default_pool()
    assert default_pool().size == 2


def test_a_closed_default_pool_is_replaced_on_next_use(scope: ScopedWorkspaceFs) -> None:
    first = default_pool()
    first.warm()
    first.close()
    second = default_pool()
    assert second is not first and not second.closed
    result = run_js_command(["-e", "console.log(2)"], scope=scope, context=frozen())
    assert result.stdout == "2\n"


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(0)


def test_every_sandbox_leaf_sits_below_sandbox_error_with_its_code() -> None:
    codes = {
        "WorkerStartError": "js.sandbox_failed",
        "PoolClosedError": "js.pool_closed",
        "CapabilityError": "js.capability_failed",
        "JsArgumentError": "js.invalid_arguments",
        "JsLoadError": "js.load_failed",
        "ModuleLoadError": "js.module_load_failed",
        "SkillScriptValidationError": "skill.run_script_invalid_request",
        "SkillScriptContextError": "agent.invalid_skill_script_context",
    }
    for name, code in codes.items():
        leaf = getattr(js_errors, name)
        assert issubclass(leaf, SandboxError) and issubclass(leaf, TavernlabError)
        assert leaf.code == code
    assert SandboxError.code == "js.error"
    assert js_errors.SkillScriptError("skill.run_script_not_found", "x").code == (
        "skill.run_script_not_found")
