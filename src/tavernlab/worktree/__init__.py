"""Git worktrees for agents: tavernlab's re-implementation of ``@agentproto/worktree``.

Seven tools provision, gate, clean up and serve worktrees; call them by upstream name with
:func:`call_tool` (``call_tool("worktree.provision", {"repoRoot": …, "slug": …})``) or
through the snake_case functions. Services sit behind a ``*.localhost`` proxy started with
:func:`start_proxy`; heavy provisioning phases share a fair process-wide queue. A
:class:`WorktreeRuntime` holds what the tools run against (scheduler, services, routes,
clock, ids); :func:`default_runtime` is the process-wide one.
"""

from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError
from tavernlab.worktree.context import (
    ProvisionContext,
    current_provision_context,
    run_with_provision_context,
)
from tavernlab.worktree.errors import (
    ConfigError,
    ForgeUnavailableError,
    GlobTraversalError,
    HookError,
    ProvisionCancelledError,
    WorktreeNotRemovableError,
)
from tavernlab.worktree.limits import ProvisionLimits, parse_provision_limits
from tavernlab.worktree.proxy import start_proxy
from tavernlab.worktree.proxy_table import ProxyTable, proxy_table
from tavernlab.worktree.runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree.scheduler import provision_scheduler
from tavernlab.worktree.services import ServiceRegistry
from tavernlab.worktree.tools import (
    call_tool,
    cleanup,
    invoke_tool,
    list_services,
    provision,
    run_gate,
    run_script,
    start_service,
    stop_service,
)

__all__ = [
    "CancelToken",
    "ConfigError",
    "ForgeUnavailableError",
    "GlobTraversalError",
    "HookError",
    "ProvisionCancelledError",
    "ProvisionContext",
    "ProvisionLimits",
    "ProxyTable",
    "ServiceRegistry",
    "ToolError",
    "WorktreeNotRemovableError",
    "WorktreeRuntime",
    "call_tool",
    "cleanup",
    "current_provision_context",
    "default_runtime",
    "invoke_tool",
    "list_services",
    "parse_provision_limits",
    "provision",
    "provision_scheduler",
    "proxy_table",
    "run_gate",
    "run_script",
    "run_with_provision_context",
    "start_proxy",
    "start_service",
    "stop_service",
]
