"""kamaji-hami on a management cluster gpulab did not build (provider existing), end to end over
HTTP against kmock (tests/existing/kmock_kamaji.py): the read-only preflight and what it refuses,
`up` (real KubeClient, fake helm playing the real pinned charts), `status`, `gpulab join`, and
`down`, which leaves the cluster exactly as `up` found it."""

from __future__ import annotations

import base64
import json
import re
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.errors import HostError
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile
from tests.existing.kmock_kamaji import (
    BOOTSTRAP,
    LB_ADDRESS,
    SECRETS,
    TCPS,
    KamajiCluster,
    KamajiHelm,
)

TENANTS = ["tenant-a", "tenant-b"]
LAB = "kamaji-hami"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


def _profile(**cluster: Any) -> Any:
    from gpulab.profile.base import ClusterSpec

    profile = load_profile("kamaji-hami").profile
    if cluster:
        profile = profile.model_copy(update={"cluster": ClusterSpec(provider="existing",
                                                                    **cluster)})
    return profile


def _up(cluster: KamajiCluster, profile: Any = None) -> Any:
    from gpulab.paths import lab_dir

    result = core.up(profile or _profile(), LAB, lambda _e: None,
                     adapters=cluster.adapters(lab_dir(LAB)), sleep=lambda _s: None,
                     cluster=ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
    if result.built_anything:  # as `gpulab up` does
        core.record_profile(LAB, load_profile("kamaji-hami"))
    return result


def _down(cluster: KamajiCluster) -> Any:
    record = lab_record.read(LAB)
    assert record is not None
    return core.remove_lab(LAB, core.lab_provider(LAB, helm=lambda _p: KamajiHelm(cluster)))


def _owned() -> list[tuple[str, str | None, str]]:
    record = lab_record.read(LAB)
    assert record is not None
    return [(o["type"], o.get("kind"), o["name"]) for o in record.owned]


@pytest.mark.slow
def test_up_status_join_down_leaves_the_cluster_as_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        monkeypatch.setattr(core, "_status_client", cluster.client)  # tenants: kmock servers
        before = cluster.state()
        result = _up(cluster)
        assert result.ok, [str(f.error) for f in result.failures]
        owned = _owned()
        # namespaces first, then cert-manager and Kamaji (their kept CRDs ahead of the
        # release), then the control planes: down goes newest first
        assert owned[:3] == [("object", "Namespace", "cert-manager"),
                             ("object", "Namespace", "kamaji-system"),
                             ("object", "Namespace", "tenants")]
        assert owned.index(("object", "CustomResourceDefinition",
                            "tenantcontrolplanes.kamaji.clastix.io")) \
            < owned.index(("helm-release", None, "kamaji")) \
            < owned.index(("object", "TenantControlPlane", "tenant-a"))
        assert ("object", "CustomResourceDefinition", "certificates.cert-manager.io") in owned
        record = lab_record.read(LAB)
        assert record is not None
        tcp_entry = next(o for o in record.owned if o.get("kind") == "TenantControlPlane")
        assert tcp_entry["wait"] == 300  # Kamaji's finalizer runs before Kamaji goes
        # the DataStore Kamaji's chart brings goes before the release (its finalizer is
        # Kamaji's), after the control planes
        store = next(o for o in record.owned if o.get("kind") == "DataStore")
        assert store == {"type": "object", "apiVersion": "kamaji.clastix.io/v1alpha1",
                         "kind": "DataStore", "name": "default", "namespace": None,
                         "wait": 120}
        from tests.existing.kmock_kamaji import DATASTORES

        assert cluster.host.stored(DATASTORES, None, "default") is not None  # as rendered
        assert owned.index(("helm-release", None, "kamaji")) \
            < owned.index(("object", "DataStore", "default")) \
            < owned.index(("object", "TenantControlPlane", "tenant-a"))
        # the control plane as created: the lab's labels, a LoadBalancer Service, real workers
        tcp = cluster.host.stored(TCPS, "tenants", "tenant-a")
        assert tcp is not None
        assert tcp["metadata"]["labels"]["gpulab.dev/lab"] == LAB
        assert tcp["spec"]["controlPlane"]["service"] == {
            "serviceType": "LoadBalancer",
            "additionalMetadata": {"labels": {"gpulab.dev/lab": LAB,
                                              "app.kubernetes.io/managed-by": "gpulab"}}}
        assert tcp["spec"]["addons"]["kubeProxy"] == {}
        assert [p["path"] for p in tcp["spec"]["kubernetes"]["kubelet"][
            "configurationJSONPatches"]] == ["/cgroupDriver"]
        assert cluster.host.namespaces["tenants"]["metadata"]["labels"]["gpulab.dev/lab"] == LAB
        # the tenant's kubeconfig, saved 0600, reaches the LoadBalancer address
        saved = tmp_path / "home" / "labs" / LAB / "tenant-a.kubeconfig"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        server = yaml.safe_load(saved.read_text())["clusters"][0]["cluster"]["server"]
        assert server == f"https://{LB_ADDRESS}:6443"
        # Calico applied in each tenant with its pod CIDR, ready for the workers to come
        calico = [d for d in cluster.tenant_objects("tenant-a", _daemonsets())
                  if d["metadata"]["name"] == "calico-node"]
        env = {e["name"]: e.get("value") for e in
               calico[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["CALICO_IPV4POOL_CIDR"] == "10.244.0.0/16"

        _status_shows_control_planes_and_no_worker()

        again = _up(cluster)  # resumable: nothing left to do
        assert again.ok and again.all_skipped, [s for s in again.steps if not s.skipped]

        joined = CliRunner().invoke(app, ["join", "tenant-a", "--name", LAB])
        assert joined.exit_code == 0, joined.output
        assert "kubeadm join" in joined.stdout

        teardown = _down(cluster)
        assert not teardown.leftovers, teardown.leftovers
        after = cluster.state()
        assert after == before
        assert cluster.releases == {}
        assert not (tmp_path / "home" / "labs" / LAB).exists()


def _status_shows_control_planes_and_no_worker() -> None:
    status = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
    assert status.exit_code == 0, status.output
    info = json.loads(status.stdout)
    assert info["management"]["cluster"].startswith("existing ")
    assert info["tenants"]["tenant-a"]["control_plane"] == {
        "status": "Ready", "version": "v1.36.4", "endpoint": f"{LB_ADDRESS}:6443"}
    assert "api_error" not in info["tenants"]["tenant-a"]
    assert info["tenants"]["tenant-a"]["workers"] == []  # nothing joined yet
    text = CliRunner().invoke(app, ["status", "--name", LAB])
    assert text.exit_code == 0, text.output
    assert f"tenant-a: control plane Ready v1.36.4 at {LB_ADDRESS}:6443" in text.stdout
    assert "(none joined: gpulab join tenant-a)" in text.stdout


def _daemonsets() -> Any:
    import kmock

    return kmock.resource("apps/v1/daemonsets")


@pytest.mark.slow
def test_cert_manager_already_installed_is_reused_and_kept(tmp_path: Path) -> None:
    with KamajiCluster(tmp_path, cert_manager=True).running(TENANTS) as cluster:
        before = cluster.state()
        plan = CliRunner().invoke(app, ["plan", "-p", "kamaji-hami", "--kubeconfig",
                                        str(cluster.kubeconfig), "-o", "json"])
        assert plan.exit_code == 0, plan.output
        steps = {s["step"]: s for s in json.loads(plan.stdout)}
        reused = steps["management/cert-manager"]["artifacts"][0]
        # the pinned chart's controller image tag, read from its Deployment
        assert reused["kind"] == "reused"
        assert reused["body"] == {"namespace": "cert-manager", "version": "v1.21.1"}
        assert all(m == "GET" or p.startswith("/apis/authorization.k8s.io/")
                   for m, p in cluster.writes())  # plan only reads

        result = _up(cluster)
        assert result.ok, [str(f.error) for f in result.failures]
        assert ("cert-manager", "cert-manager") not in cluster.releases
        names = {name for _t, _k, name in _owned()}
        assert "cert-manager" not in names and "certificates.cert-manager.io" not in names
        assert ("kamaji-system", "kamaji") in cluster.releases
        assert _down(cluster).leftovers == []
        assert cluster.state() == before  # cert-manager, its namespace and CRDs untouched


def test_no_load_balancer_and_metallb_not_allowed_is_refused_before_anything(
        tmp_path: Path) -> None:
    with KamajiCluster(tmp_path, load_balancer=False).running(TENANTS) as cluster:
        before = cluster.state()
        with pytest.raises(HostError, match=r"^preflight: no LoadBalancer: .*cluster\.metallb: "
                                            r"allow"):
            _up(cluster)
        assert cluster.state() == before
        assert lab_record.read(LAB) is None
        assert {m for m, p in cluster.writes()
                if not p.startswith("/apis/authorization.k8s.io/")} == set()


def test_metallb_allowed_without_a_range_is_refused(tmp_path: Path) -> None:
    with KamajiCluster(tmp_path, load_balancer=False).running(TENANTS) as cluster, \
            pytest.raises(HostError, match=r"cluster\.metallb_range is not set"):
        _up(cluster, _profile(metallb="allow"))


@pytest.mark.slow
def test_no_load_balancer_with_metallb_allowed_installs_it_and_down_removes_it(
        tmp_path: Path) -> None:
    from tests.existing.kmock_kamaji import METALLB_KINDS

    profile = _profile(metallb="allow", metallb_range="10.0.0.240-10.0.0.250")
    with KamajiCluster(tmp_path, load_balancer=False).running(TENANTS) as cluster:
        before = cluster.state()
        result = _up(cluster, profile)
        assert result.ok, [str(f.error) for f in result.failures]
        pool = cluster.host.stored(next(iter(METALLB_KINDS)), "metallb-system", "kind-ip-pool")
        assert pool is not None and pool["spec"]["addresses"] == ["10.0.0.240-10.0.0.250"]
        assert pool["metadata"]["labels"]["gpulab.dev/lab"] == LAB
        assert cluster.host.namespaces["metallb-system"]["metadata"]["labels"][
            "gpulab.dev/lab"] == LAB
        owned = _owned()
        # every object of the manifest recorded, ahead of the pool (so removed after it)
        assert owned.index(("object", "Namespace", "metallb-system")) \
            < owned.index(("object", "DaemonSet", "speaker")) \
            < owned.index(("object", "IPAddressPool", "kind-ip-pool"))
        assert sum(1 for o in owned if o[1] == "CustomResourceDefinition"
                   and o[2].endswith(".metallb.io")) == 9
        # each once, though cert-manager's chart installed while MetalLB's CRDs came
        assert len(owned) == len(set(owned))
        assert _down(cluster).leftovers == []
        assert cluster.state() == before


@pytest.mark.slow
def test_kamaji_at_another_tag_and_existing_names_are_refused(tmp_path: Path) -> None:
    from dataclasses import replace

    from gpulab.stacks.kamaji_hami.render import kamaji_release

    with KamajiCluster(tmp_path, cert_manager=True).running(TENANTS) as cluster:
        other = replace(kamaji_release(_profile()), values={
            "image": {"tag": "26.5.3-edge"}, "resources": None})
        from tests.existing.kmock_kamaji import chart_objects

        cluster.host.call(cluster.put_objects, chart_objects(other))
        cluster.host.namespaces["tenants"] = {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": "tenants"}}
        facts, _first, problems = core.survey(
            _profile(), LAB, ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
        assert facts.stack.kamaji.version == "26.5.3-edge"
        assert any(p.startswith("Kamaji 26.5.3-edge is installed in kamaji-system; this profile "
                                "pins 26.8.2-edge") for p in problems), problems
        assert "namespace tenants already exists; gpulab does not adopt it" in " ".join(problems)


@pytest.mark.slow
def test_join_prints_a_kubeadm_join_with_a_short_lived_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        monkeypatch.setattr(core, "_status_client", cluster.client)
        assert _up(cluster).ok
        result = CliRunner().invoke(app, ["join", "tenant-b", "--name", LAB, "--node", "gpu-7",
                                          "--ttl", "30m"])
        assert result.exit_code == 0, result.output
        text = result.stdout
        join = next(line for line in text.splitlines() if line.startswith("kubeadm join"))
        argv = shlex.split(join)
        assert argv[2] == f"{LB_ADDRESS}:6443"
        token = argv[argv.index("--token") + 1]
        assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", token)
        # the hash openssl gives for the tenant's CA, as kubeadm's docs compute it
        assert argv[argv.index("--discovery-token-ca-cert-hash") + 1] == cluster.ca_hash
        assert argv[argv.index("--node-name") + 1] == "gpu-7"
        # the token exists in the tenant, as kubeadm token create --ttl 30m makes it
        token_id, secret = token.split(".")
        stored = cluster.vclusters["tenant-b"].stored(SECRETS, "kube-system",
                                                      f"bootstrap-token-{token_id}")
        assert stored is not None and stored["type"] == BOOTSTRAP
        data = stored.get("stringData") or {k: base64.b64decode(v).decode()
                                             for k, v in stored["data"].items()}
        assert data["token-secret"] == secret
        assert data["usage-bootstrap-authentication"] == "true"
        assert data["auth-extra-groups"] == "system:bootstrappers:kubeadm:default-node-token"
        import datetime as dt

        expires = dt.datetime.strptime(data["expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=dt.timezone.utc)
        left = (expires - dt.datetime.now(dt.timezone.utc)).total_seconds()
        assert 25 * 60 < left <= 30 * 60
        assert cluster.vclusters["tenant-a"].names(SECRETS, "kube-system") == []  # b's only
        # the labels: HAMi's device plugin selector, and the lab's
        label = next(line for line in text.splitlines() if line.startswith("kubectl "))
        assert shlex.split(label)[3:] == ["label", "node", "gpu-7", "gpu=on",
                                          f"gpulab.dev/lab={LAB}", "gpulab.dev/tenant=tenant-b"]
        helm = shlex.split(next(line for line in text.splitlines()
                                if line.startswith("helm ")))
        values = yaml.safe_load(Path(helm[helm.index("--values") + 1]).read_text())
        assert values["devicePlugin"] == {"enabled": True}
        assert values["mockDevicePlugin"] == {"enabled": False}
        assert helm[helm.index("--version") + 1] == "2.10.0"
        # the machine ran the join: the tenant lists its node, and status shows it as a worker
        from tests.existing.kmock_cluster import NODES

        tenant_b = cluster.vclusters["tenant-b"]
        tenant_b.call(tenant_b.put, NODES, {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-7"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.4"}}})
        status = CliRunner().invoke(app, ["status", "--name", LAB, "-o", "json"])
        assert status.exit_code == 0, status.output
        info = json.loads(status.stdout)["tenants"]
        assert info["tenant-b"]["workers"] == [{"name": "gpu-7", "state": "joined", "ip": ""}]
        assert info["tenant-b"]["nodes"] == [{"name": "gpu-7", "ready": True,
                                              "version": "v1.36.4"}]


def test_join_refuses_a_kind_lab_and_a_bad_ttl(tmp_path: Path) -> None:
    from gpulab.paths import lab_dir

    lab_dir(LAB).mkdir(parents=True)
    result = CliRunner().invoke(app, ["join", "tenant-a", "--name", LAB, "--ttl", "2d"])
    assert result.exit_code == 2 and "--ttl '2d'" in result.output
    result = CliRunner().invoke(app, ["join", "tenant-a", "-p", "kamaji-hami"])
    assert result.exit_code == 2, result.output
    assert "runs on kind" in result.output


class _Stuck:
    """A cluster whose TenantControlPlane keeps its finalizer (Kamaji not reconciling)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, _api: str, kind: str, name: str, _ns: str | None = None) -> bool:
        self.deleted.append(f"{kind}/{name}")
        return True

    def get(self, _api: str, kind: str, name: str, _ns: str | None = None) -> Any:
        return {"kind": kind} if kind == "TenantControlPlane" else None


def test_down_waits_for_a_control_plane_and_stops_before_kamaji_when_it_stays() -> None:
    from gpulab.errors import AdapterError
    from gpulab.providers.existing.teardown import remove_owned as teardown

    owned = (
        {"type": "helm-release", "name": "kamaji", "namespace": "kamaji-system"},
        {"type": "object", "apiVersion": "kamaji.clastix.io/v1alpha1",
         "kind": "TenantControlPlane", "name": "tenant-a", "namespace": "tenants",
         "wait": 0.05},
    )
    kube, pauses = _Stuck(), []

    class Helm:
        def uninstall(self, name: str, namespace: str) -> None:
            raise AssertionError(f"{name} uninstalled while its TenantControlPlane remains")

    with pytest.raises(AdapterError, match=r"TenantControlPlane tenants/tenant-a is still "
                                           r"there .*nothing older was removed"):
        teardown(owned, kube, Helm(), sleep=pauses.append)  # type: ignore[arg-type]
    assert kube.deleted == ["TenantControlPlane/tenant-a"]
    assert pauses and set(pauses) == {2}


def test_metallb_settings_are_for_existing_clusters_and_a_range() -> None:
    from gpulab.profile.base import ClusterSpec

    spec = ClusterSpec(provider="existing", metallb="allow", metallb_range=" 10.0.0.9 - 10.0.0.20")
    assert spec.metallb_range == "10.0.0.9-10.0.0.20"
    with pytest.raises(ValueError, match="metallb, metallb_range: only with provider: existing"):
        ClusterSpec(provider="kind", metallb="allow")
    with pytest.raises(ValueError, match="metallb_range: only with metallb: allow"):
        ClusterSpec(provider="existing", metallb_range="10.0.0.9-10.0.0.20")
    with pytest.raises(ValueError, match="the last address comes before the first"):
        ClusterSpec(provider="existing", metallb="allow", metallb_range="10.0.0.9-10.0.0.1")
    with pytest.raises(ValueError, match="is not an IPv4 range first-last"):
        ClusterSpec(provider="existing", metallb="allow", metallb_range="10.0.0.0/24")


def test_an_entry_two_steps_record_is_kept_once_at_the_earlier_place() -> None:
    # KAI's chart and a vCluster's install at once: each step's CRD diff sees KAI's CRD; it
    # must stay ahead of both releases (down removes it after both), and be recorded once
    crd = {"type": "object", "apiVersion": "apiextensions.k8s.io/v1",
           "kind": "CustomResourceDefinition", "name": "queues.scheduling.run.ai",
           "namespace": None}
    kai = {"type": "helm-release", "name": "kai-scheduler", "namespace": "kai-scheduler"}
    vc = {"type": "helm-release", "name": "team-a", "namespace": "vcluster-team-a"}
    lab_record.record_owned("race", [kai, vc])
    lab_record.insert_owned("race", [crd], [vc])  # the vCluster's step records it first
    lab_record.insert_owned("race", [crd], [kai])  # then KAI's own step
    record = lab_record.read("race")
    assert record is not None and list(record.owned) == [crd, kai, vc]
    lab_record.insert_owned("race", [crd], [vc])  # once more, later: it stays where it is
    record = lab_record.read("race")
    assert record is not None and list(record.owned) == [crd, kai, vc]


def test_the_control_plane_for_real_workers_is_valid_for_the_pinned_crd() -> None:
    from gpulab.stacks.kamaji_hami.existing import existing_control_plane
    from tests.schemas import validate_object

    profile = _profile()
    for tenant in profile.tenants:
        validate_object(existing_control_plane(profile, tenant, LAB))


def test_kamaji_etcd_asks_the_default_storage_class() -> None:
    # why the preflight wants a default StorageClass when gpulab installs Kamaji: the pinned
    # chart's datastore claims its volumes without naming a class
    from gpulab.stacks.kamaji_hami.render import kamaji_release
    from tests.rendered import find, render

    release = kamaji_release(_profile())
    etcd = find(render("kamaji", release.name, release.namespace, release.values),
                "StatefulSet", "kamaji-etcd")
    claims = etcd["spec"]["volumeClaimTemplates"]
    assert [c["spec"].get("storageClassName") for c in claims] == [None]


def test_cert_manager_crds_without_its_controller_and_denied_rights_are_named(
        tmp_path: Path) -> None:
    from tests.existing.kmock_kamaji import cert_manager_release, chart_objects

    denied = {("create", "tenantcontrolplanes")}
    with KamajiCluster(tmp_path, denied=denied).running(TENANTS) as cluster:
        crds = [o for o in chart_objects(cert_manager_release())
                if o["kind"] == "CustomResourceDefinition"]
        cluster.host.call(cluster.put_objects, crds)
        _facts, _first, problems = core.survey(
            _profile(), LAB, ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
        assert problems[0].startswith("cert-manager's CRDs (certificates.cert-manager.io) are "
                                      "there but no controller runs")
        assert problems[-1] == ("not allowed to create tenantcontrolplanes.kamaji.clastix.io in "
                                "tenants: see docs/own-cluster.md for the RBAC to grant")


@pytest.mark.parametrize(("version", "refused"), [
    ("v1.32.9", True), ("v1.33.0", False), ("v1.36.4", False), ("v1.37.0", True)])
def test_management_cluster_versions_are_kamajis_floor_and_cert_managers_ceiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, refused: bool) -> None:
    # Kamaji 26.8.2-edge asks for v1.33+ (docs/content/getting-started/kamaji-generic.md:43);
    # cert-manager 1.21 supports 1.33 -> 1.36 (cert-manager/website content/docs/releases/
    # README.md:24 at 776e5dba): the cluster's /version decides, before anything is created
    monkeypatch.setattr("tests.existing.kmock_cluster.VERSION", version)
    with KamajiCluster(tmp_path).running(TENANTS) as cluster:
        _facts, _first, problems = core.survey(
            _profile(), LAB, ClusterChoice("existing", kubeconfig=cluster.kubeconfig))
    expected = (f"Kubernetes {version} is outside what the pinned Kamaji and cert-manager "
                "support as a management cluster (v1.33-v1.36)")
    assert (expected in problems) is refused, problems
    assert not [p for p in problems if p.startswith("Kubernetes") and p != expected]


@pytest.mark.slow
def test_namespaces_up_creates_carry_the_pod_security_level_their_pods_need(
        tmp_path: Path) -> None:
    from gpulab.pod_security import ENFORCE_LABEL

    profile = _profile(metallb="allow", metallb_range="10.0.0.240-10.0.0.250")
    with KamajiCluster(tmp_path, load_balancer=False).running(TENANTS) as cluster:
        before = cluster.state()
        assert _up(cluster, profile).ok
        levels = {name: (ns["metadata"].get("labels") or {}).get(ENFORCE_LABEL)
                  for name, ns in cluster.host.call(lambda: dict(cluster.host.namespaces))
                  .items()}
        assert levels["kamaji-system"] == "baseline"  # Kamaji, kamaji-etcd
        assert levels["tenants"] == "baseline"  # the control planes Kamaji builds
        assert levels["cert-manager"] is None  # its pods pass restricted: any default admits
        assert levels["metallb-system"] == "privileged"  # the manifest's own label, kept
        assert levels["kube-system"] is None  # not gpulab's: untouched
        assert _down(cluster).leftovers == []
        assert cluster.state() == before
