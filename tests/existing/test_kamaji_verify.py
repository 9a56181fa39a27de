"""`gpulab verify` on a kamaji-hami lab whose management cluster is an existing cluster, through
the CLI after a kmock `up` (tests/existing/kmock_kamaji.py), on four shapes of management
cluster: up -> status -> verify (before and after a machine joins) -> down, which leaves the
management cluster exactly as found (and what was there before, exactly as found all along).

The control planes are read from the management cluster through the kubeconfig `up` saved
(lab.json's cluster), each tenant through its saved kubeconfig (its server, the LoadBalancer
address, is made up here: each tenant's client goes to that tenant's kmock server). A joined
machine is what `gpulab join`'s commands leave (tests/existing/kamaji_machines.py: the real HAMi
device plugin's registration), HAMi is kmock_lab's HamiPlayer with the real plugin's part, so
verify's pods are sized from the card the machine registers, not from the profile's mock cards.
TC-08's cross-tenant probe is SIMULATED as in kmock_lab (RejectingClient: kmock authenticates
nobody).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.adapters.kube import RetryPolicy
from gpulab.cli import app
from gpulab.stacks import load_profile
from tests.existing.kamaji_machines import A100, a100, card, hami_on, join_machine
from tests.existing.kmock_kamaji import KamajiCluster, chart_objects
from tests.existing.test_kamaji_existing import LAB, TENANTS, _down, _profile, _up
from tests.kamaji_hami.kmock_lab import RejectingClient

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

L4 = "GPU-0a7d2e55-1b9c-4f3a-8e6d-2c4b9f0e7a13"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _through(monkeypatch: pytest.MonkeyPatch, cluster: KamajiCluster) -> list[str]:
    """verify's clients: the saved management kubeconfig as it is (kmock's address), each
    tenant's kubeconfig to that tenant's kmock server; the cross probe rejects (SIMULATED)."""
    from gpulab.verify.observe import kubeconfig_cross_gateway

    opened: list[str] = []

    def probe(path: Path) -> Any:
        return RejectingClient(path, retry=RetryPolicy.disabled(), request_timeout=5)

    @contextmanager
    def clients(_lab: str, folder: Path, _members: list[str]) -> Iterator[Any]:
        def client(path: Path) -> Any:
            opened.append(path.name)
            return cluster.client(path)

        yield (client(folder / "management.kubeconfig"),
               lambda member: client(folder / f"{member}.kubeconfig"),
               kubeconfig_cross_gateway(lambda m: folder / f"{m}.kubeconfig", probe,
                                        scratch=folder / "verify"))

    monkeypatch.setattr("gpulab.stacks.kamaji_hami.run.lab_clients", clients)
    monkeypatch.setattr(core, "_status_client", cluster.client)
    return opened


def _verify(*extra: str) -> tuple[int, dict[tuple[str, str], dict[str, Any]]]:
    result = CliRunner().invoke(app, ["verify", "--name", LAB, "-o", "json", *extra])
    report = json.loads(result.stdout)
    return result.exit_code, {(r["id"], r["tenant"]): r for r in report["results"]}


@pytest.mark.slow
def test_verify_before_any_machine_joined_says_unknown_and_creates_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        assert _up(cluster).ok
        opened = _through(monkeypatch, cluster)
        started = time.monotonic()
        code, results = _verify()
        assert time.monotonic() - started < 30  # no pod was waited for
        writes = {name: cluster.vclusters[name].writes() for name in TENANTS}
    assert opened[0] == "management.kubeconfig"  # the control planes, from lab.json's cluster
    for tenant in TENANTS:
        tc01 = results[("TC-01", tenant)]
        assert tc01["status"] == "pass", tc01
        assert f"TenantControlPlane tenants/{tenant} Ready" in tc01["evidence"]
        for check in ("TC-02", "TC-03", "TC-04", "TC-05", "TC-06", "TC-07"):
            result = results[(check, tenant)]
            assert result["status"] == "skip", (check, result)
            assert result["reason"].startswith(
                f"unknown, because no machine has joined {tenant} yet (its API lists no node): "
                f"`gpulab join {tenant} --name {LAB}`"), result["reason"]
        assert not [w for w in writes[tenant] if "/pods" in w[1]]  # no GPU pod was created
    assert code == 0


def _put_kamaji(cluster: KamajiCluster) -> None:
    """Kamaji at the pinned tag, installed by someone else before gpulab came: its namespace,
    and what the pinned chart renders (its controller Deployment, CRDs and DataStore)."""
    from gpulab.stacks.kamaji_hami.render import kamaji_release

    release = kamaji_release(_profile())
    cluster.host.namespaces[release.namespace] = {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": release.namespace, "uid": "kamaji-ns-uid"},
        "status": {"phase": "Active"}}
    cluster.host.call(cluster.put_objects, chart_objects(release))


def _put_kai_release(cluster: KamajiCluster) -> None:
    """KAI Scheduler's Helm release, as helm v3.19.2 (the pinned helm) stores it: a Secret
    sh.helm.release.v1.<name>.v<revision> in the release's namespace (pkg/storage/storage.go:35,
    251-253), type helm.sh/release.v1, labelled name/owner/status/version, its `release` the
    release's JSON gzipped and base64-encoded (pkg/storage/driver/secrets.go:216-256,
    util.go:37-53; the fields: pkg/release/release.go:24-39). Its namespace, CRDs, Deployments
    and Config are kmock_cluster's `kai=True` (KAI v0.16.8 as its chart renders them)."""
    import base64
    import gzip

    from tests.existing.kmock_cluster import SECRETS

    release = {"name": "kai-scheduler", "namespace": "kai-scheduler", "version": 1,
               "info": {"status": "deployed", "description": "Install complete"},
               "chart": {"metadata": {"name": "kai-scheduler", "version": "v0.16.8",
                                      "appVersion": "v0.16.8"}},
               "config": {"global": {"gpuSharing": True}}}
    stored = base64.b64encode(gzip.compress(json.dumps(release).encode(), 9)).decode()
    cluster.host.call(cluster.host.put, SECRETS, {
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": "sh.helm.release.v1.kai-scheduler.v1",
                     "namespace": "kai-scheduler",
                     "labels": {"name": "kai-scheduler", "owner": "helm",
                                "status": "deployed", "version": "1"}},
        "data": {"release": base64.b64encode(stored.encode()).decode()}})


