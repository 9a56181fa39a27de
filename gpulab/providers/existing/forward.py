"""A team's vCluster reached through the host cluster's API: what `vcluster connect` does when
its vCluster is not exposed (vCluster v0.35.3, pkg/cli/connect_helm.go):

- the pod: `app=vcluster,release=<name>` in the vCluster's namespace, the newest one not being
  deleted (connect_helm.go:299-330);
- its port: the one the exported kubeconfig's server names, 8443 by default (:378-405; the
  chart's Service sends 443 to targetPort 8443, chart/templates/service.yaml:25-29), forwarded
  from a local port (`--local-port`, else a random free one: :244-246) on localhost
  (pkg/util/portforward/portforward.go:176-178) through `pods/portforward` (:424-427,
  pkg/util/portforward/start.go:69-74);
- the kubeconfig: the vCluster's own, its server's port swapped for the local one (:397-404).

The vCluster's serving certificate always holds `localhost` and `127.0.0.1`
(pkg/server/cert/cert.go:54-60, 70-73), so the vCluster's CA verifies `https://127.0.0.1:PORT`.
Imports no stack.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError, HostError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.adapters.forward import LocalForwarder, Stream

__all__ = ["VCLUSTER_PORT", "Forward", "ForwardingKube", "forwarded_kubeconfig",
           "forwarded_teams", "open_forward", "vcluster_pod"]

VCLUSTER_PORT = 8443
LOCAL_ADDRESS = "127.0.0.1"


def vcluster_pod(host: KubeGateway, namespace: str, release: str) -> str:
    """The vCluster's pod to forward to, as `vcluster connect` picks it; HostError when there
    is none."""
    pods = host.list_objects("v1", "Pod", namespace,
                             label_selector=f"app=vcluster,release={release}")
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")
            and ((p.get("metadata") or {}).get("labels") or {}).get("release") == release]
    if not live:
        raise HostError(f"no vCluster pod of {release} in namespace {namespace} (label "
                        f"app=vcluster,release={release})",
                        hint="gpulab status shows the lab; gpulab up repairs it")
    live.sort(key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), reverse=True)
    return str(live[0]["metadata"]["name"])


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


def open_forward(host: KubeGateway, namespace: str, release: str, saved: Path, *,
                 port: int, kube: Callable[[Path], KubeGateway], prefix: str,
                 dial: Callable[[str], Stream] | None = None,
                 on_error: Callable[[str], None] | None = None) -> Forward:
    """Forward 127.0.0.1:`port` (0: any free one) to the vCluster `release` in `namespace`,
    write a kubeconfig for it from `saved` (a temporary file named `prefix`…, mode 0600) and
    check the vCluster answers `/version` through it; everything is undone when that fails.
    `dial(pod)` opens a stream to the pod's port (default: the host's `pods/portforward`).
    The Forward owns `host` from here on: its `close` closes it too."""
    import tempfile
    from pathlib import Path

    from gpulab.adapters.forward import LocalForwarder
    from gpulab.paths import write_secret

    try:
        if not saved.is_file():
            raise HostError(f"no kubeconfig saved for {release} ({saved})",
                            hint="gpulab up writes it")
        pod = vcluster_pod(host, namespace, release)
        opener = dial or (lambda name: _pod_port(host, name, namespace))
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
    forward = Forward(forwarder, path, namespace, pod, "", host)
    try:
        client: Any = kube(path)
        try:
            forward.version = client.server_version()
        finally:
            close = getattr(client, "close", None)
            if callable(close):
                close()
    except GpulabError as err:
        forward.close()
        last = f" ({forwarder.errors[-1]})" if forwarder.errors else ""
        raise HostError(f"the vCluster {release} did not answer through the port-forward to "
                        f"pod {namespace}/{pod}: {err.message}{last}",
                        hint="gpulab status shows its control plane") from None
    except BaseException:
        forward.close()
        raise
    return forward


def _pod_port(host: KubeGateway, pod: str, namespace: str) -> Stream:
    opener = getattr(host, "open_pod_port", None)
    if not callable(opener):  # pragma: no cover - every real gateway has it
        raise HostError("this client cannot open a port-forward")
    stream: Stream = opener(pod, namespace, VCLUSTER_PORT)
    return stream


class ForwardingKube:
    """A kube factory for a lab whose vClusters are reached by port-forward (`up`, `status`,
    `verify` on such a lab): a team's kubeconfig (its file name in `teams`, mapped to the
    vCluster's namespace and release) gets a forward of its own on a free local port, opened on
    first use and kept for the factory's life, each connection dialled to the vCluster's
    current pod; the client is made by `inner` from a copy of the kubeconfig (0600, in a
    private temporary folder) whose server is that port. Other paths go to `inner` as they
    are. `close` ends the forwards and removes the copies."""

    def __init__(self, inner: Callable[[Path], KubeGateway], host_kubeconfig: Path,
                 teams: dict[str, tuple[str, str]]) -> None:
        import tempfile
        import threading
        from pathlib import Path

        self.inner, self.host_kubeconfig, self.teams = inner, host_kubeconfig, teams
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
            host, (namespace, release) = self._host, self.teams[name]

            def dial() -> Stream:
                return _pod_port(host, vcluster_pod(host, namespace, release), namespace)

            forwarder = LocalForwarder(dial, address=LOCAL_ADDRESS).start()
            self._forwards[name] = forwarder
            return forwarder

    def kubeconfig(self, path: Path) -> Path:
        """The copy of a team's kubeconfig that reaches its vCluster through the forward (the
        path itself for any other kubeconfig)."""
        from gpulab.paths import write_secret

        if path.name not in self.teams:
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


def forwarded_teams(profile: Any) -> dict[str, tuple[str, str]]:
    """A vcluster-kai profile's teams as ForwardingKube wants them: kubeconfig file name →
    (namespace, release); {} for a profile without teams."""
    return {f"{t.name}.kubeconfig": (t.namespace, t.name) for t in getattr(profile, "teams", ())}
