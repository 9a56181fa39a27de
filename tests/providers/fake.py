"""A provider that gpulab/ does not know, registered from the tests only: it proves the seam.

Provider `fake` takes a cluster the profile names (`cluster: {provider: fake, kubeconfig:
FILE}`; the tests serve one with kmock) and answers the facts every stack plans from
(providers.base.ClusterFacts): shared with others, the GPUs its nodes advertise, each API the
stack publishes reached by NodePort on the first node's address, workers that join. It keeps
what the lab creates in lab.json as a cluster you bring must (Owning) and removes exactly that.
It asks no access review and refuses nothing: it is a fake. `register()` adds it;
`unregister()` takes it away again.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab import lab_record
from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.engine.step import Artifact
from gpulab.errors import UsageError
from gpulab.paths import lab_dir, write_secret
from gpulab.providers import registry
from gpulab.providers.base import (
    ClusterChoice,
    ClusterFacts,
    GpuNode,
    Ground,
    LabCluster,
    ManagementRow,
    Session,
)
from gpulab.providers.existing.ledger import Owning
from gpulab.providers.existing.teardown import remove_owned

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from gpulab.providers.base import HostTools, Teardown

NAME = "fake"


def register() -> None:
    registry.register(NAME, __name__)


def unregister() -> None:
    registry.unregister(NAME)


def claims(profile: Any, kubeconfig: Path | None, context: str | None) -> ClusterChoice | None:
    spec = profile.cluster
    if spec is None or spec.provider != NAME:
        return None
    return ClusterChoice(NAME, kubeconfig=Path(spec.kubeconfig or "missing"))


def restore(record: Any, kubeconfig: Path | None = None, context: str | None = None,
            profile: Any = None) -> ClusterChoice:
    return ClusterChoice(NAME, kubeconfig=Path(record.cluster["kubeconfig"]))


def make(choice: ClusterChoice, host: HostTools | None = None, *, helm: Any = None,
         **_given: Any) -> FakeProvider:
    return FakeProvider(choice, helm)


def container_lab(labels: Mapping[str, str]) -> str:
    return ""


def cluster_text(where: Mapping[str, str]) -> str:
    return f"fake {where['kubeconfig']}"


class UseCluster:
    """management/cluster: the cluster's kubeconfig saved in the lab folder, and lab.json's
    record of the provider."""

    name, title, requires = "management/cluster", "Using the fake cluster", ()

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    def describe(self) -> list[Artifact]:
        return [Artifact("file", "management.kubeconfig", {"from": str(self.kubeconfig)})]

    def satisfied(self, ctx: Any) -> bool:
        return bool(ctx.adapters.management_kubeconfig().is_file())

    def apply(self, ctx: Any) -> None:
        lab_record.record_cluster(ctx.lab, {"provider": NAME, "kubeconfig": str(self.kubeconfig)})
        write_secret(ctx.adapters.management_kubeconfig(), self.kubeconfig.read_bytes())


def _client(path: Path) -> KubeClient:
    return KubeClient(path, request_timeout=5, retry=RetryPolicy.disabled())


class FakeProvider:
    name, tools = NAME, ("helm",)

    def __init__(self, choice: ClusterChoice, helm: Callable[[Path], Any] | None) -> None:
        self.kubeconfig, self.helm = Path(choice.kubeconfig or "missing"), helm

    def ground(self, profile: Any, lab: str, stack: Any, *, probe: bool = True) -> Ground:
        record = lab_record.read(lab)
        needs = stack.existing_needs(profile, lab, record.owned if record else ())
        kube = _client(self.kubeconfig)
        try:
            nodes = kube.list_objects("v1", "Node")
            found = needs.read(kube) if needs.read is not None else None
        finally:
            kube.close()
        gpus = tuple(GpuNode(n["metadata"]["name"], int(g), "", "a device plugin")
                     for n in nodes if int(g := ((n.get("status") or {}).get(
                         "allocatable") or {}).get("nvidia.com/gpu", 0)) > 0)
        address = next((a["address"] for n in nodes for a in n["status"].get("addresses", [])
                        if a.get("type") == "InternalIP"), None)
        cluster = stack.cluster_needs(profile)
        facts = ClusterFacts(
            pool_nodes={p.name: tuple(g.name for g in gpus) for p in cluster.pools},
            urls={p.name: f"https://{address}:{p.node_port}" for p in cluster.ports},
            shared=True, gpus="found", gpu_nodes=gpus, expose="NodePort", node_address=address,
            workers="join", found=found)
        return Ground(facts, [UseCluster(self.kubeconfig)])

    def open(self, profile: Any, lab: str, stack: Any, report: Any, *, adapters: Any,
             preflight: bool) -> Session:
        ground = self.ground(profile, lab, stack)
        steps = [*ground.steps, *(Owning(s) for s in stack.build_steps(profile, lab,
                                                                         ground.facts))]
        return Session(steps, adapters)

    def built(self, lab: str, adapters: Any) -> None:
        """Each step recorded what it made before it acted."""

    def doctor(self, profile: Any, lab: str, stack: Any, report: Any, *, pull: bool) -> list[Any]:
        return []

    def connect(self) -> None:
        """Nothing on this host."""

    def exists(self, lab: str) -> bool:
        return lab_dir(lab).is_dir()

    def management(self, lab: str) -> ManagementRow:
        present = (lab_dir(lab) / "management.kubeconfig").is_file()
        return ManagementRow(f"fake {self.kubeconfig}", "in use" if present else "missing",
                             present)

    def machines(self) -> None:
        return None

    def logs(self, lab: str, folder: Path, profile: Any, *, kube: Any = None,
             needs: Any = None) -> None:
        folder.mkdir(parents=True)

    @contextmanager
    def reach(self, lab: str, profile: Any, needs: Any = None) -> Iterator[None]:
        yield None

    def same_cluster(self, lab: str, kube: Any = None) -> None:
        """One cluster, always the same: nothing to tell apart."""

    def where(self, lab: str) -> dict[str, str]:
        return {"provider": NAME, "kubeconfig": str(self.kubeconfig)}

    def lab_state(self, lab: str, containers: Sequence[Any], kubeconfigs: Sequence[str],
                  members: Sequence[str], *, observed: bool) -> str:
        return "ready" if {"management", *members} <= set(kubeconfigs) else "partial"

    def lab_cluster(self, lab: str, profile: Any) -> LabCluster:
        return LabCluster(gpus="found", workers="join")

    def forwarded(self, lab: str) -> bool:
        return False

    def refuse_join(self, lab: str) -> None:
        """Machines may join."""

    def refuse_forward(self, lab: str, member: str) -> None:
        raise UsageError(f"lab '{lab}' is on the fake provider, which forwards nothing")

    def open_forward(self, host: Any, forward: Any, saved: Path, **options: Any) -> Any:
        self.refuse_forward(saved.parent.name, saved.stem)

    def teardown(self, lab: str, record: Any, forget: Callable[[], list[str]]) -> Teardown:
        kube = _client(self.kubeconfig)
        try:
            result = remove_owned(record.owned if record else (), kube,
                                  (self.helm or (lambda _p: None))(self.kubeconfig))
        finally:
            kube.close()
        result.removed += forget()
        return result
