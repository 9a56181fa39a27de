"""`gpulab logs`: a diagnostics bundle for a lab, as kind's `export logs` does for a cluster.

Every collector is independent: one that fails (a cluster not reachable, a node gone) is noted in
`errors.txt` and the others still run. Kubeconfig contents are never copied into the bundle.
"""

from __future__ import annotations

import json
import tarfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_LAB, kind_cluster_name

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime, HelmGateway, KubeGateway

__all__ = ["EXISTING_DEADLINE", "NODE_COMMANDS", "Bundle", "collect", "collect_existing"]

NODE_COMMANDS: dict[str, list[str]] = {
    "kubelet.log": ["journalctl", "--no-pager", "-u", "kubelet", "-n", "5000"],
    "containerd.log": ["journalctl", "--no-pager", "-u", "containerd", "-n", "2000"],
    "crictl-ps.txt": ["crictl", "ps", "-a"],
    "crictl-images.txt": ["crictl", "images"],
}
# HAMi's scheduler pod serves the admission webhook too (vgpu-scheduler-extender container).
HAMI_PODS = ("hami-scheduler", "hami-mock-device-plugin", "hami-device-plugin")
# Every pod of KAI Scheduler and fake-gpu-operator (vcluster-kai) is worth its logs.
LOGGED_NAMESPACES = ("kai-scheduler", "gpu-operator", "kai-resource-reservation")


