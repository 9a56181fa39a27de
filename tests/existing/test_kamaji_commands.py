"""kubeconfig, logs and labs on a kamaji-hami lab whose management cluster is a cluster gpulab
did not build (provider existing), each driven through the CLI after a kmock `up`
(tests/existing/kmock_kamaji.py: Kamaji and Helm played, each tenant a kmock API server of its
own). tests/existing/test_existing_commands.py does the same for vcluster-kai."""

from __future__ import annotations

import json
import stat
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.errors import HostError
from tests.existing.kmock_kamaji import LB_ADDRESS, KamajiCluster
from tests.existing.test_kamaji_existing import LAB, TENANTS, _down, _up

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _no_docker(*_a: Any, **_k: Any) -> Any:
    raise HostError("no Docker engine here (the test)")


@pytest.mark.slow
def test_kubeconfig_prints_the_saved_files_and_merges_a_context_down_removes(
        tmp_path: Path) -> None:
    folder = tmp_path / "home" / "labs" / LAB
    user = tmp_path / "user.kubeconfig"
    user.write_text(yaml.safe_dump({  # the user's own context, which gpulab must keep
        "apiVersion": "v1", "kind": "Config", "current-context": "mine",
        "clusters": [{"name": "mine", "cluster": {"server": "https://203.0.113.5:6443"}}],
        "users": [{"name": "mine", "user": {"token": "mine"}}],
        "contexts": [{"name": "mine", "context": {"cluster": "mine", "user": "mine"}}]}))
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        found = cluster.state()
        assert _up(cluster).ok
        asked = len(cluster.host.calls())
        for member in ("management", *TENANTS):
            result = runner.invoke(app, ["kubeconfig", member, "--name", LAB])
            assert result.exit_code == 0, result.output
            assert result.stdout.strip() == str(folder / f"{member}.kubeconfig")
            assert stat.S_IMODE((folder / f"{member}.kubeconfig").stat().st_mode) == 0o600
            assert "token" not in result.output and "admin" not in result.output
            exported = runner.invoke(app, ["kubeconfig", member, "--name", LAB, "--export"])
            assert exported.stdout.strip() == f"export KUBECONFIG={folder}/{member}.kubeconfig"
        # the management kubeconfig is the cluster's, the tenant's its control plane's address
        saved = yaml.safe_load((folder / "management.kubeconfig").read_text())
        assert saved["clusters"][0]["cluster"]["server"] == cluster.host.url
        tenant = yaml.safe_load((folder / "tenant-a.kubeconfig").read_text())
        assert tenant["clusters"][0]["cluster"]["server"] == f"https://{LB_ADDRESS}:6443"
        assert len(cluster.host.calls()) == asked  # printing a path asks no cluster

        unknown = runner.invoke(app, ["kubeconfig", "team-x", "--name", LAB])
        assert unknown.exit_code == 2 and "unknown tenant 'team-x'" in unknown.output
        assert "choose from management, tenant-a, tenant-b" in " ".join(unknown.output.split())
        forward = runner.invoke(app, ["kubeconfig", "tenant-a", "--name", LAB, "--port-forward"])
        assert forward.exit_code == 2, forward.output
        assert "--port-forward reaches an API the lab's stack publishes through the cluster; " \
               "tenant-a of lab 'kamaji-hami' (kamaji-hami) has none" in \
               " ".join(forward.output.split())

        merged = runner.invoke(app, ["kubeconfig", "tenant-a", "--name", LAB, "--merge"])
        assert merged.exit_code == 0, merged.output
        assert merged.stdout.strip() == f"gpulab-{LAB}-tenant-a"
        assert stat.S_IMODE(user.stat().st_mode) == 0o600
        config = yaml.safe_load(user.read_text())
        assert [c["name"] for c in config["contexts"]] == ["mine", f"gpulab-{LAB}-tenant-a"]
        added = next(c for c in config["clusters"] if c["name"] != "mine")
        assert added["cluster"]["server"] == f"https://{LB_ADDRESS}:6443"

        assert not _down(cluster).leftovers
        assert cluster.state() == found
    config = yaml.safe_load(user.read_text())
    assert [c["name"] for c in config["contexts"]] == ["mine"]  # down took only its own
    assert [c["name"] for c in config["clusters"]] == ["mine"]
    assert config["current-context"] == "mine"


