"""verify, kubeconfig, logs and labs on a vcluster-kai lab in a cluster gpulab did not build
(provider existing), each driven through the CLI after an `up` on the kmock cluster.

verify's pods need a scheduler and vCluster's syncer, which kmock does not have: the host's
objects after `up` (its GPU node, the queues gpulab created) are copied into an in-memory API
where tests/cluster/fake_kai.py plays KAI (decoding pods and queues with its own code) and
tests/vcluster_kai/live_fakes.py's VClusterApi plays each vCluster and its syncer.
"""

from __future__ import annotations

import json
import stat
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.errors import AdapterError
from gpulab.stacks import load_profile
from tests.cluster import builders as cb
from tests.cluster.fake_kai import FakeKai
from tests.existing.kmock_cluster import VERSION, ExistingCluster
from tests.existing.test_existing import TEAMS, _up
from tests.kamaji_hami.fakes import FakeApi, FakeClock
from tests.vcluster_kai import builders as vb
from tests.vcluster_kai.live_fakes import VClusterApi, _syncer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

LAB = "vcluster-kai"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _host_after_up(cluster: ExistingCluster, gpus: int | None = None) -> cb.ClusterApi:
    """The host's nodes and gpulab's queues as `up` left them in kmock, in an in-memory API with
    KAI's scheduler Deployment and Config (what KAI's operator makes) and each vCluster's pod."""
    state = cluster.state()
    host = cb.ClusterApi("host", VERSION)
    for raw in state["objects"].values():
        if raw.get("kind") == "Node":
            if gpus is not None:
                raw["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
            host.put(raw)
        elif raw.get("kind") == "Queue":
            host.put({**raw, "status": {}})
    profile: Any = load_profile(LAB).profile
    host.put(cb.kai_scheduler(),
             {"apiVersion": "kai.scheduler/v1", "kind": "Config",
              "metadata": {"name": "kai-config"}, "spec": {"admission": {"gpuSharing": True}}},
             *(vb.control_plane_pod(team) for team in profile.teams))
    return host


def _vclusters(host: cb.ClusterApi) -> dict[str, VClusterApi]:
    profile: Any = load_profile(LAB).profile
    lab = SimpleNamespace(host=host, unsynced=set())
    nodes = [o for (kind, _ns, _n), o in host.objects.items() if kind == "Node"]
    teams = {}
    for team in profile.teams:
        api = VClusterApi(team.name, VERSION, FakeClock())
        api.put(*nodes, vb.coredns(team),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
        api.webhook = _syncer([lab], team)  # type: ignore[list-item]
        teams[team.name] = api
    return teams


def _refused(credentials_of: str, server_of: str) -> FakeApi:
    probe = FakeApi(f"{credentials_of}-on-{server_of}")
    probe.fail["list_objects"] = AdapterError(f"list Namespace at {server_of}: 401 Unauthorized")
    return probe


def _verify_through(monkeypatch: pytest.MonkeyPatch, host: cb.ClusterApi,
                    teams: dict[str, VClusterApi]) -> None:
    @contextmanager
    def clients(_lab: str, _folder: Path, _members: list[str]) -> Iterator[Any]:
        yield host, teams.__getitem__, _refused

    monkeypatch.setattr("gpulab.stacks.vcluster_kai.run.lab_clients", clients)


def _results(output: str) -> dict[tuple[str, str], dict[str, Any]]:
    report = json.loads(output)
    return {(r["id"], r["tenant"]): r for r in report["results"]}


@pytest.mark.slow
def test_verify_shares_the_gpu_found_between_the_three_teams(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        host = _host_after_up(cluster)
        teams = _vclusters(host)
        FakeKai(host, controllers=True).attach()
        _verify_through(monkeypatch, host, teams)
        result = CliRunner().invoke(app, ["verify", "--name", LAB, "-o", "json"])
    assert result.exit_code == 0, result.output
    results = _results(result.stdout)
    assert {r["status"] for r in results.values()} == {"pass"}, [
        (k, r["reason"]) for k, r in results.items() if r["status"] != "pass"]
    for team in TEAMS:
        # the write-up: each team's 0.33 pod on the one physical GPU, its queue 330m allocated
        sharing = results[("KAI-05", team)]["evidence"]
        assert "Running together on gpu-node-1 (GPU group gpu-node-1-gpu0)" in sharing
        assert "gpu-fraction 0.33 each" in sharing
        assert f"Queue {team} allocated nvidia.com/gpu 330m" in sharing
        assert "gpu-node-1 (NVIDIA-L40S, 1 x nvidia.com/gpu allocatable)" in \
            results[("KAI-02", team)]["evidence"]
        assert "0.99 of 1 GPU(s)" in results[("KAI-07", team)]["evidence"]
        # each team lists only its own pods: the other teams' share pods are not there
        assert "none of the verify pods of the other teams" in \
            results[("KAI-08", team)]["evidence"]
    queues = {n: o.get("status") for (kind, _ns, n), o in host.objects.items() if kind == "Queue"}
    assert queues["ml-org"] == {"allocated": {"nvidia.com/gpu": "990m"}}  # the three shares
    assert not [n for (kind, _ns, n) in teams["team-nlp"].objects if kind == "Pod"
                and n.startswith("gpu-")]  # verify removed its pods from the vCluster


@pytest.mark.slow
def test_verify_sizes_its_pods_from_the_gpus_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the profile's simulated pool has one GPU per node; this cluster's node has four: the
    # capacity probe asks for the four found (and is skipped: the team's limit of 1 cannot
    # hold it), and the pods the teams share land on one of the four
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        host = _host_after_up(cluster, gpus=4)
        teams = _vclusters(host)
        FakeKai(host, controllers=True).attach()
        _verify_through(monkeypatch, host, teams)
        result = CliRunner().invoke(app, ["verify", "--name", LAB, "-o", "json", "--keep"])
    results = _results(result.stdout)
    assert results[("KAI-05", "team-nlp")]["status"] == "pass"
    assert "4 x nvidia.com/gpu allocatable" in results[("KAI-02", "team-nlp")]["evidence"]
    skipped = results[("KAI-07", "team-nlp")]
    assert skipped["status"] == "skip" and "(4 x nvidia.com/gpu)" in skipped["reason"]
    assert "gpu-over-capacity" not in {n for (k, _ns, n) in teams["team-nlp"].objects
                                       if k == "Pod"}


@pytest.mark.slow
def test_verify_asks_a_pool_of_several_nodes_more_than_its_largest_node_has(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the multi-node shape's GPU nodes have 8, 4 and 2 GPUs; with the teams' limits lifted the
    # capacity probe asks 9 (one more than the largest), which KAI's MaxNodePoolResources
    # pre-filter refuses on every shard (tests/cluster/fake_kai.py, kai_wire). Sized as
    # 3 nodes x the least (2), it asked 6, which KAI places on the 8-GPU node: a false fail.
    from gpulab import core
    from gpulab.paths import lab_dir
    from gpulab.profile.load import builtin_profiles
    from gpulab.providers import ClusterChoice

    text = builtin_profiles()["vcluster-kai"].read_text()
    unlimited = tmp_path / "unlimited.yaml"
    unlimited.write_text(text.replace("gpu: {quota: 0.33, limit: 1,", "gpu: {quota: 0.33, "
                                      "limit: -1,"))
    loaded = load_profile(str(unlimited))
    with ExistingCluster(tmp_path, shape="multi-node").running(TEAMS) as cluster:
        result = core.up(loaded.profile, LAB, lambda _e: None,
                         adapters=cluster.adapters(lab_dir(LAB)), sleep=lambda _s: None,
                         cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
        assert result.ok, [str(f.error) for f in result.failures]
        core.record_profile(LAB, loaded)
        host = _host_after_up(cluster)
        teams = _vclusters(host)
        FakeKai(host, controllers=True).attach()
        _verify_through(monkeypatch, host, teams)
        result = CliRunner().invoke(app, ["verify", "--name", LAB, "-o", "json"])
    results = _results(result.stdout)
    for team in TEAMS:
        capacity = results[("KAI-07", team)]
        assert capacity["status"] == "pass", capacity["reason"]
        assert capacity["evidence"].startswith(
            "gpu-over-capacity (9 x nvidia.com/gpu) stays Pending: no node of the pool has more "
            "than 8 GPU(s); KAI (pod condition): Scheduling conditions were not met for pod "
            f"vcluster-{team}/gpu-over-capacity-x-gpulab-verify-x-{team}: MaxNodePoolResources:")
        assert results[("KAI-05", team)]["status"] == "pass"


@pytest.mark.slow
def test_kubeconfig_prints_paths_of_the_saved_files(tmp_path: Path) -> None:
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
    folder = tmp_path / "home" / "labs" / LAB
    for member in ("management", "team-nlp"):
        result = CliRunner().invoke(app, ["kubeconfig", member, "--name", LAB])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str(folder / f"{member}.kubeconfig")
        assert stat.S_IMODE((folder / f"{member}.kubeconfig").stat().st_mode) == 0o600
        assert "token" not in result.output
    unknown = CliRunner().invoke(app, ["kubeconfig", "team-x", "--name", LAB])
    assert unknown.exit_code == 2 and "unknown tenant 'team-x'" in unknown.output


@pytest.mark.slow
def test_logs_reads_only_what_gpulab_created_without_docker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab import core

    monkeypatch.setattr(core, "connect_runtime", _no_docker)
    with ExistingCluster(tmp_path, kai=True).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        before = len(cluster.host.calls())
        target = tmp_path / "bundle"
        result = CliRunner().invoke(app, ["logs", str(target), "--name", LAB])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str(target)
        calls = cluster.host.calls()[before:]
    assert calls and all(method == "GET" for method, _p in calls), calls
    reads = [path.split("?")[0] for _m, path in calls]
    files = {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()}
    assert "management/namespaces/vcluster-team-nlp/pods.json" in files
    assert "management/queues.json" in files
    queues = json.loads((target / "management/queues.json").read_text())
    assert sorted(q["metadata"]["name"] for q in queues) == ["ml-org", *sorted(TEAMS)]
    # KAI was there before: its namespace is not gpulab's, so it is not read
    assert not any("kai-scheduler" in f for f in files)
    assert not [p for p in reads if "/namespaces/kai-scheduler" in p]
    assert not [p for p in reads if p.rstrip("/").endswith(("/pods", "/events", "/nodes"))
                and "/namespaces/" not in p], "a cluster-wide list"
    assert not [p for p in reads if "/secrets" in p]
    owned = json.loads((target / "management/owned.json").read_text())
    assert {o["name"] for o in owned if o.get("kind") == "Namespace"} == {
        f"vcluster-{t}" for t in TEAMS}
    assert "token" not in "".join(p.read_text() for p in target.rglob("*") if p.is_file())


@pytest.mark.slow
def test_labs_names_the_existing_cluster_and_its_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab import core

    monkeypatch.setattr(core, "read_docker", _no_docker)
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        listed = CliRunner().invoke(app, ["labs", "-o", "json"])
        table = CliRunner().invoke(app, ["labs"])
        server = cluster.host.url
    assert listed.exit_code == 0, listed.output
    row = json.loads(listed.stdout)["labs"][0]
    assert row["state"] == "ready"
    assert row["cluster"] == {"provider": "existing", "server": server, "context": "microk8s"}
    assert f"{server}(contextmicrok8s)" in "".join(table.stdout.split())  # wrapped to the width
    assert "token" not in listed.output + table.output
    # the cluster gone: the lab's state says so, rather than ready
    after = CliRunner().invoke(app, ["labs", "-o", "json"])
    assert json.loads(after.stdout)["labs"][0]["state"] == "unreachable"


def test_labs_leaves_a_password_in_the_server_url_out() -> None:
    from gpulab import lab_record, providers

    lab_record.record_cluster("lab-pw", {"provider": "existing",
                                         "server": "https://admin:s3cret@203.0.113.9:6443",
                                         "context": "prod"})
    assert providers.for_lab("lab-pw").where("lab-pw")["server"] == "https://203.0.113.9:6443"


def test_labs_asks_the_existing_clusters_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three labs in existing clusters: their APIs are asked together (each ask waits at a
    barrier the three must reach), so three unreachable clusters cost one timeout, not three."""
    import threading

    from gpulab import core, lab_record
    from gpulab.providers.existing import ExistingProvider

    labs = ["lab-a", "lab-b", "lab-c"]
    for lab in labs:
        lab_record.record_cluster(lab, {"provider": "existing", "server": f"https://{lab}:6443",
                                        "context": lab})
    barrier = threading.Barrier(len(labs), timeout=10)
    asked: list[str] = []

    def state(_self: Any, lab: str, *_args: Any, **_kwargs: Any) -> str:
        asked.append(lab)
        barrier.wait()  # BrokenBarrierError if the labs were asked one at a time
        return "unreachable" if lab == "lab-b" else "partial"

    monkeypatch.setattr(core, "read_docker", _no_docker)
    monkeypatch.setattr(ExistingProvider, "lab_state", state)
    listed = CliRunner().invoke(app, ["labs", "-o", "json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(asked) == labs
    assert {r["name"]: r["state"] for r in json.loads(listed.stdout)["labs"]} == {
        "lab-a": "partial", "lab-b": "unreachable", "lab-c": "partial"}


def _no_docker(*_a: Any, **_k: Any) -> Any:
    from gpulab.errors import HostError

    raise HostError("no Docker engine here (the test)")


# --------------------------------------------------------------------------- port-forward


def _vcluster_pod(cluster: ExistingCluster, team: str, name: str, created: str) -> None:
    import kmock

    cluster.host.put(kmock.resource("v1/pods"), {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": f"vcluster-{team}", "creationTimestamp": created,
                     "labels": {"app": "vcluster", "release": team}},
        "spec": {"containers": [{"name": "syncer", "image": "vcluster"}]},
        "status": {"phase": "Running"}})


def _through_kmock(cluster: ExistingCluster, team: str) -> tuple[Any, Any, list[str]]:
    """(kube, dial, pods dialled): `dial` opens a TCP stream to the team's kmock vCluster, as
    pods/portforward would to the vCluster pod's 8443 (kmock cannot upgrade to a port-forward
    WebSocket); `kube` reads the forwarded kubeconfig, checks it names 127.0.0.1, and talks
    plain HTTP to that port (kmock serves no TLS): every byte crosses the LocalForwarder."""
    import socket
    from urllib.parse import urlsplit

    import yaml

    from gpulab.adapters.kube import KubeClient, RetryPolicy

    target = urlsplit(cluster.vclusters[team].url)
    dialled: list[str] = []

    def dial(pod: str) -> socket.socket:
        dialled.append(pod)
        return socket.create_connection((target.hostname, target.port), timeout=5)

    def kube(path: Path) -> KubeClient:
        if path.name == "management.kubeconfig":
            return KubeClient(path, retry=RetryPolicy.disabled(), request_timeout=5)
        server = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("https://127.0.0.1:"), server
        return KubeClient(host=server.replace("https://", "http://"),
                          retry=RetryPolicy.disabled(), request_timeout=5)

    return kube, dial, dialled


@pytest.mark.slow
def test_port_forward_reaches_the_vcluster_through_a_local_port(tmp_path: Path) -> None:
    import yaml

    from gpulab import core

    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        _vcluster_pod(cluster, "team-nlp", "team-nlp-0-old", "2026-12-01T10:00:00Z")
        _vcluster_pod(cluster, "team-nlp", "team-nlp-0", "2026-12-03T10:00:00Z")
        kube, dial, dialled = _through_kmock(cluster, "team-nlp")
        writes = len(cluster.writes())
        saved = (tmp_path / "home" / "labs" / LAB / "team-nlp.kubeconfig").read_text()
        forward = core.port_forward(LAB, load_profile(LAB).profile, "team-nlp", port=0,
                                    kube=kube, dial=dial)
        try:
            assert forward.version == VERSION  # the team's vCluster answered through it
            assert forward.pod == "team-nlp-0" and dialled == ["team-nlp-0"]  # the newest
            written = yaml.safe_load(forward.kubeconfig.read_text())
            assert stat.S_IMODE(forward.kubeconfig.stat().st_mode) == 0o600
            assert written["clusters"][0]["cluster"]["server"] == forward.server == \
                f"https://127.0.0.1:{forward.forwarder.port}"
            kept = yaml.safe_load(saved)
            assert written["users"] == kept["users"]  # credentials and CA as saved
            again = kube(forward.kubeconfig)
            assert again.list_objects("v1", "Node")[0]["metadata"]["name"] == "gpu-node-1"
            again.close()
        finally:
            forward.close()
        assert not forward.kubeconfig.exists()
        assert (tmp_path / "home" / "labs" / LAB / "team-nlp.kubeconfig").read_text() == saved
        assert cluster.writes()[writes:] == []  # the host only read


@pytest.mark.slow
def test_port_forward_refuses_kind_labs_and_the_management_cluster(tmp_path: Path) -> None:
    from gpulab import core, lab_record
    from gpulab.errors import UsageError

    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        with pytest.raises(UsageError, match="the management cluster is the cluster you gave"):
            core.port_forward(LAB, load_profile(LAB).profile, "management", port=0)
    lab_record.record_cluster("kind-lab", {})
    with pytest.raises(UsageError, match="runs on kind, which publishes each vCluster"):
        core.port_forward("kind-lab", load_profile(LAB).profile, "team-nlp", port=0)
    result = CliRunner().invoke(app, ["kubeconfig", "team-nlp", "--name", LAB, "--port", "9"])
    assert result.exit_code == 2 and "--port goes with --port-forward" in result.output


@pytest.mark.slow
def test_kubeconfig_port_forward_waits_until_ctrl_c_and_removes_only_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile
    import threading
    import time

    from gpulab import core

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        _vcluster_pod(cluster, "team-nlp", "team-nlp-0", "2026-12-03T10:00:00Z")
        kube, dial, _dialled = _through_kmock(cluster, "team-nlp")
        real = core.port_forward
        monkeypatch.setattr(core, "port_forward",
                            lambda *a, **k: real(*a, **k, kube=kube, dial=dial))
        seen: list[str] = []
        sleep = time.sleep

        def user_waits_then_presses_ctrl_c(seconds: float) -> None:
            if threading.current_thread() is not threading.main_thread():
                sleep(seconds)
                return
            (path,) = tmp_path.glob("gpulab-vcluster-kai-team-nlp-*.kubeconfig")
            client = kube(path)  # what the user's kubectl does meanwhile
            seen.append(client.server_version())
            client.close()
            raise KeyboardInterrupt

        monkeypatch.setattr(time, "sleep", user_waits_then_presses_ctrl_c)
        result = CliRunner().invoke(app, ["kubeconfig", "team-nlp", "--name", LAB,
                                          "--port-forward", "--port", "0"])
    assert result.exit_code == 130, result.output
    printed = result.stdout.strip()
    assert printed.startswith(str(tmp_path / "gpulab-vcluster-kai-team-nlp-"))
    assert seen == [VERSION]
    assert "forwarding https://127.0.0.1:" in result.output and "Ctrl-C stops" in result.output
    assert f"removed {printed}" in result.output
    assert not list(tmp_path.glob("gpulab-vcluster-kai-*.kubeconfig"))
    assert (tmp_path / "home" / "labs" / LAB / "team-nlp.kubeconfig").is_file()


# --------------------------------------------------------------------------- up by port-forward


def test_expose_is_chosen_from_what_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.providers.existing import facts as existing

    monkeypatch.setattr(existing, "node_reachable", lambda address: address == "10.0.0.5")
    assert existing._expose("auto", True, None, "10.0.0.5")[0] == "LoadBalancer"
    assert existing._expose("auto", False, None, "10.0.0.5") == (
        "NodePort", "node address 10.0.0.5 answers from this machine")
    assert existing._expose("auto", False, "203.0.113.7", "10.0.0.6")[0] == "NodePort"
    chosen, why = existing._expose("auto", False, None, "10.0.0.6")
    assert chosen == "port-forward" and "node address 10.0.0.6 does not answer" in why
    assert existing._expose("auto", False, None, None)[0] == "port-forward"
    assert existing._expose("port-forward", True, None, "10.0.0.5")[0] == "port-forward"


def test_a_node_answers_when_it_accepts_or_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from gpulab.providers.existing import facts as existing

    monkeypatch.undo()  # the conftest's stand-in: the real probe here
    probe = existing.node_reachable
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    assert probe("127.0.0.1", port, timeout=2)
    listening.close()
    assert probe("127.0.0.1", port, timeout=2)  # refused: the host answered

    def silent(*_a: Any, **_k: Any) -> socket.socket:
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    assert not probe("10.0.0.5", timeout=0.1)


def _pods_of_vclusters(cluster: ExistingCluster) -> None:
    for team in TEAMS:
        _vcluster_pod(cluster, team, f"{team}-0", "2026-12-03T10:00:00Z")


def _dial_kmock(cluster: ExistingCluster, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """pods/portforward played by a TCP connection to the team's kmock vCluster."""
    import socket
    from urllib.parse import urlsplit

    dialled: list[str] = []

    def pod_port(_host: Any, pod: str, namespace: str, port: int) -> socket.socket:
        assert port == 8443  # the vCluster pod's (render.VCLUSTER_POD_PORT)
        dialled.append(f"{namespace}/{pod}")
        url = urlsplit(cluster.vclusters[namespace.removeprefix("vcluster-")].url)
        return socket.create_connection((url.hostname, url.port), timeout=5)

    monkeypatch.setattr("gpulab.providers.existing.forward._pod_port", pod_port)
    return dialled


def _plain_http(cluster: ExistingCluster) -> Any:
    """Clients as gpulab makes them, except that kmock speaks HTTP: a kubeconfig naming
    https://127.0.0.1:PORT (a forward) is reached at http://127.0.0.1:PORT, the rest as kmock's
    clients are."""
    import yaml

    from gpulab.adapters.kube import KubeClient, RetryPolicy

    def kube(path: Path) -> Any:
        server = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"]
        if server.startswith("https://127.0.0.1:"):
            return KubeClient(host=server.replace("https://", "http://"),
                              retry=RetryPolicy.disabled(), request_timeout=5)
        return cluster.client(path)

    return kube


@pytest.mark.slow
def test_up_without_a_reachable_node_goes_by_port_forward(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reachable: list[bool]) -> None:
    import yaml

    from gpulab import core, lab_record
    from gpulab.paths import lab_dir
    from gpulab.providers.base import ClusterChoice
    from tests.existing.test_existing import _profile

    reachable[0] = False
    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        _pods_of_vclusters(cluster)
        dialled = _dial_kmock(cluster, monkeypatch)
        adapters = cluster.adapters(lab_dir(LAB))
        adapters = type(adapters)(**{**adapters.__dict__, "kube": _plain_http(cluster)})
        result = core.up(_profile(), LAB, lambda _e: None, adapters=adapters,
                         sleep=lambda _s: None,
                         cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
        assert result.ok, [str(f.error) for f in result.failures]
        core.record_profile(LAB, load_profile(LAB))
        values = cluster.releases[("vcluster-team-nlp", "team-nlp")].values
        service = values["controlPlane"]["service"]
        assert service["spec"] == {"type": "ClusterIP"} and "httpsNodePort" not in service
        assert values["exportKubeConfig"]["server"] == "https://127.0.0.1:31443"
        saved = yaml.safe_load((lab_dir(LAB) / "team-nlp.kubeconfig").read_text())
        assert saved["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:31443"
        record = lab_record.read(LAB)
        assert record is not None and record.cluster["expose"] == "port-forward"
        # up's own checks of each vCluster (its API, its GPU node) went through forwards
        assert {d.split("/")[0] for d in dialled} == {f"vcluster-{t}" for t in TEAMS}
        assert not list(tmp_path.glob("gpulab-forward-*"))

        monkeypatch.setattr(core, "_status_client", _plain_http(cluster))
        status = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
        assert status.exit_code == 0, status.output
        teams = json.loads(status.stdout)["tenants"]
        assert teams["team-nlp"]["version"] == VERSION, teams["team-nlp"]  # via a forward
        assert "gpu-node-1" in teams["team-nlp"]["nodes"]

        dialled.clear()
        monkeypatch.setattr("gpulab.stacks.vcluster_kai.run._kube_client", _plain_http(cluster))
        checked = CliRunner().invoke(app, ["verify", "--name", LAB, "--tc", "KAI-01,KAI-02",
                                           "-o", "json"])
        assert checked.exit_code == 0, checked.output
        results = _results(checked.stdout)
        import re

        for team in TEAMS:  # each vCluster answered at a local forward's port
            assert re.match(rf"http://127\.0\.0\.1:\d+ answered /version {VERSION}",
                            results[("KAI-01", team)]["evidence"]), results[("KAI-01", team)]
            assert results[("KAI-02", team)]["status"] == "pass"
        assert {d.split("/")[0] for d in dialled} == {f"vcluster-{t}" for t in TEAMS}

        dialled.clear()  # logs reads each vCluster through a forward too
        record = lab_record.read(LAB)
        assert record is not None
        bundle = core.collect_logs(LAB, tmp_path / "bundle", core.lab_provider(LAB), _profile(),
                                   tar=False, kube=_plain_http(cluster))
        assert "gpu-node-1" in (bundle / "clusters/team-nlp/nodes.yaml").read_text()
        assert not (bundle / "errors.txt").exists()
        assert {d.split("/")[0] for d in dialled} == {f"vcluster-{t}" for t in TEAMS}
        forwarded = core.lab_forwarded(LAB)
    assert forwarded


def test_up_says_how_to_reach_each_team_by_port_forward(tmp_path: Path) -> None:
    from gpulab import lab_record
    from gpulab.cli.up import next_steps

    lab_record.record_cluster(LAB, {"provider": "existing", "expose": "port-forward"})
    text = next_steps(load_profile(LAB).profile, LAB)
    assert f"gpulab kubeconfig TEAM --name {LAB} --port-forward" in text
    assert "team-nlp 127.0.0.1:31443, team-vision 127.0.0.1:31444, team-recommender " \
           "127.0.0.1:31445" in text


def test_kubeconfig_of_a_port_forward_team_says_it_answers_only_while_forwarded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab import core, lab_record
    from gpulab.paths import lab_dir

    lab_record.record_cluster(LAB, {"provider": "existing", "expose": "port-forward"})
    core.record_profile(LAB, load_profile(LAB))
    lab_dir(LAB).mkdir(parents=True, exist_ok=True)
    for member in ("management", "team-nlp"):
        (lab_dir(LAB) / f"{member}.kubeconfig").write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
            "'https://127.0.0.1:31443'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n"
            "- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n")
    target = lab_dir(LAB).parent / "user.kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(target))
    note = (f"note: team-nlp's vCluster is reached by port-forward: its kubeconfig answers only "
            f"while `gpulab kubeconfig team-nlp --name {LAB} --port-forward` runs")
    for extra in ([], ["--merge"]):
        result = CliRunner().invoke(app, ["kubeconfig", "team-nlp", "--name", LAB, *extra])
        assert result.exit_code == 0, result.output
        assert note in " ".join(result.stderr.split())
    management = CliRunner().invoke(app, ["kubeconfig", "management", "--name", LAB])
    assert management.exit_code == 0 and "port-forward" not in management.stderr
    lab_record.record_cluster(LAB, {"provider": "existing", "expose": "LoadBalancer"})
    reached = CliRunner().invoke(app, ["kubeconfig", "team-nlp", "--name", LAB])
    assert reached.exit_code == 0 and reached.stderr == ""


def test_kamaji_hami_refuses_port_forward(tmp_path: Path) -> None:
    # its tenants' workers join each control plane at its LoadBalancer address: a forward
    # through this machine is no address for them
    from gpulab.errors import HostError
    from tests.existing.test_kamaji_existing import TENANTS as TENANT_NAMES
    from tests.existing.test_kamaji_existing import KamajiCluster, _profile
    from tests.existing.test_kamaji_existing import _up as kamaji_up

    with KamajiCluster(tmp_path).running(TENANT_NAMES) as cluster, \
            pytest.raises(HostError, match=r"cluster\.expose is port-forward: kamaji-hami "
                                           r"exposes each control plane as a LoadBalancer"):
        kamaji_up(cluster, _profile(expose="port-forward"))


def _port_forward_release(team: int = 0) -> Any:
    from gpulab.providers.existing import port_url
    from gpulab.stacks.vcluster_kai import render as kr

    profile: Any = load_profile(LAB).profile
    member = profile.teams[team]
    url = port_url(kr.team_port(member), "port-forward", None)  # what the provider answers
    expose = kr.ExistingExpose("port-forward", None, LAB, {member.name: str(url)})
    return kr.vcluster_release(profile, member, expose)


def test_port_forward_values_are_the_charts_own() -> None:
    from tests.vcluster_kai.test_render import validate_vcluster_values

    release = _port_forward_release()
    validate_vcluster_values(release.values)  # the pinned chart's closed schema
    assert release.values["exportKubeConfig"] == {"server": "https://127.0.0.1:31443"}


@pytest.mark.helm
def test_a_port_forward_vcluster_has_no_port_outside_the_cluster() -> None:
    """The pinned chart rendered by the real `helm template`: the Service stays ClusterIP, no
    NodePort, labelled for the lab (what `down` and `logs` go by)."""
    from tests.rendered import render as helm_template

    release = _port_forward_release(1)
    objects = helm_template("vcluster", release.name, release.namespace, release.values)
    (service,) = [o for o in objects if o["kind"] == "Service"
                  and o["metadata"]["name"] == release.name]
    assert service["spec"]["type"] == "ClusterIP"
    # the template always writes nodePort (templates/service.yaml:29); 0 is "none" (the chart's
    # default, as with every ClusterIP vCluster)
    assert [(p["name"], p["targetPort"], p.get("nodePort")) for p in service["spec"]["ports"]] \
        == [("https", 8443, 0), ("kubelet", 8443, 0)]
    assert service["metadata"]["labels"]["gpulab.dev/lab"] == LAB


def test_port_forward_without_the_right_to_forward_is_refused_before_anything(
        tmp_path: Path, reachable: list[bool]) -> None:
    from gpulab.errors import HostError

    reachable[0] = False
    with ExistingCluster(tmp_path, denied={("create", "pods")}).running(TEAMS) as cluster:
        before = cluster.state()
        with pytest.raises(HostError, match=r"not allowed to create pods/portforward in "
                                            r"vcluster-team-nlp \(\+2 more\)"):
            _up(cluster, tmp_path)
        assert cluster.state() == before
        reviews = [r for r in cluster.host.requests()
                   if "selfsubjectaccessreviews" in str(r.url.path)]
    asked = [(r.data or {}).get("spec", {}).get("resourceAttributes", {}) for r in reviews]
    assert {"verb": "create", "group": "", "resource": "pods", "namespace": "vcluster-team-nlp",
            "subresource": "portforward"} in asked


@pytest.mark.slow
def test_a_taken_port_is_one_line_exit_4(tmp_path: Path) -> None:
    import socket

    with ExistingCluster(tmp_path).running(TEAMS) as cluster:
        assert _up(cluster, tmp_path).ok
        _vcluster_pod(cluster, "team-nlp", "team-nlp-0", "2026-12-03T10:00:00Z")
        taken = socket.create_server(("127.0.0.1", 0))
        try:
            port = str(taken.getsockname()[1])
            result = CliRunner().invoke(app, ["kubeconfig", "team-nlp", "--name", LAB,
                                              "--port-forward", "--port", port])
        finally:
            taken.close()
    assert result.exit_code == 4, result.output
    assert f"cannot listen on 127.0.0.1:{port}: in use" in result.output
    assert "choose another --port" in result.output
