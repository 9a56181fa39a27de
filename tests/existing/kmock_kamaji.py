"""kamaji-hami's management cluster played by kmock (tests/existing/kmock_cluster.py's
ExistingCluster, one node), with the test playing Kamaji and Helm:

* Kamaji: a TenantControlPlane posted becomes Ready at once (status as Kamaji 26.8.2-edge
  reports it: kubernetesResources.version.status, controlPlaneEndpoint), with its LoadBalancer
  Service (labelled from spec.controlPlane.service.additionalMetadata) and its
  `<name>-admin-kubeconfig` Secret, whose admin.conf names the LoadBalancer address and a CA made
  by openssl here; deleting the TCP removes both, as its owner references would.
* Helm (`KamajiHelm`): installing cert-manager or Kamaji puts what the real pinned chart renders
  (`helm template`, tests/rendered.py) into the cluster: its Deployments (available) and CRDs
  (Established; Kamaji's from its crds/ folder, tests/data/pinned). Uninstall removes the
  Deployments and keeps the CRDs, as Helm does with a chart's crds/ and cert-manager's
  `crds.keep`.
* a cluster with cert-manager already installed holds the same rendered objects up front.
* each tenant is a kmock API server of its own (ExistingCluster's per-name servers).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kmock
import pytest
import yaml

from gpulab.adapters.base import HelmRelease, LabAdapters
from tests.existing.kmock_cluster import (
    CRDS,
    DEPLOYMENTS,
    NODES,
    SECRETS,
    SERVICES,
    ExistingCluster,
)
from tests.existing.kmock_cluster import FakeHelm as VclusterHelm

if TYPE_CHECKING:
    from collections.abc import Iterator

PINNED = Path(__file__).parents[1] / "data" / "pinned"
TCPS = kmock.resource("kamaji.clastix.io/v1alpha1/tenantcontrolplanes")
ISSUERS = kmock.resource("cert-manager.io/v1/issuers")
DATASTORES = kmock.resource("kamaji.clastix.io/v1alpha1/datastores")
BOOTSTRAP = "bootstrap.kubernetes.io/token"
LB_ADDRESS = "192.0.2.30"
TENANT_VERSION = "v1.36.4"  # the kamaji-hami profile's tenants' version: what Kamaji runs
PODS = kmock.resource("v1/pods")
_WORKLOAD = re.compile(r"/apis/apps/v1/namespaces/[^/]+/(deployments|daemonsets)")
DAEMONSETS = kmock.resource("apps/v1/daemonsets")
METALLB_KINDS = {kmock.resource("metallb.io/v1beta1/ipaddresspools"): "IPAddressPool",
                 kmock.resource("metallb.io/v1beta1/l2advertisements"): "L2Advertisement"}
_TCP_PATH = re.compile(r"/apis/kamaji\.clastix\.io/v1alpha1/namespaces/[^/]+/tenantcontrolplanes")
_VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}
MANIFESTS = {"calico": PINNED / "manifests" / "calico-v3.31.2.yaml",
             "metallb": PINNED / "manifests" / "metallb-v0.16.1-native.yaml"}


@functools.cache
def make_ca(folder: str) -> tuple[bytes, str]:
    """(CA certificate PEM, its kubeadm hash) made by openssl, the hash by the pipeline
    kubeadm's docs give (openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl to make a test CA")
    base = Path(folder)
    key, cert = base / "ca.key", base / "ca.crt"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-subj", "/CN=kubernetes", "-days", "1"],
                   check=True, capture_output=True, timeout=60)
    pub = subprocess.run([openssl, "x509", "-pubkey", "-noout", "-in", str(cert)], check=True,
                         capture_output=True, timeout=30).stdout
    der = subprocess.run([openssl, "pkey", "-pubin", "-outform", "der"], input=pub,
                         check=True, capture_output=True, timeout=30).stdout
    import hashlib

    return cert.read_bytes(), "sha256:" + hashlib.sha256(der).hexdigest()