@pytest.mark.slow
def test_logs_reads_only_what_gpulab_created_without_docker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "connect_runtime", _no_docker)
    with KamajiCluster(tmp_path, cert_manager=True).running(TENANTS) as cluster:
        assert _up(cluster).ok
        # each tenant's kubeconfig names its LoadBalancer address, made up here: its client
        # goes to the tenant's kmock server (as `status` does in these tests)
        monkeypatch.setattr("gpulab.adapters.kube.KubeClient", _routed(cluster))
        before = len(cluster.host.calls())
        tenant_before = {t: len(cluster.vclusters[t].calls()) for t in TENANTS}
        target = tmp_path / "bundle"
        result = runner.invoke(app, ["logs", str(target), "--name", LAB])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str(target)
        calls = cluster.host.calls()[before:]
        tenant_calls = {t: cluster.vclusters[t].calls()[tenant_before[t]:] for t in TENANTS}
    reads = [path.split("?")[0] for _m, path in calls]
    assert calls and all(method == "GET" for method, _p in calls), calls
    for tenant in TENANTS:
        assert tenant_calls[tenant] and all(m == "GET" for m, _p in tenant_calls[tenant])
    files = {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()}
    assert not (target / "errors.txt").exists(), (target / "errors.txt").read_text()
    # the control planes' pods, with each container's log, in the namespace gpulab made
    pods = json.loads((target / "management/namespaces/tenants/pods.json").read_text())
    assert sorted(p["name"] for p in pods) == sorted(
        f"{t}-6f8c9d7b5-x2k4q" for t in TENANTS)
    assert "management/namespaces/tenants/logs/tenant-a-6f8c9d7b5-x2k4q_kube-apiserver.log" \
        in files
    services = json.loads((target / "management/namespaces/tenants/services.json").read_text())
    assert {s["name"]: s["loadBalancer"] for s in services}["tenant-a"] == {
        "ingress": [{"ip": LB_ADDRESS}]}
    assert "management/namespaces/kamaji-system/pods.json" in files
    # cert-manager was there before: its namespace is not gpulab's, so it is not read
    assert not any("cert-manager" in f for f in files)
    assert not [p for p in reads if "/namespaces/cert-manager" in p]
    assert not [p for p in reads if p.rstrip("/").endswith(("/pods", "/events", "/nodes"))
                and "/namespaces/" not in p], "a cluster-wide list of the management cluster"
    assert not [p for p in reads if "/secrets" in p]  # the tenants' admin kubeconfigs stay
    owned = json.loads((target / "management/owned.json").read_text())
    assert {o["name"] for o in owned if o.get("kind") == "Namespace"} == {
        "kamaji-system", "tenants"}
    # each tenant (a cluster gpulab made) as on kind: its pods, events and nodes (none has
    # joined yet), read through the tenant's own API
    for tenant in TENANTS:
        assert {f"clusters/{tenant}/{n}" for n in ("pods.json", "events.json", "nodes.yaml")} \
            <= files, files
        assert yaml.safe_load((target / f"clusters/{tenant}/nodes.yaml").read_text()) == []
    text = "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    assert "token" not in text and "admin.conf" not in text


def _routed(cluster: KamajiCluster) -> Any:
    """KubeClient, except that a tenant's kubeconfig goes to that tenant's kmock server."""
    from gpulab.adapters.kube import KubeClient, RetryPolicy

    class Routed(KubeClient):
        def __init__(self, path: Any = None, **kwargs: Any) -> None:
            stem = getattr(path, "stem", "")
            if stem in cluster.vclusters:
                kwargs.pop("retry", None)
                kwargs.pop("request_timeout", None)
                super().__init__(host=cluster.vclusters[stem].url,
                                 retry=RetryPolicy.disabled(), request_timeout=5)
            else:
                super().__init__(path, **kwargs)

    return Routed


@pytest.mark.slow
def test_labs_names_the_management_cluster_and_its_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "read_docker", _no_docker)
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        assert _up(cluster).ok
        since = len(cluster.host.calls())
        listed = runner.invoke(app, ["labs", "-o", "json"])
        table = runner.invoke(app, ["labs"])
        server = cluster.host.url
        asked = {(m, p) for m, p in cluster.host.calls()[since:]}
        record = lab_record.read(LAB)
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)["labs"]
    assert row["name"] == LAB and row["state"] == "ready"
    assert row["cluster"] == {"provider": "existing", "server": server, "context": "microk8s"}
    assert record is not None and record.cluster["context"] == "microk8s"
    assert f"{server}(contextmicrok8s)" in "".join(table.stdout.split())  # wrapped to the width
    assert "token" not in listed.output + table.output
    assert asked == {("GET", "/version")}  # labs asks whether it answers, nothing more
    # the management cluster gone: the lab's state says so, rather than ready
    after = runner.invoke(app, ["labs", "-o", "json"])
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout)["labs"][0]["state"] == "unreachable"


@pytest.mark.slow
def test_labs_says_partial_while_a_tenant_has_no_kubeconfig_yet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "read_docker", _no_docker)
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        assert _up(cluster).ok
        (tmp_path / "home" / "labs" / LAB / "tenant-b.kubeconfig").unlink()
        listed = runner.invoke(app, ["labs", "-o", "json"])
    (row,) = json.loads(listed.stdout)["labs"]
    assert row["state"] == "partial", row
