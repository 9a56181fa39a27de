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
    from collections.abc import Callable
    from pathlib import Path

    from gpulab.adapters.base import ContainerRuntime, HelmGateway, KubeGateway

__all__ = ["NODE_COMMANDS", "Bundle", "collect"]

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


def tarball(folder: Path) -> Path:
    """`folder.tar.gz` next to the folder."""
    target = folder.with_name(folder.name + ".tar.gz")
    with tarfile.open(target, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return target