def _wants_logs(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return (str(meta.get("name", "")).startswith(HAMI_PODS)
            or meta.get("namespace") in LOGGED_NAMESPACES)


@dataclass
class Bundle:
    folder: Path
    files: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def write(self, relative: str, content: str | dict[str, Any] | list[Any]) -> None:
        path = self.folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, indent=2, default=str), encoding="utf-8")
        self.files.append(relative)

    def attempt(self, what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except GpulabError as err:
            self.errors.append(f"{what}: {err}")


def _pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    status = pod.get("status") or {}
    return {
        "namespace": pod["metadata"].get("namespace"),
        "name": pod["metadata"]["name"],
        "phase": status.get("phase"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "schedulerName": (pod.get("spec") or {}).get("schedulerName"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in status.get("conditions") or []
        ],
        "containers": [
            {"name": c.get("name"), "ready": c.get("ready"), "restarts": c.get("restartCount"),
             "state": c.get("state")}
            for c in status.get("containerStatuses") or []
        ],
        "annotations": {k: v for k, v in ((pod.get("metadata") or {}).get("annotations") or {})
                        .items() if k.startswith(("hami.io/", "nvidia.com/"))},
    }


def _cluster(bundle: Bundle, prefix: str, kube: KubeGateway, helm: HelmGateway | None) -> None:
    def pods() -> None:
        items = kube.list_objects("v1", "Pod")
        bundle.write(f"{prefix}/pods.json", [_pod_status(p) for p in items])
        for pod in items:
            name = pod["metadata"]["name"]
            if not _wants_logs(pod):
                continue
            namespace = pod["metadata"].get("namespace", "kube-system")
            for container in (pod.get("spec") or {}).get("containers") or []:
                cname = str(container.get("name"))

                def logs(n: str = name, ns: str = namespace, c: str = cname) -> None:
                    text = kube.pod_logs(n, ns, tail_lines=2000, container=c)
                    bundle.write(f"{prefix}/logs/{ns}_{n}_{c}.log", text)

                bundle.attempt(f"{prefix} logs {namespace}/{name}/{cname}", logs)

    def events() -> None:
        items = kube.list_objects("v1", "Event")
        items.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        bundle.write(f"{prefix}/events.json", [
            {k: e.get(k) for k in ("type", "reason", "message", "count", "lastTimestamp")}
            | {"object": f"{(e.get('involvedObject') or {}).get('kind')}/"
                         f"{(e.get('involvedObject') or {}).get('name')}",
               "namespace": (e.get("metadata") or {}).get("namespace")}
            for e in items
        ])

    def nodes() -> None:
        items = kube.list_objects("v1", "Node")
        bundle.write(f"{prefix}/nodes.yaml", yaml.safe_dump(
            [{"name": n["metadata"]["name"],
              "annotations": (n["metadata"].get("annotations") or {}),
              "labels": (n["metadata"].get("labels") or {}),
              "status": {k: (n.get("status") or {}).get(k)
                         for k in ("capacity", "allocatable", "conditions", "nodeInfo")}}
             for n in items], sort_keys=False))

    bundle.attempt(f"{prefix} pods", pods)
    bundle.attempt(f"{prefix} events", events)
    bundle.attempt(f"{prefix} nodes", nodes)
    if helm is not None:
        bundle.attempt(f"{prefix} helm releases",
                       lambda: bundle.write(f"{prefix}/helm-releases.json", helm.releases()))


def collect(
    lab: str,
    folder: Path,
    *,
    runtime: ContainerRuntime,
    kube: Callable[[Path], KubeGateway],
    helm: Callable[[Path], HelmGateway] | None,
    lab_files: Path,
) -> Bundle:
    """Write the bundle into `folder` (created); returns what was written and what failed."""
    bundle = Bundle(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cluster = kind_cluster_name(lab)
    containers = {c.name: c for labels in ({LABEL_LAB: lab}, {"io.x-k8s.kind.cluster": cluster})
                  for c in runtime.containers(labels)}
    bundle.write("docker/containers.json", [
        {"name": c.name, "image": c.image, "status": c.status, "labels": dict(c.labels),
         "networks": dict(c.networks)} for c in containers.values()
    ])
    for name, container in sorted(containers.items()):
        if not container.running:
            continue
        for filename, argv in NODE_COMMANDS.items():
            def run(n: str = name, f: str = filename, a: list[str] = argv) -> None:
                result = runtime.exec(n, a, timeout=120)
                bundle.write(f"nodes/{n}/{f}", result.stdout + result.stderr)
            bundle.attempt(f"node {name} {filename}", run)
    for kubeconfig in sorted(lab_files.glob("*.kubeconfig")):
        prefix = f"clusters/{kubeconfig.stem}"

        def gather(p: str = prefix, k: Path = kubeconfig) -> None:
            _cluster(bundle, p, kube(k), helm(k) if helm else None)

        bundle.attempt(prefix, gather)
    if bundle.errors:
        bundle.write("errors.txt", "\n".join(bundle.errors) + "\n")
    bundle.write("README.txt", (
        f"gpulab diagnostics for lab '{lab}', collected {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        "docker/ container states; nodes/<container>/ kubelet and containerd journals, crictl;\n"
        "clusters/<management|member>/ pod statuses, events, nodes, helm releases, and logs of\n"
        "HAMi, KAI Scheduler and fake-gpu-operator pods.\n"
        "Kubeconfigs are not included.\n"))
    return bundle


EXISTING_DEADLINE = 120.0  # seconds all of an existing-cluster lab's reads may take together


def collect_existing(
    lab: str,
    folder: Path,
    *,
    owned: Sequence[Mapping[str, Any]],
    members: Sequence[str],
    kube: Callable[[Path], KubeGateway],
    lab_files: Path,
    deadline: float = EXISTING_DEADLINE,
) -> Bundle:
    """The bundle of a lab in a cluster gpulab did not make: only what gpulab created there (the
    namespaces, queues and Helm releases lab.json records): the pods of its namespaces with
    their logs, their events and Services, its queues as they are now; then each team's vCluster
    (made by gpulab) as on kind. No node journals, no Docker, nothing of the rest of the cluster
    (no helm list: it would read every release of the cluster). Every read ends by `deadline`
    seconds from now, all together; what is cut off is in errors.txt."""
    started = time.monotonic()
    bundle = Bundle(folder)
    folder.mkdir(parents=True, exist_ok=True)
    namespaces = [str(o["name"]) for o in owned if o.get("kind") == "Namespace"]
    bundle.write("management/owned.json", [dict(o) for o in owned])

    def left() -> float:
        return max(0.0, deadline - (time.monotonic() - started))

    def host(client: KubeGateway) -> None:
        for namespace in namespaces:
            prefix = f"management/namespaces/{namespace}"

            def pods(ns: str = namespace, p: str = prefix) -> None:
                items = client.list_objects("v1", "Pod", ns)
                bundle.write(f"{p}/pods.json", [_pod_status(i) for i in items])
                for pod in items:
                    name = pod["metadata"]["name"]
                    for container in (pod.get("spec") or {}).get("containers") or []:
                        cname = str(container.get("name"))

                        def logs(n: str = name, c: str = cname) -> None:
                            text = client.pod_logs(n, ns, tail_lines=2000, container=c)
                            bundle.write(f"{p}/logs/{n}_{c}.log", text)

                        bundle.attempt(f"management logs {ns}/{name}/{cname}", logs)

            def events(ns: str = namespace, p: str = prefix) -> None:
                bundle.write(f"{p}/events.json", [
                    {k: e.get(k) for k in ("type", "reason", "message", "count",
                                           "lastTimestamp")}
                    | {"object": f"{(e.get('involvedObject') or {}).get('kind')}/"
                                 f"{(e.get('involvedObject') or {}).get('name')}"}
                    for e in client.events(ns)])

            def services(ns: str = namespace, p: str = prefix) -> None:
                bundle.write(f"{p}/services.json", [
                    {"name": s["metadata"]["name"], "type": (s.get("spec") or {}).get("type"),
                     "ports": (s.get("spec") or {}).get("ports"),
                     "loadBalancer": (s.get("status") or {}).get("loadBalancer")}
                    for s in client.list_objects("v1", "Service", ns)])

            bundle.attempt(f"management pods in {namespace}", pods)
            bundle.attempt(f"management events in {namespace}", events)
            bundle.attempt(f"management services in {namespace}", services)

        def queues() -> None:
            bundle.write("management/queues.json", [
                client.get(str(o["apiVersion"]), "Queue", str(o["name"])) for o in owned
                if o.get("kind") == "Queue"])

        bundle.attempt("management queues", queues)

    _bounded(bundle, "management", kube, lab_files / "management.kubeconfig", left, host)
    for member in members:
        path = lab_files / f"{member}.kubeconfig"
        if path.is_file():
            def vcluster(client: KubeGateway, prefix: str = f"clusters/{member}") -> None:
                _cluster(bundle, prefix, client, None)

            _bounded(bundle, f"clusters/{member}", kube, path, left, vcluster)
    if bundle.errors:
        bundle.write("errors.txt", "\n".join(bundle.errors) + "\n")
    bundle.write("README.txt", (
        f"gpulab diagnostics for lab '{lab}' in a cluster gpulab did not make, collected "
        f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        "management/owned.json what lab.json says gpulab created; management/namespaces/<ns>/ "
        "pod statuses,\nlogs, events and Services of each namespace gpulab created; "
        "management/queues.json its queues;\nclusters/<team>/ each vCluster's pods, events and "
        "nodes. Nothing else of the cluster is read.\nKubeconfigs are not included.\n"))
    return bundle


def _bounded(bundle: Bundle, what: str, kube: Callable[[Path], KubeGateway], path: Path,
             left: Callable[[], float], body: Callable[[KubeGateway], None]) -> None:
    """`body(client)` with every request of the client ending within `left()` seconds."""
    from contextlib import nullcontext

    def run() -> None:
        client = kube(path)
        try:
            bounded = getattr(client, "bounded", None)
            with bounded(left()) if callable(bounded) else nullcontext():
                body(client)
        finally:
            close = getattr(client, "close", None)
            if callable(close):
                close()

    bundle.attempt(what, run)


def tarball(folder: Path) -> Path:
    """`folder.tar.gz` next to the folder."""
    target = folder.with_name(folder.name + ".tar.gz")
    with tarfile.open(target, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return target