def _available(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("kind") == "Deployment":
        replicas = (obj.get("spec") or {}).get("replicas", 1)
        obj["status"] = {"replicas": replicas, "availableReplicas": replicas,
                         "readyReplicas": replicas}
    if obj.get("kind") == "CustomResourceDefinition":
        obj["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    return obj


def chart_objects(release: HelmRelease) -> list[dict[str, Any]]:
    """What the real pinned chart renders for this release that gpulab reads or removes: its
    Deployments, CRDs (Kamaji keeps its CRDs in crds/, outside `helm template`) and Kamaji's
    DataStore (kamaji-etcd's etcd_datastore.yaml)."""
    from tests.rendered import render

    objects = [o for o in render(release.chart, release.name, release.namespace, release.values)
               if o.get("kind") in ("Deployment", "CustomResourceDefinition", "DataStore")]
    if release.chart == "kamaji":
        objects += [yaml.safe_load((PINNED / f"kamaji_crd_{n}.yaml").read_text())
                    for n in ("tenantcontrolplanes", "datastores")]
    for obj in objects:
        obj.setdefault("metadata", {})
        if obj["kind"] == "Deployment":
            obj["metadata"].setdefault("namespace", release.namespace)
    return [_available(o) for o in objects]


def cert_manager_release(namespace: str = "cert-manager") -> HelmRelease:
    """cert-manager as someone installed it before gpulab came (the pinned chart, CRDs on)."""
    return HelmRelease(name="cert-manager", namespace=namespace, chart="cert-manager",
                       repo="https://charts.jetstack.io", version="v1.21.1",
                       values={"crds": {"enabled": True}})


class KamajiCluster(ExistingCluster):
    """A one-node management cluster; `cert_manager`: it already runs cert-manager."""

    def __init__(self, folder: Path, *, cert_manager: bool = False,
                 load_balancer: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("member_version", TENANT_VERSION)  # each tenant's API server
        super().__init__(folder, name="mgmt", load_balancer=load_balancer, **kwargs)
        self.cert_manager = cert_manager
        self.ca_pem, self.ca_hash = make_ca(str(folder))

    @contextlib.contextmanager
    def running(self, teams: list[str]) -> Iterator[KamajiCluster]:  # type: ignore[override]
        with super().running(teams):
            self.host.call(self._setup)
            for tenant in self.vclusters.values():  # no worker has joined a tenant yet
                tenant.call(lambda t=tenant: [o.delete() for _k, o in t.live(NODES)])
            yield self

    def _setup(self) -> None:
        km = self.host.km
        km.resources[TCPS] = kmock.ResourceInfo(kind="TenantControlPlane", namespaced=True,
                                                verbs=_VERBS, subresources={"status"})
        km.resources[ISSUERS] = kmock.ResourceInfo(kind="Issuer", namespaced=True, verbs=_VERBS)
        km.resources[DATASTORES] = kmock.ResourceInfo(kind="DataStore", namespaced=False,
                                                      verbs=_VERBS)
        for resource, kind in METALLB_KINDS.items():
            km.resources[resource] = kmock.ResourceInfo(kind=kind, namespaced=True, verbs=_VERBS)
        km["post", _TCP_PATH] << self._tcp_created
        km["post", _WORKLOAD] << self._workload_ready
        km["delete", _TCP_PATH] << self._tcp_deleted
        if self.cert_manager:
            release = cert_manager_release()
            self.host.namespaces[release.namespace] = {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": release.namespace, "uid": "cert-manager-ns-uid"},
                "status": {"phase": "Active"}}
            self.put_objects(chart_objects(release))

    def put_objects(self, objects: list[dict[str, Any]]) -> None:
        """(loop) Store rendered objects in the host cluster."""
        resources = {"CustomResourceDefinition": CRDS, "DataStore": DATASTORES}
        for obj in objects:
            self.host.put(resources.get(obj["kind"], DEPLOYMENTS), obj)

    # ------------------------------------------------------------------ Kamaji's part

    def _admin_conf(self, port: int) -> str:
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "kubernetes-admin@tenant",
            "clusters": [{"name": "tenant", "cluster": {
                "server": f"https://{LB_ADDRESS}:{port}",
                "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": "kubernetes-admin", "user": {"token": "admin"}}],
            "contexts": [{"name": "kubernetes-admin@tenant",
                          "context": {"cluster": "tenant", "user": "kubernetes-admin"}}]})

    def _tcp_created(self, request: kmock.Request) -> Any:
        meta = (request.data or {}).get("metadata") or {}
        key = (TCPS, request.namespace, meta.get("name"))
        if key in self.host.km.objects and not self.host.km.objects[key].deleted:
            tcp = self.host.km.objects[key]
            spec = tcp.raw.get("spec") or {}
            port = (spec.get("networkProfile") or {}).get("port", 6443)
            name, namespace = meta["name"], request.namespace
            tcp.patch({"status": {
                "controlPlaneEndpoint": f"{LB_ADDRESS}:{port}",
                "kubernetesResources": {"version": {
                    "status": "Ready", "version": spec["kubernetes"]["version"]}}}})
            service = spec["controlPlane"]["service"]
            self.host.put(SERVICES, {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": (service.get("additionalMetadata") or {}).get(
                                 "labels") or {}},
                "spec": {"type": service["serviceType"]},
                "status": {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}})
            self.host.put(PODS, self._control_plane_pod(name, namespace))
            self.host.put(SECRETS, {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": f"{name}-admin-kubeconfig", "namespace": namespace},
                "data": {"admin.conf": base64.b64encode(
                    self._admin_conf(port).encode()).decode()}})
        raise NotImplementedError  # the emulator answers with the stored TCP

    @staticmethod
    def _control_plane_pod(name: str, namespace: str) -> dict[str, Any]:
        """The pod of the control plane's Deployment, running: labelled with the tenant's name
        and `component: deployment` (internal/builders/controlplane/deployment.go:1105-1107 at
        26.8.2-edge), with the four containers TC-01 reads (tests/kamaji_hami/builders.tcp_pod);
        its node is one of the management cluster's."""
        containers = ("kube-apiserver", "kube-scheduler", "kube-controller-manager",
                      "konnectivity-server")
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-6f8c9d7b5-x2k4q", "namespace": namespace,
                             "uid": f"pod-{name}-control-plane",
                             "labels": {"kamaji.clastix.io/name": name,
                                        "kamaji.clastix.io/component": "deployment"}},
                "spec": {"nodeName": "gpu-node-1",
                         "containers": [{"name": c} for c in containers]},
                "status": {"phase": "Running", "containerStatuses": [
                    {"name": c, "ready": True, "restartCount": 0,
                     "state": {"running": {}}} for c in containers]}}

    def _workload_ready(self, request: kmock.Request) -> Any:
        """The kubelet and controllers' part: a posted Deployment or DaemonSet runs at once."""
        meta = (request.data or {}).get("metadata") or {}
        resource = DAEMONSETS if "daemonsets" in request.url.path else DEPLOYMENTS
        key = (resource, request.namespace, meta.get("name"))
        if key in self.host.km.objects and not self.host.km.objects[key].deleted:
            obj = self.host.km.objects[key]
            if resource == DAEMONSETS:
                obj.patch({"status": {"desiredNumberScheduled": 1, "numberReady": 1,
                                      "numberAvailable": 1, "updatedNumberScheduled": 1}})
            else:
                obj.patch({"status": _available(dict(obj.raw))["status"]})
        raise NotImplementedError

    def _tcp_deleted(self, request: kmock.Request) -> Any:
        for resource, name in ((SERVICES, str(request.name)),
                               (SECRETS, f"{request.name}-admin-kubeconfig"),
                               (PODS, f"{request.name}-6f8c9d7b5-x2k4q")):
            key = (resource, request.namespace, name)
            if key in self.host.km.objects and not self.host.km.objects[key].deleted:
                self.host.km.objects[key].delete()
        raise NotImplementedError

    # ------------------------------------------------------------------ adapters

    def tenant_objects(self, tenant: str, resource: Any, namespace: str | None = None
                       ) -> list[dict[str, Any]]:
        cluster = self.vclusters[tenant]
        return [o.raw for _k, o in cluster.call(cluster.live, resource, namespace)]

    def adapters(self, lab_dir: Path) -> LabAdapters:
        from typing import cast

        def fetch(url: str) -> str:
            for key, path in MANIFESTS.items():
                if key in url:
                    return path.read_text()
            raise AssertionError(f"unexpected fetch {url}")

        return LabAdapters(runtime=cast("Any", None), kind=cast("Any", None), kube=self.client,
                           helm=lambda path: KamajiHelm(self), fetch=fetch, lab_dir=lab_dir)


class KamajiHelm(VclusterHelm):
    """The fake helm, playing the pinned cert-manager and Kamaji charts."""

    cluster: KamajiCluster

    def _install(self, release: HelmRelease) -> None:
        if release.chart not in ("cert-manager", "kamaji"):
            raise AssertionError(f"unexpected chart {release.chart}")
        self.cluster.releases[(release.namespace, release.name)] = release
        objects = chart_objects(release)
        self.cluster.host.call(self.cluster.put_objects, objects)
