"""vcluster-kai on existing clusters of two more shapes, end to end over HTTP (#23 item 2):

- a multi-node cluster with the NVIDIA device plugin on three GPU nodes of 8, 4 and 2 GPUs, a
  control-plane and CPU nodes listed first, and no LoadBalancer (NodePort on a node address);
- a cluster without GPUs where fake GPUs go on the nodes the profile names
  (`cluster.fake_gpu_nodes`): the pool's labels on those nodes and fake-gpu-operator, recorded in
  lab.json, and `down` removes exactly those labels (while they keep gpulab's value) and the
  release.

Every request each API server received (the host's and each vCluster's) and each of the fake
helm's installs and uninstalls are in the test's folder, `microk8s.requests.log`, written when
the cluster stops, also when the test fails (tests/existing/kmock_cluster.py)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.errors import HostError
from gpulab.profile.base import ClusterSpec
from gpulab.profile.load import LoadedProfile
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from tests.existing.kmock_cluster import NODES, ExistingCluster, FakeHelm

if TYPE_CHECKING:
    from pathlib import Path

TEAMS = ["team-nlp", "team-vision", "team-recommender"]
LAB = "vcluster-kai"
POOL_LABELS = ("run.ai/simulated-gpu-node-pool", "nvidia.com/gpu.deploy.device-plugin",
               "nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
               "nvidia.com/gpu.memory")


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _loaded(fake: list[str] | None = None) -> LoadedProfile:
    loaded = load_profile("vcluster-kai")
    if fake is None:
        return loaded
    spec = ClusterSpec(provider="existing", fake_gpu_nodes=fake)
    return LoadedProfile(loaded.profile.model_copy(update={"cluster": spec}), loaded.source,
                         loaded.builtin)


def _up(cluster: ExistingCluster, loaded: LoadedProfile) -> Any:
    from gpulab.paths import lab_dir

    result = core.up(loaded.profile, LAB, lambda _e: None,
                     adapters=cluster.adapters(lab_dir(LAB)), sleep=lambda _s: None,
                     cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
    if result.built_anything:  # as `gpulab up` does
        core.record_profile(LAB, loaded)
    return result


def _down(cluster: ExistingCluster) -> Any:
    record = lab_record.read(LAB)
    assert record is not None
    return core.remove_lab(LAB, core.lab_provider(LAB, helm=lambda _p: FakeHelm(cluster)))


def _status() -> dict[str, Any]:
    result = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- real device plugin


@pytest.mark.slow
def test_multi_node_device_plugin_nodes_of_different_counts(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, shape="multi-node").running(TEAMS) as cluster:
        before = cluster.state()
        result = _up(cluster, _loaded())
        assert result.ok, [str(f.error) for f in result.failures]
        # each team's gpu-node step is done: its vCluster lists every GPU node with the GPUs
        # it has (8, 4, 2); it waited for each to be listed with the least (2) before
        assert {r.name for r in result.results if r.name.endswith("/gpu-node")
                and r.error is None} == {f"{t}/gpu-node" for t in TEAMS}
        # no LoadBalancer: NodePort on the first node address (the control plane's InternalIP)
        values = cluster.releases[("vcluster-team-nlp", "team-nlp")].values
        assert values["controlPlane"]["service"]["spec"] == {"type": "NodePort"}
        assert values["exportKubeConfig"]["server"] == "https://10.0.1.1:31443"
        assert "10.0.1.1" in values["controlPlane"]["proxy"]["extraSANs"]

        info = _status()
        assert [n["name"] for n in info["gpu_nodes"]] == ["gpu-1", "gpu-2", "gpu-3"]

        record = lab_record.read(LAB)
        assert record is not None
        assert not any(o["type"] == "node-label" for o in record.owned)  # real GPUs: no labels
        assert _down(cluster).leftovers == []
        assert cluster.state() == before  # every object, the nodes and device plugin included
        calls = cluster.host.calls()
        writes = [(m, p) for m, p in calls if m != "GET"]
        assert writes, "up and down wrote nothing"
        assert not [w for w in writes if "/nodes" in w[1] or "/kube-system/" in w[1]]
    # the request log the cluster wrote when it stopped: every request of the host, then each
    # vCluster's (up's gpu-node step listed each one's nodes), then the fake helm's
    logged = cluster.read_request_log()
    assert [tuple(line.split(" ", 2)[:2]) for line in logged["microk8s"]] == calls
    for team in TEAMS:
        assert "GET /api/v1/nodes" in logged[team]
    assert "uninstall vcluster-team-nlp/team-nlp: deleted services vcluster-team-nlp/team-nlp" \
        in logged["helm"]


def test_gpu_node_step_takes_each_nodes_own_count(tmp_path: Path) -> None:
    # the step waited for every node to be listed with the least count (2): gpu-1 (8 GPUs)
    # never matched; now each node is expected with its own count, and a stale one is named
    from gpulab.stacks.vcluster_kai.steps import TeamGpuNode

    profile: Any = _loaded().profile
    with ExistingCluster(tmp_path, shape="multi-node").running(["team-nlp"]) as cluster:
        team = profile.teams[0]
        step = TeamGpuNode(profile, LAB, team, counts={"gpu-1": 8, "gpu-2": 4, "gpu-3": 2})
        vc = cluster.client(tmp_path / "team-nlp.kubeconfig")
        assert step._seen(vc) == (True, "GPU nodes listed with their GPUs (gpu-1: 8, "
                                        "gpu-2: 4, gpu-3: 2)")
        least = TeamGpuNode(profile, LAB, team, counts={"gpu-1": 2, "gpu-2": 2, "gpu-3": 2})
        assert least._seen(vc) == (False, "gpu-1 listed with nvidia.com/gpu 8, the host "
                                          "advertises 2")
        plan = step.describe()[0].body
        assert plan["allocatable"]["gpu-1"] == {kr.GPU_RESOURCE: "8"}


# --------------------------------------------------------------------------- fake GPUs


def _nodes_without_status(state: dict[str, Any]) -> dict[str, Any]:
    """The dump with each node's status and resourceVersion left out: the kubelet reports the
    GPUs a device plugin advertised (node status is not gpulab's), and the API server counts
    every write in resourceVersion."""
    out = json.loads(json.dumps(state))
    for key, obj in out["objects"].items():
        if "nodes" in key:
            obj.pop("status", None)
            obj["metadata"].pop("resourceVersion", None)
    return out  # type: ignore[no-any-return]


@pytest.mark.slow
def test_fake_gpus_on_named_nodes_up_status_down(tmp_path: Path) -> None:
    loaded = _loaded(["cpu-2", "cpu-3"])
    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        before = cluster.state()
        untouched = {n: cluster.node(n) for n in ("cp-1", "cpu-1")}

        plan = CliRunner().invoke(app, ["plan", "-p", "vcluster-kai", "--kubeconfig",
                                        str(cluster.kubeconfig), "-o", "json"])
        assert plan.exit_code == 0, plan.output  # the built-in profile: no GPU, refused note

        result = _up(cluster, loaded)
        assert result.ok, [str(f.error) for f in result.failures]
        for name in ("cpu-2", "cpu-3"):
            live = cluster.node(name)
            assert live is not None
            labels = live["metadata"]["labels"]
            assert labels[kr.POOL_LABEL] == "default"
            assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true"
            assert live["status"]["allocatable"][kr.GPU_RESOURCE] == "1"
        assert {n: cluster.node(n) for n in ("cp-1", "cpu-1")} == untouched

        release = cluster.releases[("gpu-operator", "gpu-operator")]
        assert release.values["topology"]["nodePoolLabelKey"] == kr.POOL_LABEL
        assert release.values["statusUpdater"] == {"disableNodeLabeling": True}
        assert release.values["environment"]["resourceReservationNamespace"] == \
            "kai-resource-reservation"

        record = lab_record.read(LAB)
        assert record is not None
        owned = list(record.owned)
        labels = [(o["node"], o["key"], o["value"]) for o in owned if o["type"] == "node-label"]
        assert sorted(k for n, k, _v in labels if n == "cpu-2") == sorted(POOL_LABELS)
        assert {n for n, _k, _v in labels} == {"cpu-2", "cpu-3"}
        first_label = next(i for i, o in enumerate(owned) if o["type"] == "node-label")
        fgo = next(i for i, o in enumerate(owned) if o.get("name") == "gpu-operator"
                   and o["type"] == "helm-release")
        namespace = next(i for i, o in enumerate(owned) if o.get("kind") == "Namespace"
                         and o["name"] == "gpu-operator")
        assert namespace < first_label < fgo  # down: release, then labels, namespace last

        info = _status()
        assert [n["name"] for n in info["gpu_nodes"]] == ["cpu-2", "cpu-3"]

        again = _up(cluster, loaded)  # a re-run recognises its own labels and release
        assert again.ok and again.all_skipped, [str(f.error) for f in again.failures]

        teardown = _down(cluster)
        assert teardown.leftovers == []
        assert "label run.ai/simulated-gpu-node-pool=default of node cpu-2" in teardown.removed
        after = cluster.state()
        assert _nodes_without_status(after) == _nodes_without_status(before)
        for name in ("cpu-2", "cpu-3"):
            was = before["objects"][str((NODES, None, name))]["metadata"]["labels"]
            now = after["objects"][str((NODES, None, name))]
            assert now["metadata"]["labels"] == was
            assert now["status"]["allocatable"][kr.GPU_RESOURCE] == "0"  # the kubelet's
        assert {n: cluster.node(n) for n in ("cp-1", "cpu-1")} == untouched
        calls = cluster.host.calls()
        node_writes = [p for m, p in calls if m != "GET" and "/nodes" in p]
        # one patch per named node to label it, one to unlabel it; no other node written
        assert sorted(node_writes) == ["/api/v1/nodes/cpu-2"] * 2 + ["/api/v1/nodes/cpu-3"] * 2


@pytest.mark.slow
def test_down_leaves_a_label_someone_changed(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        assert _up(cluster, _loaded(["cpu-2"])).ok
        cluster.edit_node_labels("cpu-2", {"nvidia.com/gpu.product": "mine",
                                           "team": "infra"})
        teardown = _down(cluster)
        labels = (cluster.node("cpu-2") or {})["metadata"]["labels"]
        assert labels["nvidia.com/gpu.product"] == "mine"  # not gpulab's value any more: kept
        assert labels["team"] == "infra"
        assert not set(POOL_LABELS) - {"nvidia.com/gpu.product"} & set(labels)
        assert any(k.startswith("label nvidia.com/gpu.product of node cpu-2: now 'mine'")
                   for k in teardown.kept), teardown.kept
        assert teardown.leftovers == []


@pytest.mark.parametrize(("shape", "nodes", "denied", "expected"), [
    ("no-gpu", ["cpu-9"], set(),
     "node cpu-9 (cluster.fake_gpu_nodes) is not in the cluster"),
    ("multi-node", ["gpu-2"], set(),
     "node gpu-2 (cluster.fake_gpu_nodes) already advertises nvidia.com/gpu 4"),
    ("no-gpu", ["cpu-1"], {("patch", "nodes")}, "not allowed to patch nodes"),
    ("no-gpu", ["cpu-1"], {("create", "daemonsets")},
     "not allowed to create daemonsets.apps in gpu-operator"),
])
def test_fake_gpu_nodes_refused_before_anything(tmp_path: Path, shape: str, nodes: list[str],
                                               denied: set[tuple[str, str]],
                                               expected: str) -> None:
    with ExistingCluster(tmp_path, shape=shape, denied=denied).running(TEAMS) as cluster:
        before = cluster.state()
        with pytest.raises(HostError, match="preflight: " + re.escape(expected)) as err:
            _up(cluster, _loaded(nodes))
        assert "\n" not in err.value.message
        assert cluster.state() == before
        assert lab_record.read(LAB) is None


def test_label_gpulab_would_overwrite_is_refused(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        cluster.edit_node_labels("cpu-1", {"nvidia.com/gpu.product": "Tesla-T4"})
        before = cluster.state()
        with pytest.raises(HostError, match=re.escape(
                "node cpu-1 (cluster.fake_gpu_nodes) has label(s) nvidia.com/gpu.product="
                "Tesla-T4 that gpulab would overwrite")):
            _up(cluster, _loaded(["cpu-1"]))
        assert cluster.state() == before


def test_fake_gpu_operator_objects_already_there_are_refused(tmp_path: Path) -> None:
    from tests.existing.kmock_cluster import RUNTIMECLASSES

    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        cluster.host.call(lambda: cluster.host.put(RUNTIMECLASSES, {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "nvidia"}, "handler": "nvidia"}))
        with pytest.raises(HostError, match="RuntimeClass nvidia already exists"):
            _up(cluster, _loaded(["cpu-1"]))


def test_plan_shows_the_labels_and_the_release(tmp_path: Path) -> None:
    from gpulab.stacks.vcluster_kai.steps import FAKE_GPUS_STEP

    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        steps, note = core.plan_steps(_loaded(["cpu-3"]).profile, LAB, probe_host=False,
                                      cluster=ClusterChoice("existing",
                                                            kubeconfig=cluster.kubeconfig))
        assert note == ""
        by_name = {s.name: s for s in steps}
        labels = by_name["management/fake-gpu-labels"].describe()
        assert {a.kind for a in labels} == {"node-label"}
        assert labels[0].name == "cpu-3 run.ai/simulated-gpu-node-pool=default"
        assert len(labels) == 6
        assert by_name[FAKE_GPUS_STEP].describe()[0].kind == "helm-release"
        assert by_name["team-nlp/vcluster"].requires == ("management/namespaces",
                                                        FAKE_GPUS_STEP)
        assert all(m == "GET" or p.startswith("/apis/authorization.k8s.io/")
                   for m, p in cluster.writes())


def test_fake_gpu_nodes_profile_rules() -> None:
    with pytest.raises(ValueError, match="fake_gpu_nodes: only with provider: existing"):
        ClusterSpec(provider="kind", fake_gpu_nodes=["n1"])
    with pytest.raises(ValueError, match="n1 named more than once"):
        ClusterSpec(provider="existing", fake_gpu_nodes=["n1", "n1"])
    with pytest.raises(ValueError, match="'N_1' is not a node name"):
        ClusterSpec(provider="existing", fake_gpu_nodes=["N_1"])


@pytest.mark.slow
def test_fake_gpus_watch_the_reservation_namespace_of_a_reused_kai(tmp_path: Path) -> None:
    # KAI found installed: fake-gpu-operator's status-updater must watch the namespace that
    # KAI's binder puts reservation pods in (Config kai-config spec.binder.resourceReservation)
    from tests.existing.kmock_cluster import CONFIGS

    with ExistingCluster(tmp_path, shape="no-gpu", kai=True).running(TEAMS) as cluster:
        config = cluster.host.stored(CONFIGS, None, "kai-config")
        assert config is not None
        config["spec"]["binder"] = {"resourceReservation": {"namespace": "gpu-reservations"}}
        cluster.host.call(lambda: cluster.host.put(CONFIGS, config))
        assert _up(cluster, _loaded(["cpu-1"])).ok
        values = cluster.releases[("gpu-operator", "gpu-operator")].values
        assert values["environment"]["resourceReservationNamespace"] == "gpu-reservations"
        assert ("kai-scheduler", "kai-scheduler") not in cluster.releases  # reused
        assert _down(cluster).leftovers == []


class _RacingNode:
    """A node whose labels someone else changes once between down's read and its patch."""

    def __init__(self) -> None:
        self.version = 1
        self.labels = {"run.ai/simulated-gpu-node-pool": "default", "team": "infra"}
        self.patches: list[tuple[dict[str, Any], str | None]] = []

    def get(self, api: str, kind: str, name: str, namespace: str | None = None) -> Any:
        return {"metadata": {"name": name, "labels": dict(self.labels),
                             "resourceVersion": str(self.version)}}

    def label(self, api: str, kind: str, name: str, labels: dict[str, Any],
              namespace: str | None = None, *, resource_version: str | None = None) -> None:
        from gpulab.adapters.kube import KubeApiError

        self.patches.append((labels, resource_version))
        if len(self.patches) == 1:  # someone wrote the node after down read it
            self.version += 1
            raise KubeApiError("the object has been modified", status=409)
        assert resource_version == str(self.version)
        for key, value in labels.items():
            if value is None:
                self.labels.pop(key, None)


def test_down_reads_a_node_again_when_it_changed_under_the_patch() -> None:
    from gpulab.providers.existing.teardown import remove_owned as teardown

    node = _RacingNode()
    owned = ({"type": "node-label", "node": "cpu-2", "key": "run.ai/simulated-gpu-node-pool",
              "value": "default"},)
    result = teardown(owned, node, helm=None)  # type: ignore[arg-type]
    assert node.labels == {"team": "infra"}
    assert [rv for _l, rv in node.patches] == ["1", "2"]
    assert result.removed == ["label run.ai/simulated-gpu-node-pool=default of node cpu-2"]
    assert result.leftovers == [] and result.kept == []


# --------------------------------------------------------------------------- --fake-gpu-node


def _cli_up_on(cluster: ExistingCluster, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """`gpulab up` through the CLI, its cluster reached as the flags say; only the adapters
    are kmock's (its KubeClient, the fake helm). Returns the profiles core.up was given."""
    from gpulab.paths import lab_dir

    real_up = core.up
    given: list[Any] = []

    def up(profile: Any, lab: str, report: Any, **kw: Any) -> Any:
        given.append(profile)
        return real_up(profile, lab, report, **{**kw, "adapters": cluster.adapters(lab_dir(lab)),
                                                "sleep": lambda _s: None})

    monkeypatch.setattr(core, "up", up)
    return given


@pytest.mark.slow
def test_fake_gpu_node_flag_builds_records_continues_and_down_removes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        before = cluster.state()
        given = _cli_up_on(cluster, monkeypatch)
        flags = ["--kubeconfig", str(cluster.kubeconfig), "--fake-gpu-node", "cpu-2",
                 "--fake-gpu-node", "cpu-3"]
        plan = CliRunner().invoke(app, ["plan", "-p", "vcluster-kai", *flags, "-o", "json"])
        assert plan.exit_code == 0, plan.output
        assert "up would refuse" not in plan.stderr  # without the flags: no GPU, refused
        steps = {s["step"]: s for s in json.loads(plan.stdout)}
        labels = [a["name"] for a in steps["management/fake-gpu-labels"]["artifacts"]]
        assert "cpu-2 run.ai/simulated-gpu-node-pool=default" in labels and len(labels) == 12

        up = CliRunner().invoke(app, ["up", "-p", "vcluster-kai", *flags])
        assert up.exit_code == 0, up.output
        assert given[0].cluster.fake_gpu_nodes == ["cpu-2", "cpu-3"]
        for name in ("cpu-2", "cpu-3"):
            assert (cluster.node(name) or {})["metadata"]["labels"][kr.POOL_LABEL] == "default"
        assert (cluster.node("cpu-1") or {})["metadata"]["labels"].get(kr.POOL_LABEL) is None
        record = lab_record.read(LAB)
        assert record is not None and record.document is not None
        assert record.document["cluster"]["fake_gpu_nodes"] == ["cpu-2", "cpu-3"]
        assert {o["node"] for o in record.owned if o["type"] == "node-label"} == \
            {"cpu-2", "cpu-3"}

        again = CliRunner().invoke(app, ["up", "--name", LAB])  # the record's nodes, its cluster
        assert again.exit_code == 0, again.output
        assert "is already up; nothing to do" in again.stderr
        assert given[1].cluster.fake_gpu_nodes == ["cpu-2", "cpu-3"]

        other = CliRunner().invoke(app, ["up", "--name", LAB, "--fake-gpu-node", "cpu-1"])
        assert other.exit_code == 2
        assert other.stderr.count("\n") == 1, other.stderr
        assert "lab 'vcluster-kai' was built with fake GPUs on cpu-2, cpu-3 (lab.json), not " \
               "on cpu-1 (gpulab up --name vcluster-kai continues it as built; gpulab down " \
               "--name vcluster-kai first to put them elsewhere)" in other.stderr
        none = CliRunner().invoke(app, ["up", "-p", "vcluster-kai", "--kubeconfig",
                                        str(cluster.kubeconfig)])
        assert none.exit_code == 2
        assert "built with fake GPUs on cpu-2, cpu-3 (lab.json), and this run names none" \
            in none.stderr
        assert len(given) == 2  # refused before anything was read or built

        teardown = _down(cluster)
        assert teardown.leftovers == []
        assert _nodes_without_status(cluster.state()) == _nodes_without_status(before)


@pytest.mark.parametrize(("argv", "expected"), [
    (["-p", "vcluster-kai", "--fake-gpu-node", "cpu-1"],
     "--fake-gpu-node goes with a cluster you already have (--kubeconfig FILE [--context "
     "NAME]): on kind the GPU workers are the lab's own (gpu_pool.nodes)"),
    (["-p", "kamaji-hami", "--kubeconfig", "K", "--fake-gpu-node", "cpu-1"],
     "--fake-gpu-node: only for stack vcluster-kai (fake-gpu-operator): kamaji-hami's GPUs are "
     "its tenants' workers"),
    (["-p", "vcluster-kai", "--kubeconfig", "K", "--fake-gpu-node", "CPU_1"],
     "--fake-gpu-node: 'CPU_1' is not a node name"),
    (["-p", "vcluster-kai", "--kubeconfig", "K", "--fake-gpu-node", "n1", "--fake-gpu-node",
      "n1"], "--fake-gpu-node: n1 named more than once"),
    (["-p", "PROFILE", "--kubeconfig", "K", "--fake-gpu-node", "cpu-1"],
     "--fake-gpu-node cpu-1 and the profile's cluster.fake_gpu_nodes (cpu-2, cpu-3) name other "
     "nodes (name them in one place)"),
])
@pytest.mark.parametrize("command", ["up", "plan"])
def test_fake_gpu_node_flag_refused_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, argv: list[str],
        expected: str) -> None:
    import yaml

    from gpulab.stacks import load_profile as load

    document = yaml.safe_load(load("vcluster-kai").source.read_text())
    document["cluster"] = {"provider": "existing", "fake_gpu_nodes": ["cpu-2", "cpu-3"]}
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(document))
    argv = [str(mine) if a == "PROFILE" else str(tmp_path / "k") if a == "K" else a
            for a in argv]
    monkeypatch.setattr(core, "up", lambda *_a, **_k: pytest.fail("up ran"))
    monkeypatch.setattr(core, "plan_steps", lambda *_a, **_k: pytest.fail("plan read"))
    result = CliRunner().invoke(app, [command, *argv])
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_a_kamaji_hami_profile_naming_fake_gpu_nodes_is_refused() -> None:
    from gpulab.errors import ProfileError
    from gpulab.stacks import parse_profile

    text = load_profile("kamaji-hami").source.read_text()
    text += "cluster:\n  provider: existing\n  fake_gpu_nodes: [n1]\n"
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "mine.yaml")
    assert any(p.endswith("cluster.fake_gpu_nodes: only for stack vcluster-kai "
                          "(fake-gpu-operator): kamaji-hami's GPUs are its tenants' workers "
                          "(tenants[].gpus on kind, joined machines on an existing cluster)")
               for p in err.value.problems), err.value.problems


