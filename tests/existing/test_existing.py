"""vcluster-kai on a cluster gpulab did not build (provider existing), end to end over HTTP: the
read-only preflight, `plan`, `up` (real KubeClient against kmock, fake helm), `status`, and
`down`, which leaves the cluster exactly as `up` found it and refuses another cluster."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.errors import HostError
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile
from tests.existing.kmock_cluster import ExistingCluster

if TYPE_CHECKING:
    from pathlib import Path

TEAMS = ["team-nlp", "team-vision", "team-recommender"]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _profile() -> Any:
    return load_profile("vcluster-kai").profile


def _up(cluster: ExistingCluster, tmp_path: Path, lab: str = "vcluster-kai") -> Any:
    from gpulab.paths import lab_dir

    events: list[Any] = []
    result = core.up(_profile(), lab, events.append, adapters=cluster.adapters(lab_dir(lab)),
                     sleep=lambda _s: None,
                     cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
    if result.built_anything:  # as `gpulab up` does
        core.record_profile(lab, load_profile("vcluster-kai"))
    return result


def _down(cluster: ExistingCluster, lab: str = "vcluster-kai") -> Any:
    from tests.existing.kmock_cluster import FakeHelm

    record = lab_record.read(lab)
    assert record is not None
    return core.remove_lab(lab, core.lab_provider(lab, helm=lambda _p: FakeHelm(cluster)))


@pytest.mark.slow
def test_gpu_operator_node_up_status_down_leaves_it_as_found(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        before = cluster.state()
        result = _up(cluster, tmp_path)
        assert result.ok, [str(f.error) for f in result.failures]
        record = lab_record.read("vcluster-kai")
        assert record is not None and record.provider == "existing"
        assert record.cluster["kube_system_uid"] == "microk8s-uid-0002"
        owned = [(o["type"], o.get("kind"), o["name"]) for o in record.owned]
        assert owned[0] == ("object", "Namespace", "kai-scheduler")
        assert ("object", "CustomResourceDefinition", "queues.scheduling.run.ai") in owned
        assert owned.index(("object", "CustomResourceDefinition", "queues.scheduling.run.ai")) \
            < owned.index(("helm-release", None, "kai-scheduler"))
        assert ("helm-release", None, "team-nlp") in owned
        # every object gpulab applied itself carries the lab's label
        for entry in record.owned:
            if entry["type"] == "object" and entry["kind"] in ("Namespace", "Queue"):
                live = (cluster.host.namespaces.get(entry["name"]) if entry["kind"] ==
                        "Namespace" else None)
                if live is not None:
                    assert live["metadata"]["labels"]["gpulab.dev/lab"] == "vcluster-kai"
        vc = cluster.releases[("vcluster-team-nlp", "team-nlp")].values
        assert vc["exportKubeConfig"]["server"] == "https://10.0.0.5:31443"
        assert vc["experimental"]["syncSettings"]["setOwner"] is False
        saved = yaml.safe_load((tmp_path / "home" / "labs" / "vcluster-kai" /
                                "team-nlp.kubeconfig").read_text())
        assert saved["clusters"][0]["cluster"]["server"] == "https://10.0.0.5:31443"

        status = CliRunner().invoke(app, ["status", "--name", "vcluster-kai", "-o", "json"])
        assert status.exit_code == 0, status.output
        info = json.loads(status.stdout)
        assert info["management"]["cluster"].startswith("existing ")
        assert [n["name"] for n in info["gpu_nodes"]] == ["gpu-node-1"]

        again = _up(cluster, tmp_path)  # resumable: nothing left to do
        assert again.ok and again.all_skipped

        teardown = _down(cluster)
        assert not teardown.leftovers, teardown.leftovers
        after = cluster.state()
        assert after == before
        assert not (tmp_path / "home" / "labs" / "vcluster-kai").exists()
        methods = {m for m, _p in cluster.writes()}
        assert methods <= {"POST", "PATCH", "DELETE"}


def test_plan_shows_what_goes_where_and_reads_only(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, kai=True).running(TEAMS) as cluster:
        result = CliRunner().invoke(app, ["plan", "-p", "vcluster-kai", "--kubeconfig",
                                          str(cluster.kubeconfig), "-o", "json"])
        assert result.exit_code == 0, result.output
        plan = json.loads(result.stdout)
        steps = {s["step"]: s for s in plan}
        first = steps["management/cluster"]["artifacts"][0]
        assert first["kind"] == "existing-cluster" and first["name"] == cluster.host.url
        kai = steps["management/kai-scheduler"]["artifacts"][0]
        assert kai["kind"] == "reused" and kai["body"]["version"] == "v0.16.8"
        # only reads and access reviews: nothing stored
        assert all(m == "GET" or p.startswith("/apis/authorization.k8s.io/")
                   for m, p in cluster.writes())


def test_kai_already_installed_is_reused_and_kept(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, kai=True).running(TEAMS) as cluster:
        before = cluster.state()
        result = _up(cluster, tmp_path)
        assert result.ok, [str(f.error) for f in result.failures]
        assert ("kai-scheduler", "kai-scheduler") not in cluster.releases
        record = lab_record.read("vcluster-kai")
        assert record is not None
        assert not any(o.get("name") in ("kai-scheduler", "queues.scheduling.run.ai")
                       for o in record.owned)
        assert _down(cluster).leftovers == []
        assert cluster.state() == before  # KAI, its namespace and CRDs untouched


def test_kai_without_gpu_sharing_is_refused_before_anything(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, kai=True, gpu_sharing=False).running(TEAMS) as cluster:
        before = cluster.state()
        with pytest.raises(HostError, match="without GPU sharing"):
            _up(cluster, tmp_path)
        assert cluster.state() == before
        assert lab_record.read("vcluster-kai") is None


def test_missing_rights_are_named(tmp_path: Path) -> None:
    denied = {("create", "namespaces")}
    with ExistingCluster(tmp_path, denied=denied).running(TEAMS) as cluster, \
            pytest.raises(HostError, match="not allowed to create namespaces"):
        _up(cluster, tmp_path)


@pytest.mark.slow
def test_down_refuses_another_cluster(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        with ExistingCluster(tmp_path, name="other").running([]) as other:
            result = CliRunner().invoke(app, ["down", "--name", "vcluster-kai",
                                              "--kubeconfig", str(other.kubeconfig)])
            assert result.exit_code == 2, result.output
            assert "nothing removed" in result.output
            assert other.writes() == []
        assert lab_record.read("vcluster-kai") is not None


def test_load_balancer_cluster_reaches_vclusters_by_their_address(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, load_balancer=True).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        values = cluster.releases[("vcluster-team-nlp", "team-nlp")].values
        assert values["controlPlane"]["service"]["spec"] == {"type": "LoadBalancer"}
        saved = yaml.safe_load((tmp_path / "home" / "labs" / "vcluster-kai" /
                                "team-nlp.kubeconfig").read_text())
        assert saved["clusters"][0]["cluster"]["server"] == "https://192.0.2.20:443"


def _up_bounded(cluster: ExistingCluster, helm_parallel: int) -> Any:
    from gpulab.paths import lab_dir

    return core.up(_profile(), "vcluster-kai", lambda _e: None,
                   adapters=cluster.adapters(lab_dir("vcluster-kai")), sleep=lambda _s: None,
                   cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig,
                                         helm_parallel=helm_parallel))


@pytest.mark.slow
@pytest.mark.parametrize("helm_parallel", [1, 2])
def test_teams_install_concurrently_within_the_helm_bound(tmp_path: Path,
                                                          helm_parallel: int) -> None:
    # KAI and the three teams' vClusters may all install at once (the engine runs them
    # concurrently); the bound lets no more than `helm_parallel` Helm installs overlap
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        cluster.helm_seconds, cluster.helm_gate = 10, helm_parallel  # held until the bound
        result = _up_bounded(cluster, helm_parallel)
        assert result.ok, [str(f.error) for f in result.failures]
        assert len(cluster.releases) == 4
        assert cluster.helm_most == helm_parallel


def test_without_a_bound_installs_overlap_beyond_it(tmp_path: Path) -> None:
    # the same up with a bound above the work: all four installs run at once, so the bound of
    # the test above is what held them back
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        cluster.helm_seconds, cluster.helm_gate = 10, 4
        assert _up_bounded(cluster, 8).ok
        assert cluster.helm_most == 4


def test_helm_parallel_comes_from_the_profile_and_is_refused_with_kind() -> None:
    from gpulab.errors import UsageError
    from gpulab.profile.base import ClusterSpec
    from gpulab.providers import choose
    from gpulab.providers.existing import HELM_PARALLEL, BoundedHelm

    profile = _profile()
    assert choose(profile, kubeconfig=None, context="ctx").helm_parallel == HELM_PARALLEL == 4
    spec = ClusterSpec(provider="existing", helm_parallel=2)
    assert choose(profile.model_copy(update={"cluster": spec})).helm_parallel == 2
    with pytest.raises(ValueError, match="helm_parallel: only with provider: existing"):
        ClusterSpec(provider="kind", helm_parallel=2)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        ClusterSpec(provider="existing", helm_parallel=0)
    with pytest.raises(UsageError, match="at least 1"):
        BoundedHelm(lambda _p: None, 0)


def test_preflight_asks_concurrently_and_answers_in_order(tmp_path: Path) -> None:
    # the reviews go out several at once; which one is denied is still named as asked
    denied = {("create", "statefulsets"), ("delete", "queues")}
    with ExistingCluster(tmp_path, denied=denied).running(TEAMS) as cluster:
        facts, _first, problems = core.survey(
            _profile(), "vcluster-kai", ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
        assert facts.denied[0] == "delete queues.scheduling.run.ai"
        assert [d for d in facts.denied if "statefulsets" in d] == [
            f"create statefulsets.apps in {ns}" for ns in
            ("kai-scheduler", "vcluster-team-nlp", "vcluster-team-vision",
             "vcluster-team-recommender")]
        assert problems[-1].startswith("not allowed to delete queues.scheduling.run.ai (+4 more)")


def test_steps_recording_at_once_lose_nothing() -> None:
    # teams' steps record what they create from threads of their own; lab.json is rewritten
    # whole each time, so without the lock one's entry could be lost and `down` leave it behind
    from concurrent.futures import ThreadPoolExecutor

    entries = [{"type": "helm-release", "name": f"team-{i}", "namespace": f"vc-{i}"}
               for i in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda e: lab_record.record_owned("race", [e]), entries))
    crd = {"type": "object", "apiVersion": "apiextensions.k8s.io/v1",
           "kind": "CustomResourceDefinition", "name": "queues.scheduling.run.ai",
           "namespace": None}
    lab_record.insert_owned("race", [crd], [entries[5]])
    record = lab_record.read("race")
    assert record is not None
    owned = list(record.owned)
    assert len(owned) == 41 and all(e in owned for e in entries)
    assert owned.index(crd) == owned.index(entries[5]) - 1
