"""KAI Scheduler's readiness, the reservation RBAC fake GPUs need, and the queue tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import crd_established, deployment_available, management_kube
from gpulab.stacks.vcluster_kai import render as kr

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile


KAI_CRDS = ("queues.scheduling.run.ai", "podgroups.scheduling.run.ai")


def _kai_ready(kube: KubeGateway, *, namespace: str) -> tuple[bool, str]:
    """KAI's CRDs served and the operator plus every deployment it creates available: the chart
    only ships the operator, so helm's wait is over before the scheduler exists."""
    for crd in KAI_CRDS:
        ok, seen = crd_established(kube, crd)
        if not ok:
            return ok, seen
    for name in kr.KAI_DEPLOYMENTS:
        ok, seen = deployment_available(kube, name, namespace)
        if not ok:
            return ok, seen
    return True, f"{len(kr.KAI_DEPLOYMENTS)} KAI deployments available"


def _same(want: Any, live: Any) -> bool:
    """`want` is contained in `live` (numbers compared by value: 1 == 1.0)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(_same(v, live.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(live, list) and len(want) == len(live) and all(
            _same(w, v) for w, v in zip(want, live, strict=True))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return isinstance(live, (int, float)) and not isinstance(live, bool) and float(
            want) == float(live)
    return bool(want == live)


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}


def _get(kube: KubeGateway, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


@dataclass
class ReservationRbac:
    """The ClusterRole and RoleBinding that let fake GPUs annotate KAI's reservation pods."""

    profile: VclusterKaiProfile
    name: str = "management/reservation-rbac"
    title: str = "Letting fake-gpu-operator annotate KAI's GPU reservation pods"
    requires: tuple[str, ...] = ("management/kai-scheduler",)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o)
                for o in kr.reservation_rbac(self.profile)]

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        try:
            return all(_same(_body(o), _body(_get(kube, o) or {}))
                       for o in kr.reservation_rbac(self.profile))
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        for obj in kr.reservation_rbac(self.profile):
            kube.apply(obj)


@dataclass
class Queues:
    """The queue tree; applied in a bounded retry while KAI's queue webhook warms up. On an
    existing cluster (`lab` given) each queue also carries the lab's label."""

    profile: VclusterKaiProfile
    lab: str | None = None
    name: str = "management/queues"
    title: str = "Creating the KAI queue tree"
    requires: tuple[str, ...] = ("management/kai-scheduler",)
    timeout: float = 180

    def _objects(self) -> list[dict[str, Any]]:
        return kr.queue_objects(self.profile, self.lab)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"Queue/{o['metadata']['name']}", o) for o in self._objects()]

    def _matching(self, kube: KubeGateway) -> tuple[bool, str]:
        for obj in self._objects():
            live = _get(kube, obj)
            if live is None:
                return False, f"Queue {obj['metadata']['name']} not found"
            if not _same(obj["spec"], live.get("spec") or {}):
                return False, f"Queue {obj['metadata']['name']} differs from the profile"
        return True, "every queue as in the profile"

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, seen = self._matching(management_kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, seen)
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        objects = self._objects()

        def apply_all() -> tuple[bool, str]:
            for obj in objects:
                kube.apply(obj)
            return True, f"{len(objects)} queues accepted"

        wait_until(ctx, self.name, "KAI to accept the queues", apply_all,
                   timeout=self.timeout, interval=3)
