"""A deadline for a kubeconfig's exec credential plugin.

The kubernetes client runs the plugin with `subprocess.Popen(...).communicate()` and no timeout
(kubernetes 37.0.2 config/exec_provider.py:91-101), at client construction
(config/kube_config.py:444): a plugin that never answers (a login prompt with no terminal, a
cloud CLI waiting on its network) would hang gpulab with no deadline. `bounded_exec_plugins`
swaps the `subprocess` that module uses for one whose Popen waits at most `EXEC_DEADLINE`
seconds, then kills the plugin and raises the client's own ConfigException. Nothing else of
the module changes.

The client does not stop on a plugin that failed (timed out, exited non-zero, printed no
ExecCredential): it logs the error and goes on with no credentials (`except Exception:
logging.error`, config/kube_config.py:473-474), so every request would go out unauthenticated.
`exec_failures` collects what it logs while a client is built, and KubeClient refuses the
kubeconfig in one line with it, sending nothing.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import types
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kubernetes.config import exec_provider
from kubernetes.config.config_exception import ConfigException

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["EXEC_DEADLINE", "bounded_exec_plugins", "exec_failures"]

EXEC_DEADLINE = 60.0  # seconds a credential plugin may take to print its ExecCredential


class _BoundedPopen(subprocess.Popen[Any]):
    """Popen whose `communicate()` without a timeout waits EXEC_DEADLINE at most."""

    def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
        limit = EXEC_DEADLINE if timeout is None else timeout
        try:
            return super().communicate(input, limit)
        except subprocess.TimeoutExpired:
            self.kill()
            super().communicate()
            command = str(self.args[0] if isinstance(self.args, list | tuple) else self.args)
            raise ConfigException(
                f"exec: credential plugin {command} did not answer within {limit:g}s "
                "(killed); run it by hand to see what it waits for") from None


_SUBPROCESS = types.SimpleNamespace(Popen=_BoundedPopen, PIPE=subprocess.PIPE)


def bounded_exec_plugins() -> None:
    """Make every exec credential plugin the kubernetes client runs wait EXEC_DEADLINE at most
    (idempotent)."""
    exec_provider.subprocess = _SUBPROCESS  # type: ignore[attr-defined,assignment]


@contextmanager
def exec_failures() -> Iterator[list[str]]:
    """The exec plugin failures the kubernetes client logs (messages starting `exec:`,
    exec_provider.py and kube_config.py:473-474) in this thread while inside."""
    said: list[str] = []
    thread = threading.get_ident()

    class _Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if record.thread == thread and text.startswith("exec:"):
                said.append(text)

    handler = _Catch(logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield said
    finally:
        root.removeHandler(handler)