# --------------------------------------------------------------------------- Pod Security


def _enforce(cluster: ExistingCluster, namespace: str) -> str | None:
    from gpulab.pod_security import ENFORCE_LABEL

    found = cluster.host.call(lambda: cluster.host.namespaces.get(namespace))
    return None if found is None else (found["metadata"].get("labels") or {}).get(ENFORCE_LABEL)


@pytest.mark.slow
def test_namespaces_are_labelled_for_pod_security_and_a_stricter_one_is_refused(
        tmp_path: Path) -> None:
    from gpulab.pod_security import ENFORCE_LABEL

    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        before = cluster.state()
        assert _up(cluster, _loaded(["cpu-2"])).ok
        # created with the level their pods need, whatever the cluster's default is
        assert _enforce(cluster, "gpu-operator") == "privileged"
        assert _enforce(cluster, "kai-scheduler") == "baseline"
        assert _enforce(cluster, "kai-resource-reservation") == "baseline"
        assert {_enforce(cluster, f"vcluster-{t}") for t in TEAMS} == {"baseline"}

        # someone holds the lab's fake-gpu-operator namespace to baseline since: a re-run
        # refuses before it changes anything, saying why and what to do
        def stricter() -> None:
            cluster.host.namespaces["gpu-operator"]["metadata"]["labels"][ENFORCE_LABEL] = \
                "baseline"

        cluster.host.call(stricter)
        writes = len(cluster.writes())
        with pytest.raises(HostError) as err:
            _up(cluster, _loaded(["cpu-2"]))
        assert err.value.message == (
            "preflight: namespace gpu-operator enforces Pod Security 'baseline' "
            "(pod-security.kubernetes.io/enforce) and fake-gpu-operator's device plugin "
            "(privileged, hostPath volumes) needs 'privileged': its pods would be refused; "
            "`kubectl label namespace gpu-operator pod-security.kubernetes.io/enforce="
            "privileged --overwrite`, or `gpulab down` and up again")
        assert [w for w in cluster.writes()[writes:]
                if not w[1].startswith("/apis/authorization.k8s.io/")] == []

        # a namespace of the lab without the label (an older gpulab made it) gets it again
        def unlabelled() -> None:
            cluster.host.namespaces["gpu-operator"]["metadata"]["labels"][ENFORCE_LABEL] = \
                "privileged"
            del cluster.host.namespaces["vcluster-team-nlp"]["metadata"]["labels"][
                ENFORCE_LABEL]

        cluster.host.call(unlabelled)
        again = _up(cluster, _loaded(["cpu-2"]))
        assert again.ok, [str(f.error) for f in again.failures]
        assert [r.name for r in again.results if r.outcome.value == "done"] == [
            "management/namespaces"]
        assert _enforce(cluster, "vcluster-team-nlp") == "baseline"

        assert _down(cluster).leftovers == []
        assert _nodes_without_status(cluster.state()) == _nodes_without_status(before)


def test_plan_shows_each_namespaces_pod_security_label(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path, shape="no-gpu").running(TEAMS) as cluster:
        steps, _note = core.plan_steps(_loaded(["cpu-3"]).profile, LAB, probe_host=False,
                                       cluster=ClusterChoice("existing",
                                                             kubeconfig=cluster.kubeconfig))
        namespaces = next(s for s in steps if s.name == "management/namespaces").describe()
        labels = {a.name: a.body["metadata"]["labels"] for a in namespaces}
        assert labels["Namespace/gpu-operator"]["pod-security.kubernetes.io/enforce"] == \
            "privileged"
        assert labels["Namespace/vcluster-team-nlp"]["pod-security.kubernetes.io/enforce"] == \
            "baseline"
        assert labels["Namespace/vcluster-team-nlp"]["gpulab.dev/lab"] == LAB
