"""Git worktrees for agents: tavernlab's re-implementation of ``@agentproto/worktree``.

Seven tools provision, gate, clean up and serve worktrees; call them by upstream name with
:func:`call_tool` (``call_tool("worktree.provision", {"repoRoot": …, "slug": …})``) or
through the snake_case functions. Services sit behind a ``*.localhost`` proxy started with
:func:`start_proxy`; heavy provisioning phases share a fair process-wide queue.
"""

from tavernlab.cancel import CancelToken
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
    ToolError,
    WorktreeNotRemovableError,
)
from tavernlab.worktree.proxy import ProxyTable, proxy_table, start_proxy
from tavernlab.worktree.scheduler import (
    ProvisionLimits,
    parse_provision_limits,
    provision_scheduler,
)
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
    "ToolError",
    "WorktreeNotRemovableError",
    "call_tool",
    "cleanup",
    "current_provision_context",
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
