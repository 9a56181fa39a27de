"""The ownership ledger on an existing cluster: `management/cluster` copies the kubeconfig at its
context into the lab folder (0600), and every step that creates something records it in
`lab.json` before it acts (`Owning`), so `down` removes exactly that (providers.existing.
teardown), in reverse order, and never what was there before. Helm installs are bounded
(`BoundedHelm`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import Step, StepContext
    from gpulab.providers.base import (
        ClusterIdentity,
    )


from gpulab.providers.existing.facts import CRD_API, HELM_PARALLEL


class BoundedHelm:
    """Helm gateways whose installs and uninstalls share one bound: at most `limit` Helm calls
    that change the cluster run at once, whichever step (team) makes them. The engine runs the
    teams' steps concurrently (gpulab.engine.runner); this keeps 20 teams from starting 8 Helm
    installs (each a chart download, a render and a --wait) against one API server at once."""

    def __init__(self, factory: Any, limit: int = HELM_PARALLEL) -> None:
        import threading

        if limit < 1:
            raise UsageError(f"helm_parallel must be at least 1 (got {limit})")
        self.factory = factory
        self.limit = limit
        self.slots = threading.BoundedSemaphore(limit)

    def __call__(self, kubeconfig: Path) -> _BoundedGateway:
        return _BoundedGateway(self.factory(kubeconfig), self.slots)


class _BoundedGateway:
    def __init__(self, inner: Any, slots: Any) -> None:
        self.inner, self.slots = inner, slots

    def installed(self, release: Any) -> bool:
        return bool(self.inner.installed(release))

    def install(self, release: Any, *, timeout_seconds: int = 600) -> None:
        with self.slots:
            self.inner.install(release, timeout_seconds=timeout_seconds)

    def uninstall(self, name: str, namespace: str) -> None:
        with self.slots:
            self.inner.uninstall(name, namespace)

    def releases(self) -> list[dict[str, Any]]:
        return list(self.inner.releases())

    def template(self, release: Any, *, kube_version: str | None = None,
                 include_crds: bool = False) -> list[dict[str, Any]]:
        return list(self.inner.template(release, kube_version=kube_version,
                                        include_crds=include_crds))


@dataclass
class ExistingCluster:
    """`management/cluster` on a cluster gpulab did not make: the kubeconfig at its context
    saved to the lab folder (0600); never creates anything in the cluster."""

    identity: ClusterIdentity
    kubeconfig_text: str
    version: str = ""
    expose: str = ""  # how the stack's APIs are reached (vcluster-kai: port-forward or not)
    name: str = "management/cluster"
    title: str = "Using the existing cluster"
    requires: tuple[str, ...] = ()

    def describe(self) -> list[Artifact]:
        return [Artifact("existing-cluster", self.identity.server, {
            "context": self.identity.context, "kubeconfig": self.identity.kubeconfig,
            "kubernetes": self.version, "kube-system uid": self.identity.kube_system_uid}),
            Artifact("file", "management.kubeconfig", {"mode": "0600",
                                                       "from": self.identity.kubeconfig})]

    def satisfied(self, ctx: StepContext) -> bool:
        path: Path = ctx.adapters.management_kubeconfig()
        return path.is_file() and path.read_text(encoding="utf-8") == self.kubeconfig_text

    def apply(self, ctx: StepContext) -> None:
        from gpulab import lab_record
        from gpulab.paths import write_secret

        record = self.identity.to_record()
        if self.expose:  # how the vClusters are reached (status, verify: port-forward)
            record["expose"] = self.expose
        lab_record.record_cluster(ctx.lab, record)
        write_secret(ctx.adapters.management_kubeconfig(), self.kubeconfig_text.encode())


def owned_entries(step: Step) -> list[dict[str, Any]]:
    """What `step` creates in the cluster, as lab.json's `owned` entries; a step's
    `removal_wait` (seconds) makes `down` wait for each of its objects to be gone. A
    `chart-object` (an object of a Helm release, described after it) is recorded after the
    release, so `down` deletes it, and waits while its `wait` says, before `helm uninstall`."""
    out: list[dict[str, Any]] = []
    wait = getattr(step, "removal_wait", None)
    for artifact in step.describe():
        if artifact.cluster != "management":
            continue
        body = artifact.body if isinstance(artifact.body, dict) else {}
        if artifact.kind == "helm-release":
            out.append({"type": "helm-release", "name": body.get("name", artifact.name),
                        "namespace": body.get("namespace", "")})
        elif artifact.kind == "object" and body.get("kind"):
            meta = body.get("metadata") or {}
            out.append({"type": "object", "apiVersion": body["apiVersion"],
                        "kind": body["kind"], "name": meta["name"],
                        "namespace": meta.get("namespace"), **({"wait": wait} if wait else {})})
        elif artifact.kind == "node-label":
            out.append({"type": "node-label", "node": body["node"], "key": body["key"],
                        "value": body["value"]})
        elif artifact.kind == "container":  # a worker container on this Docker host
            out.append({"type": "container", "name": artifact.name})
        elif artifact.kind == "chart-object":  # a release's object `down` removes before it
            out.append({"type": "object", "apiVersion": body["apiVersion"],
                        "kind": body["kind"], "name": body["name"],
                        "namespace": body.get("namespace"),
                        **({"wait": body["wait"]} if body.get("wait") else {})})
    return out


def _crds(kube: KubeGateway) -> set[str]:
    return {c["metadata"]["name"] for c in kube.list_objects(CRD_API, "CustomResourceDefinition")}


@dataclass
class Owning:
    """A stack's step on an existing cluster: what it will create is written to lab.json
    before it acts (so a crash leaves nothing unrecorded), and CustomResourceDefinitions a Helm
    chart brought (which `helm uninstall` keeps) are recorded after, ahead of the release so
    they go after it. A step satisfied by what exists never acts, so is never recorded."""

    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def title(self) -> str:
        return str(self.inner.title)

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(self.inner.requires)

    def describe(self) -> list[Artifact]:
        return list(self.inner.describe())

    def satisfied(self, ctx: StepContext) -> bool:
        return bool(self.inner.satisfied(ctx))

    def apply(self, ctx: StepContext) -> None:
        from gpulab import lab_record

        entries = owned_entries(self.inner)
        helm = any(e["type"] == "helm-release" for e in entries)
        kube = ctx.adapters.kube(ctx.adapters.management_kubeconfig()) if helm else None
        before = _crds(kube) if kube is not None else set()
        lab_record.record_owned(ctx.lab, entries)
        try:
            self.inner.apply(ctx)
        finally:
            if kube is not None:
                added = sorted(_crds(kube) - before)
                if added:  # read and written under lab_record's lock: teams record at once
                    lab_record.insert_owned(ctx.lab, [
                        {"type": "object", "apiVersion": CRD_API,
                         "kind": "CustomResourceDefinition", "name": n, "namespace": None}
                        for n in added], entries)


