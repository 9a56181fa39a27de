"""The fake helm of the existing-cluster tests (kmock_cluster.FakeHelm) uninstalls only what its
release made, as helm does: an object someone else (or gpulab itself) left in the release's
namespace stays, so `down` cannot have it removed by the uninstall and go unnoticed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.adapters.base import HelmRelease
from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from tests.existing.kmock_cluster import (
    CRDS,
    DEPLOYMENTS,
    SECRETS,
    SERVICES,
    ExistingCluster,
    FakeHelm,
)

if TYPE_CHECKING:
    from pathlib import Path


def _other(kind: str, name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1" if kind == "Deployment" else "v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace}}


def _names(cluster: ExistingCluster, resource: Any, namespace: str | None) -> list[str]:
    return sorted(cluster.host.names(resource, namespace))


def test_uninstall_leaves_what_the_release_did_not_make(tmp_path: Path) -> None:
    namespace = "vcluster-team-nlp"
    release = HelmRelease(name="team-nlp", namespace=namespace, chart="vcluster", repo=None,
                          version="0.35.3", values={"controlPlane": {"service": {
                              "spec": {"type": "NodePort"}}}})
    with ExistingCluster(tmp_path).running(["team-nlp"]) as cluster:
        helm = FakeHelm(cluster)
        helm.install(release)
        # a leftover of someone else's in the release's namespace, after the install
        cluster.host.call(lambda: [cluster.host.put(r, _other(k, "left-over", namespace))
                                   for r, k in ((DEPLOYMENTS, "Deployment"),
                                                (SECRETS, "Secret"), (SERVICES, "Service"))])
        assert _names(cluster, SERVICES, namespace) == ["left-over", "team-nlp"]
        helm.uninstall("team-nlp", namespace)
        assert _names(cluster, SERVICES, namespace) == ["left-over"]  # the chart's Service went
        assert _names(cluster, DEPLOYMENTS, namespace) == ["left-over"]
        # vc-team-nlp is the syncer's, without an owner (setOwner: false): it stays for the
        # namespace's deletion
        assert _names(cluster, SECRETS, namespace) == ["left-over", "vc-team-nlp"]
        assert not helm.installed(release) and cluster.host.call(lambda: cluster.host.made) == {}


def test_uninstall_of_kai_keeps_its_crds_and_what_was_there(tmp_path: Path) -> None:
    chart: Any = load_profile("vcluster-kai").profile.components.kai_scheduler.chart
    release = HelmRelease(name="kai-scheduler", namespace="kai-scheduler", chart=chart.name,
                          repo=None, version=chart.version, values={})
    with ExistingCluster(tmp_path).running([]) as cluster:
        cluster.host.call(lambda: cluster.host.put(
            DEPLOYMENTS, _other("Deployment", "mine", "kai-scheduler")))
        helm = FakeHelm(cluster)
        helm.install(release)
        made = cluster.host.call(lambda: list(cluster.host.made[("kai-scheduler",
                                                                 "kai-scheduler")]))
        assert {k[2] for k in made if k[0] == DEPLOYMENTS} == set(kr.KAI_DEPLOYMENTS)
        assert "mine" not in {k[2] for k in made}
        helm.uninstall("kai-scheduler", "kai-scheduler")
        assert _names(cluster, DEPLOYMENTS, "kai-scheduler") == ["mine"]
        assert _names(cluster, CRDS, None) == ["podgroups.scheduling.run.ai",
                                               "queues.scheduling.run.ai"]