def _theirs(state: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """What of `state` was in the cluster before gpulab came (objects and namespaces)."""
    return {"objects": {k: state["objects"].get(k) for k in before["objects"]},
            "namespaces": {k: state["namespaces"].get(k) for k in before["namespaces"]}}


# (shape, KamajiCluster arguments, cluster: settings of the profile)
SHAPES = [
    ("one node, its own LoadBalancer, cert-manager installed",
     {"cert_manager": True}, {}),
    ("three GPU nodes among six, no LoadBalancer, MetalLB allowed",
     {"load_balancer": False, "shape": "multi-node"},
     {"metallb": "allow", "metallb_range": "10.0.1.240-10.0.1.250"}),
    ("Kamaji at the pinned tag already installed",
     {"cert_manager": True, "kamaji": True}, {}),
    ("KAI Scheduler already installed: its namespace, CRDs, operator, Config, Helm release",
     {"kai": True, "kai_release": True}, {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "options", "settings"), SHAPES, ids=[s[0] for s in SHAPES])
def test_up_status_verify_down_on_joined_machines(
        shape: str, options: dict[str, Any], settings: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    options = dict(options)
    kamaji = options.pop("kamaji", False)
    kai_release = options.pop("kai_release", False)
    with KamajiCluster(tmp_path, **options).running(TENANTS) as cluster:
        if kamaji:
            _put_kamaji(cluster)
        if kai_release:
            _put_kai_release(cluster)
        before = cluster.state()
        result = _up(cluster, _profile(**settings) if settings else None)
        assert result.ok, [str(f.error) for f in result.failures]
        if kamaji:
            assert ("kamaji-system", "kamaji") not in cluster.releases  # reused, not installed
        if kai_release:  # the shape is what it says, and none of it is the lab's
            kai = [k for k in before["objects"] if "kai" in k or "scheduling.run.ai" in k]
            for name in ("'kai-operator'", "'queues.scheduling.run.ai'", "'kai-config'",
                         "'sh.helm.release.v1.kai-scheduler.v1'"):
                assert any(name in k for k in kai), (name, kai)
            assert "kai-scheduler" in before["namespaces"]
            record = lab_record.read(LAB)
            assert record is not None
            assert not [o for o in record.owned if "kai" in str(o.get("name"))
                        or "kai" in str(o.get("namespace"))], record.owned
        _through(monkeypatch, cluster)
        status = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
        assert status.exit_code == 0, status.output
        assert json.loads(status.stdout)["tenants"]["tenant-a"]["workers"] == []

        profile: Any = load_profile("kamaji-hami").profile
        spec_a, spec_b = profile.tenants
        # the machines: an A100 80GB joins tenant-a; two L4s join tenant-b, its kubelet a patch
        # behind the control plane (same minor, as gpulab join asks)
        join_machine(cluster, spec_a, LAB, node="gpu-7",
                     cards=[a100()])
        join_machine(cluster, spec_b, LAB, node="l4-box", kubelet="v1.36.2",
                     cards=[card(L4, "NVIDIA L4", 23034), card(L4[:-2] + "99", "NVIDIA L4",
                                                               23034, index=1)])
        status = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
        assert json.loads(status.stdout)["tenants"]["tenant-b"]["workers"] == [
            {"name": "l4-box", "state": "joined", "ip": ""}]
        recording = tmp_path / "recording"
        with hami_on(cluster, [spec_a, spec_b]):
            code, results = _verify("--record", str(recording))
        leftovers = {t: cluster.vclusters[t].names(_pods(), "gpulab-verify") for t in TENANTS}

        failed = {k: r["reason"] for k, r in results.items() if r["status"] != "pass"}
        assert not failed, (shape, failed)
        assert code == 0
        # sized from the card each tenant's machine registers: a quarter of 81920 MiB and of
        # 23034 MiB, rounded down to 1000 (docs/checks.md), 30 cores each
        assert (f"Running together on gpu-7, card {A100}: 60000/81920 MiB and 90/100 cores"
                in results[("TC-05", "tenant-a")]["evidence"])
        assert (f"Running together on l4-box, card {L4}: 15000/23034 MiB and 90/100 cores"
                in results[("TC-05", "tenant-b")]["evidence"])
        assert (f"gpu-7 registers 1 card(s) with HAMi: {A100} NVIDIA A100-SXM4-80GB 81920 MiB "
                f"100 cores split 10; nvidia.com/gpu=10" in results[("TC-04", "tenant-a")][
                    "evidence"])
        assert "l4-box Ready (v1.36.2)" in results[("TC-02", "tenant-b")]["evidence"]
        assert leftovers == {"tenant-a": [], "tenant-b": []}  # verify removed its pods
        # what was there before (KAI, cert-manager, Kamaji, the nodes...) untouched by up,
        # status and verify, not only once down is done
        assert _theirs(cluster.state(), before) == _theirs(before, before)
        # the recording keeps how the tenants' workers came: a replay judges the same
        replay = CliRunner().invoke(app, ["verify", "--replay", str(recording), "-o", "json"])
        replayed = {(r["id"], r["tenant"]): r for r in json.loads(replay.stdout)["results"]}
        assert {k: (r["status"], r["evidence"]) for k, r in replayed.items()} == {
            k: (r["status"], r["evidence"]) for k, r in results.items()}
        assert json.loads((recording / "state-tenant-a.json").read_text())["state"][
            "workers"] == "machines"

        teardown = _down(cluster)
        assert not teardown.leftovers, teardown.leftovers
        assert cluster.state() == before  # the management cluster as found


def _pods() -> Any:
    from tests.kamaji_hami.kmock_lab import PODS

    return PODS


@pytest.mark.slow
def test_containers_workers_are_judged_as_on_kind(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # cluster.workers: containers: the tenants' workers are the kind lab's kindest/node
    # containers with HAMi's mock GPUs (tests/existing/test_kamaji_containers.py builds them);
    # their control planes and tenants look as on kind, which kmock_lab plays: verify judges
    # the profile's workers and mock cards (and completes the mock plugin's binds)
    import shutil

    from gpulab import core, lab_record
    from gpulab.paths import lab_dir
    from gpulab.stacks.kamaji_hami import run
    from tests.kamaji_hami.kmock_lab import KmockLab

    profile = _profile(workers="containers")
    folder = lab_dir(LAB)
    folder.mkdir(parents=True)
    with KmockLab(profile, tmp_path) as lab:
        for name in ("management", *TENANTS):
            shutil.copy(lab.kubeconfig(name), folder / f"{name}.kubeconfig")
        lab_record.record_cluster(LAB, {"provider": "existing", "server": lab.management.url,
                                        "context": "management"})
        # the provider lab.json names answers how the workers come (its LabCluster)
        assert run.workers_of(core.lab_cluster(LAB, profile)) == ""
        assert run.workers_of(core.lab_cluster(LAB, _profile())) == "machines"  # the default
        gateways = lab.gateways()

        @contextmanager
        def clients(_lab: str, _folder: Path, _members: list[str]) -> Iterator[Any]:
            yield gateways.management, gateways.tenant, gateways.cross

        monkeypatch.setattr("gpulab.stacks.kamaji_hami.run.lab_clients", clients)
        report = core.verify(profile, LAB, checks=None, keep=False)
    failed = {(r.id, r.tenant): r.reason for r in report.results if r.status != "pass"}
    assert not failed, failed
    st = report.state.tenant("tenant-a")  # type: ignore[union-attr]
    assert st is not None and st.workers == ""
    tc04 = next(r for r in report.results if r.id == "TC-04" and r.tenant == "tenant-a")
    assert "gpulab-kamaji-hami-tenant-a-worker advertises" in tc04.evidence
    assert "GPU-MOCK-0" in tc04.evidence  # the profile's mock card


# --------------------------------------------------------------------------- the verdicts


def _machines_state(*nodes: dict[str, Any]) -> Any:
    """The write-up's healthy observation, tenant-a's workers a joined machine's node(s)."""
    from tests.existing.kamaji_machines import machine_node
    from tests.kamaji_hami import builders as b

    profile = b._builtin_profile()
    state = b.healthy_state(profile)
    shown = nodes or (machine_node("gpu-7", LAB, "tenant-a", "v1.36.4",
                                    [a100()]),)
    return profile, b.tenant_replace(state, "tenant-a", workers="machines", nodes=tuple(shown))


def _judge(profile: Any, state: Any, check: str) -> Any:
    from tests.kamaji_hami import builders as b

    return b.judge(state, profile, check, "tenant-a")


def test_a_machine_at_another_minor_fails_tc02_with_what_to_install() -> None:
    from tests.existing.kamaji_machines import machine_node

    node = machine_node("gpu-7", LAB, "tenant-a", "v1.35.9",
                         [a100()])
    profile, state = _machines_state(node)
    result = _judge(profile, state, "TC-02")
    assert result.status == "fail"
    assert ("node gpu-7 runs kubelet v1.35.9 but tenant-a is v1.36.4: install kubelet and "
            "kubeadm v1.36.x on that machine") in result.reason


def test_a_gpu_machine_that_registers_no_card_fails_tc04_and_the_gpu_checks_say_unknown(
) -> None:
    from tests.existing.kamaji_machines import machine_node

    node = machine_node("gpu-7", LAB, "tenant-a", "v1.36.4", [])
    del node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    profile, state = _machines_state(node)
    tc04 = _judge(profile, state, "TC-04")
    assert tc04.status == "fail"
    assert ("node gpu-7 is labelled gpu=on but registers no card with HAMi (no "
            "hami.io/node-nvidia-register): HAMi's NVIDIA device plugin has not run on it"
            ) in tc04.reason
    for check in ("TC-03", "TC-05", "TC-06", "TC-07"):
        result = _judge(profile, state, check)
        assert result.status == "skip", (check, result)
        assert result.reason.startswith("unknown, because no node of tenant-a registers a "
                                        "healthy card with HAMi (see TC-04)")


def test_a_cpu_machine_alone_is_no_gpu_worker() -> None:
    from tests.existing.kamaji_machines import machine_node

    node = machine_node("cpu-1", LAB, "tenant-a", "v1.36.4", [])
    del node["metadata"]["labels"]["gpu"]
    del node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    profile, state = _machines_state(node)
    tc04 = _judge(profile, state, "TC-04")
    assert tc04.status == "fail"
    assert tc04.reason.startswith("no node of tenant-a is a GPU worker (cpu-1 neither labelled "
                                  "gpu=on nor registering a card with HAMi)")


def test_a_machine_advertising_other_slices_than_it_registers_fails_tc04() -> None:
    from tests.existing.kamaji_machines import machine_node

    node = machine_node("gpu-7", LAB, "tenant-a", "v1.36.4",
                         [a100()])
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"  # the plugin is gone (kubelet keeps 0)
    profile, state = _machines_state(node)
    tc04 = _judge(profile, state, "TC-04")
    assert tc04.status == "fail"
    assert ("node gpu-7 allocatable nvidia.com/gpu=0, but HAMi registered 1 card(s) of 10 "
            "slice(s) in all") in tc04.reason


def test_the_gpu_pods_are_sized_from_the_first_healthy_card_found() -> None:
    from gpulab.stacks.kamaji_hami import render
    from tests.existing.kamaji_machines import machine_node

    sick = card("GPU-0000", "NVIDIA H100 80GB HBM3", 81559)
    sick["health"] = False
    nodes = [machine_node("b-node", LAB, "tenant-a", "v1.36.4", [card(L4, "NVIDIA L4", 23034)]),
             machine_node("a-node", LAB, "tenant-a", "v1.36.4", [sick])]
    found = render.machine_card(nodes)
    assert found == render.VerifyCard(L4, "NVIDIA L4", 23034, 100, 10, "b-node")
    profile: Any = load_profile("kamaji-hami").profile
    pods = render.verify_objects(profile.tenants[0], found)[1:]
    limits = pods[0]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "5000",
                      "nvidia.com/gpucores": "30"}
    assert pods[0]["metadata"]["annotations"] == {"nvidia.com/use-gpuuuid": L4}
    assert render.machine_card([]) is None


# --------------------------------------------------------------------------- what HAMi registered


def _mig_node(name: str) -> dict[str, Any]:
    """A joined machine whose HAMi device plugin runs in MIG mode: its card registered as
    HAMi v2.10.0's own test writes it (tests/upstream.py), count 7 = its largest profile's
    instance count, which the kubelet advertises."""
    import json as _json

    from tests.existing.kamaji_machines import machine_node
    from tests.upstream import hami_mig_register_annotation

    raw = hami_mig_register_annotation()
    node = machine_node(name, LAB, "tenant-a", "v1.36.4", _json.loads(raw))
    node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = raw
    return node


def test_a_tenant_whose_cards_are_all_in_mig_mode_is_unknown_saying_why() -> None:
    from gpulab.stacks.kamaji_hami import render

    profile, state = _machines_state(_mig_node("mig-box"))
    tc04 = _judge(profile, state, "TC-04")
    assert tc04.status == "pass", tc04
    assert ("mig-box registers 1 card(s) with HAMi: GPU-0 NVIDIA-A100-SXM4-40GB 40960 MiB 100 "
            "cores split 7 MIG (1g.5gb); nvidia.com/gpu=7") in tc04.evidence
    for check in ("TC-03", "TC-05", "TC-06", "TC-07"):
        result = _judge(profile, state, check)
        assert result.status == "skip", (check, result)
        assert result.reason == (
            "unknown, because every healthy card the nodes of tenant-a register with HAMi is "
            "in MIG mode (mig-box GPU-0 (MIG profiles 1g.5gb)): HAMi v2.10.0 grants a pod on a "
            "MIG card a whole MIG instance, the smallest allowed profile whose memory fits "
            "(pkg/device/nvidia/device.go:601-644, 645-659), not the memory and cores it asks, "
            "which TC-05..TC-07 measure; verify created no GPU pod (TC-04 judges the cards' "
            "registration)"), result.reason
    assert render.machine_card(state.tenant("tenant-a").nodes) is None  # so no pod is made


def test_cordoned_and_unhealthy_cards_are_told_apart() -> None:
    from tests.existing.kamaji_machines import machine_node

    cordoned = machine_node("gpu-7", LAB, "tenant-a", "v1.36.4",
                             [a100()])
    cordoned["metadata"]["annotations"]["hami.io/device-cordon"] = f" {A100}, "
    profile, state = _machines_state(cordoned, _mig_node("mig-box"))
    reason = _judge(profile, state, "TC-05").reason
    assert reason.startswith(
        "unknown, because every healthy card the nodes of tenant-a register with HAMi is in "
        f"MIG mode (mig-box GPU-0 (MIG profiles 1g.5gb)) or cordoned (hami.io/device-cordon: "
        f"gpu-7 {A100}): HAMi v2.10.0 grants a pod on a MIG card a whole MIG instance"), reason
    assert "; HAMi's Fit skips a cordoned card (pkg/device/nvidia/device.go:698-713, 726, 735)" \
        in reason

    sick = a100()
    sick["health"] = False
    profile, state = _machines_state(machine_node("gpu-7", LAB, "tenant-a", "v1.36.4", [sick]))
    assert _judge(profile, state, "TC-05").reason.startswith(
        "unknown, because no node of tenant-a registers a healthy card with HAMi (see TC-04)")


@pytest.mark.slow
def test_verify_says_which_registered_cards_its_pods_did_not_exercise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.kamaji_hami.kmock_lab import NODES

    with KamajiCluster(tmp_path, cert_manager=True).running(TENANTS) as cluster:
        assert _up(cluster).ok
        _through(monkeypatch, cluster)
        profile: Any = load_profile("kamaji-hami").profile
        spec_a, spec_b = profile.tenants
        # tenant-a: an A100 machine, and a machine whose plugin runs in MIG mode
        join_machine(cluster, spec_a, LAB, node="gpu-7",
                     cards=[a100()])
        join_machine(cluster, spec_a, LAB, node="mig-box", pod_index=1,
                     cards=json.loads(_mig_node("mig-box")["metadata"]["annotations"][
                         "hami.io/node-nvidia-register"]))
        cluster.vclusters["tenant-a"].call(  # the annotation exactly as upstream writes it
            lambda: cluster.vclusters["tenant-a"].put(NODES, _mig_node("mig-box")))
        join_machine(cluster, spec_b, LAB, node="l4-box",
                     cards=[card(L4, "NVIDIA L4", 23034), card(L4[:-2] + "99", "NVIDIA L4",
                                                               23034, index=1)])
        with hami_on(cluster, [spec_a, spec_b]):
            code, results = _verify()
    assert code == 0, {k: r["reason"] for k, r in results.items() if r["status"] != "pass"}
    tc05a = results[("TC-05", "tenant-a")]
    assert tc05a["status"] == "pass"
    assert tc05a["evidence"].endswith(
        f"Running together on gpu-7, card {A100}: 60000/81920 MiB and 90/100 cores in use; "
        "not exercised by TC-05..TC-07 (unknown whether HAMi shares them), also registered: "
        "mig-box GPU-0 (MIG profiles 1g.5gb)"), tc05a["evidence"]
    assert "GPU-0 NVIDIA-A100-SXM4-40GB 40960 MiB 100 cores split 7 MIG (1g.5gb)" in \
        results[("TC-04", "tenant-a")]["evidence"]
    assert results[("TC-05", "tenant-b")]["evidence"].endswith(
        f"also registered: l4-box {L4[:-2] + '99'} NVIDIA L4")
