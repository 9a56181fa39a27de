"""A member's API reached through the cluster's API, as `vcluster connect` reaches a vCluster
that is not exposed (vCluster v0.35.3, pkg/cli/connect_helm.go), for whatever pod the stack's
`PortNeed.forward` names (providers.base.PodForward; vcluster-kai: its team's vCluster pod):

- the pod: the newest one carrying the forward's labels in its namespace and not being
  deleted (connect_helm.go:299-330 picks a vCluster's pod that way);
- its port: the forward's, from a local port (`--local-port`, else a random free one:
  :244-246) on localhost (pkg/util/portforward/portforward.go:176-178) through
  `pods/portforward` (:424-427, pkg/util/portforward/start.go:69-74);
- the kubeconfig: the member's saved one, its server's port swapped for the local one
  (:397-404).

A vCluster's serving certificate always holds `localhost` and `127.0.0.1`
(pkg/server/cert/cert.go:54-60, 70-73), so its CA verifies `https://127.0.0.1:PORT`.
Imports no stack.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError, HostError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.adapters.forward import LocalForwarder, Stream
    from gpulab.providers.base import ClusterNeeds, PodForward

__all__ = ["Forward", "ForwardingKube", "forward_pod", "forwarded_kubeconfig", "forwards_of",
           "open_forward"]

LOCAL_ADDRESS = "127.0.0.1"


def forward_pod(host: KubeGateway, forward: PodForward) -> str:
    """The pod to forward to: the newest live one carrying the forward's labels, as `vcluster
    connect` picks a vCluster's; HostError when there is none."""
    pods = host.list_objects("v1", "Pod", forward.namespace, label_selector=forward.selector)
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")
            and all(((p.get("metadata") or {}).get("labels") or {}).get(k) == v
                    for k, v in forward.labels)]
    if not live:
        raise HostError(f"no pod labelled {forward.selector} in namespace {forward.namespace}",
                        hint="gpulab status shows the lab; gpulab up repairs it")
    live.sort(key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), reverse=True)
    return str(live[0]["metadata"]["name"])


def forwards_of(needs: ClusterNeeds) -> dict[str, PodForward]:
    """The stack's port needs a port-forward reaches, by the file name of the member's saved
    kubeconfig (`<member>.kubeconfig`) that names them."""
    return {f"{p.member}.kubeconfig": p.forward for p in needs.ports
            if p.member and p.forward is not None}


def forwarded_kubeconfig(saved: str, port: int) -> bytes:
    """The saved kubeconfig (YAML text) with every cluster's server set to
    https://127.0.0.1:<port>; its CA and credentials unchanged."""
    import yaml

    config = yaml.safe_load(saved) or {}
    for cluster in config.get("clusters") or []:
        (cluster.setdefault("cluster", {}))["server"] = f"https://{LOCAL_ADDRESS}:{port}"
    return yaml.safe_dump(config, sort_keys=False).encode()


@dataclass
class Forward:
    """An open port-forward: the local listener, the kubeconfig written for it (0600, a
    temporary file that `close` removes) and what answered through it."""

    forwarder: LocalForwarder
    kubeconfig: Path
    namespace: str
    pod: str
    version: str
    host: Any = None  # the host cluster's client the streams are opened with (closed last)

    @property
    def server(self) -> str:
        return f"https://{LOCAL_ADDRESS}:{self.forwarder.port}"

    def close(self) -> None:
        self.forwarder.close()
        with contextlib.suppress(FileNotFoundError):
            self.kubeconfig.unlink()
        close = getattr(self.host, "close", None)
        if callable(close):
            close()


def open_forward(host: KubeGateway, forward: PodForward, saved: Path, *,
                 port: int, kube: Callable[[Path], KubeGateway], prefix: str,
                 dial: Callable[[str], Stream] | None = None,
                 on_error: Callable[[str], None] | None = None) -> Forward:
    """Forward 127.0.0.1:`port` (0: any free one) to `forward`'s pod and port, write a
    kubeconfig for it from `saved` (a temporary file named `prefix`…, mode 0600) and check the
    API answers `/version` through it; everything is undone when that fails.
    `dial(pod)` opens a stream to the pod's port (default: the host's `pods/portforward`).
    The Forward owns `host` from here on: its `close` closes it too."""
    import tempfile
    from pathlib import Path

    from gpulab.adapters.forward import LocalForwarder
    from gpulab.paths import write_secret

    try:
        if not saved.is_file():
            raise HostError(f"no kubeconfig saved for {saved.stem} ({saved})",
                            hint="gpulab up writes it")
        pod = forward_pod(host, forward)
        opener = dial or (lambda name: _pod_port(host, name, forward.namespace, forward.port))
        forwarder = LocalForwarder(lambda: opener(pod), address=LOCAL_ADDRESS, port=port,
                                   on_error=on_error).start()
    except BaseException as err:
        close = getattr(host, "close", None)
        if callable(close):
            close()
        if isinstance(err, GpulabError) and not isinstance(err, HostError):
            # a port taken, the pods unreadable: this host cannot reach the vCluster (exit 4)
            raise HostError(err.message, hint=err.hint) from None
        raise
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".kubeconfig")  # 0600 from the start
    os.close(fd)
    path = write_secret(Path(name), forwarded_kubeconfig(saved.read_text(encoding="utf-8"),
                                                         forwarder.port))
    opened = Forward(forwarder, path, forward.namespace, pod, "", host)
    try:
        client: Any = kube(path)
        try:
            opened.version = client.server_version()
        finally:
            close = getattr(client, "close", None)
            if callable(close):
                close()
    except GpulabError as err:
        opened.close()
        last = f" ({forwarder.errors[-1]})" if forwarder.errors else ""
        raise HostError(f"{saved.stem}'s API did not answer through the port-forward to pod "
                        f"{forward.namespace}/{pod}: {err.message}{last}",
                        hint="gpulab status shows its control plane") from None
    except BaseException:
        opened.close()
        raise
    return opened


def _pod_port(host: KubeGateway, pod: str, namespace: str, port: int) -> Stream:
    opener = getattr(host, "open_pod_port", None)
    if not callable(opener):  # pragma: no cover - every real gateway has it
        raise HostError("this client cannot open a port-forward")
    stream: Stream = opener(pod, namespace, port)
    return stream


class ForwardingKube:
    """A kube factory for a lab whose member APIs are reached by port-forward (`up`, `status`,
    `verify` on such a lab): a member's kubeconfig (its file name in `forwards`, mapped to the
    pod that serves it: forwards_of) gets a forward of its own on a free local port, opened on
    first use and kept for the factory's life, each connection dialled to the current pod; the
    client is made by `inner` from a copy of the kubeconfig (0600, in a private temporary
    folder) whose server is that port. Other paths go to `inner` as they
    are. `close` ends the forwards and removes the copies."""

    def __init__(self, inner: Callable[[Path], KubeGateway], host_kubeconfig: Path,
                 forwards: Mapping[str, PodForward]) -> None:
        import tempfile
        import threading
        from pathlib import Path

        self.inner, self.host_kubeconfig, self.forwards = inner, host_kubeconfig, dict(forwards)
        self._folder = Path(tempfile.mkdtemp(prefix="gpulab-forward-"))  # 0700
        self._forwards: dict[str, LocalForwarder] = {}
        self._host: Any = None
        self._lock = threading.Lock()

    def _forward(self, name: str) -> LocalForwarder:
        from gpulab.adapters.forward import LocalForwarder

        with self._lock:
            if name in self._forwards:
                return self._forwards[name]
            if self._host is None:
                self._host = self.inner(self.host_kubeconfig)
            host, forward = self._host, self.forwards[name]

            def dial() -> Stream:
                return _pod_port(host, forward_pod(host, forward), forward.namespace,
                                 forward.port)

            forwarder = LocalForwarder(dial, address=LOCAL_ADDRESS).start()
            self._forwards[name] = forwarder
            return forwarder

    def kubeconfig(self, path: Path) -> Path:
        """The copy of a member's kubeconfig that reaches its API through the forward (the
        path itself for any other kubeconfig)."""
        from gpulab.paths import write_secret

        if path.name not in self.forwards:
            return path
        forwarder = self._forward(path.name)
        return write_secret(self._folder / path.name, forwarded_kubeconfig(
            path.read_text(encoding="utf-8"), forwarder.port))

    def __call__(self, path: Path) -> KubeGateway:
        return self.inner(self.kubeconfig(path))

    def close(self) -> None:
        import shutil

        with self._lock:
            forwards, self._forwards = list(self._forwards.values()), {}
            host, self._host = self._host, None
        for forwarder in forwards:
            forwarder.close()
        close = getattr(host, "close", None)
        if callable(close):
            close()
        shutil.rmtree(self._folder, ignore_errors=True)
