"""kamaji-hami on a cluster gpulab did not make (provider existing): the management side only.

The cluster you have is Kamaji's management cluster. Read first (`read_cluster`, GETs only):
cert-manager (reused when its CRDs and controller are there, installed when absent), Kamaji
(reused at the pinned image tag, refused at another, installed when absent), a LoadBalancer
(one the cluster has, else MetalLB when `cluster.metallb: allow`), and the names the plan needs
(namespaces, TenantControlPlanes: existing ones are refused, never adopted). `up` then creates
what is missing, recording each release and object in lab.json before it acts
(providers.existing.Owning), and per tenant a TenantControlPlane behind a LoadBalancer Service
whose admin kubeconfig is saved 0600, and Calico in the tenant. Workers are real machines:
`gpulab join TENANT` prints their commands (`join_commands`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab import naming, pod_security
from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import (
    adapters_of,
    daemonset_ready,
    deep_merge,
    deployment_available,
    management_kube,
    manifest_objects,
)
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.adapters.base import HelmRelease, KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.providers.base import ExistingNeeds
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

__all__ = [
    "DATASTORE_GONE_SECONDS",
    "TCP_GONE_SECONDS",
    "AddonFound",
    "ClusterFound",
    "ExistingMetalLB",
    "existing_control_plane",
    "existing_needs",
    "existing_problems",
    "installs_metallb",
    "kamaji_datastore",
    "lab_namespaces",
    "lab_pod_security",
    "reaches",
    "read_cluster",
]

CRD_API = "apiextensions.k8s.io/v1"
TCP_API = "kamaji.clastix.io/v1alpha1"
CERT_MANAGER_CRD = "certificates.cert-manager.io"
KAMAJI_CRD = "tenantcontrolplanes.kamaji.clastix.io"
METALLB_CRD = "ipaddresspools.metallb.io"
METALLB_NAMESPACE = "metallb-system"  # metallb-native.yaml v0.16.1's own namespace
# The image each controller runs, by the last part of its repository: cert-manager's chart
# names its controller image `cert-manager-controller` (deploy/charts/cert-manager/templates/
# deployment.yaml:88-89 at v1.21.1), Kamaji's chart `clastix/kamaji` (charts/kamaji/values.yaml:
# 10 and templates/controller.yaml:53 at 26.8.2-edge), MetalLB's manifest `metallb/controller`.
CONTROLLER_IMAGES = {"cert-manager": "cert-manager-controller", "Kamaji": "kamaji",
                     "MetalLB": "controller"}
# Kamaji removes a tenant's data from its datastore on the TenantControlPlane's finalizer
# (controllers/tenantcontrolplane_controller.go:203, resources.go:86-99 at 26.8.2-edge): `down`
# waits for each TCP to be gone before it removes anything older, Kamaji included.
TCP_GONE_SECONDS = 300
# Kamaji's chart (charts/kamaji/templates/certmanager_issuer.yaml, certmanager_certificate.yaml)
# asks for cert-manager.io/v1 Issuers and Certificates.
CERT_MANAGER_API = "v1"


@dataclass(frozen=True)
class AddonFound:
    """An add-on found installed: its controller Deployment's namespace and image tag ('' when
    only its CRDs are there), and for cert-manager whether its CRD serves cert-manager.io/v1."""

    name: str
    namespace: str
    version: str
    serves: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterFound:
    """What kamaji-hami's reader found (ExistingFacts.stack)."""

    cert_manager: AddonFound | None
    kamaji: AddonFound | None
    metallb: AddonFound | None
    load_balancer: str  # what shows the cluster hands out LoadBalancer addresses ('' none)
    tcps_found: tuple[str, ...]


def _tag(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    return last.split("@", 1)[0].rsplit(":", 1)[-1] if ":" in last.split("@", 1)[0] else ""


def _repository_name(image: str) -> str:
    return image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]


def _controller(deployments: list[dict[str, Any]], image_name: str
                ) -> tuple[str, str] | None:
    """(namespace, tag) of the first Deployment running `image_name`."""
    for dep in deployments:
        containers = (((dep.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "containers") or []
        for container in containers:
            image = str(container.get("image") or "")
            if _repository_name(image) == image_name:
                return str((dep.get("metadata") or {}).get("namespace") or ""), _tag(image)
    return None


def _addon(name: str, crd: str, crds: dict[str, dict[str, Any]],
           deployments: list[dict[str, Any]]) -> AddonFound | None:
    found = _controller(deployments, CONTROLLER_IMAGES[name])
    if found is None and crd not in crds:
        return None
    serves = tuple(str(v.get("name")) for v in (crds.get(crd) or {}).get("spec", {}).get(
        "versions") or [] if v.get("served"))
    namespace, version = found or ("", "")
    return AddonFound(name, namespace, version, serves)


def read_cluster(kube: Any, profile: KamajiHamiProfile,
                 owned_before: tuple[dict[str, Any], ...]) -> ClusterFound:
    """Read-only: the add-ons, a LoadBalancer, and the TenantControlPlanes the plan would make.
    What this lab installed on an earlier `up` (its namespace in lab.json) is not 'found'."""
    ours = {(o.get("kind"), o.get("name")) for o in owned_before}
    crds = {c["metadata"]["name"]: c for c in kube.list_objects(CRD_API,
                                                                 "CustomResourceDefinition")}
    deployments = kube.list_objects("apps/v1", "Deployment")

    def theirs(addon: AddonFound | None) -> AddonFound | None:
        return None if addon is None or ("Namespace", addon.namespace) in ours else addon

    cert_manager = theirs(_addon("cert-manager", CERT_MANAGER_CRD, crds, deployments))
    kamaji = theirs(_addon("Kamaji", KAMAJI_CRD, crds, deployments))
    metallb = _addon("MetalLB", METALLB_CRD, crds, deployments) if METALLB_CRD in crds else None
    metallb = None if metallb is not None and (("CustomResourceDefinition", METALLB_CRD) in ours
                                               ) else metallb
    balanced = ""
    for service in kube.list_objects("v1", "Service"):
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if (service.get("spec") or {}).get("type") == "LoadBalancer" and ingress:
            meta = service.get("metadata") or {}
            if ("Namespace", meta.get("namespace")) in ours:
                continue  # a TCP of this lab, behind the MetalLB it installed
            address = ingress[0].get("ip") or ingress[0].get("hostname") or "?"
            balanced = (f"Service {meta.get('namespace')}/{meta.get('name')} has LoadBalancer "
                        f"address {address}")
            break
    namespace = profile.components.kamaji.tenant_namespace
    tcps: tuple[str, ...] = ()
    if KAMAJI_CRD in crds:
        tcps = tuple(t.name for t in profile.tenants if ("TenantControlPlane", t.name) not in ours
                     and kube.get(TCP_API, "TenantControlPlane", t.name, namespace) is not None)
    return ClusterFound(cert_manager, kamaji, metallb, balanced, tcps)


# --------------------------------------------------------------------------- preflight


def _lb_said(profile: KamajiHamiProfile) -> bool:
    """The profile says the cluster hands out LoadBalancer addresses (cluster.expose)."""
    return profile.cluster is not None and profile.cluster.expose == "LoadBalancer"


def installs_metallb(profile: KamajiHamiProfile, found: ClusterFound) -> bool:
    """No LoadBalancer found or declared, and the profile allows MetalLB."""
    spec = profile.cluster
    return (not found.load_balancer and found.metallb is None and not _lb_said(profile)
            and spec is not None and spec.metallb == "allow")


def lab_namespaces(profile: KamajiHamiProfile, found: ClusterFound | None) -> tuple[str, ...]:
    """The namespaces `up` creates (all that it might, when nothing was read yet)."""
    comps = profile.components
    names = []
    if found is None or found.cert_manager is None:
        names.append(comps.cert_manager.namespace)
    if found is None or found.kamaji is None:
        names.append(comps.kamaji.namespace)
    names.append(comps.kamaji.tenant_namespace)
    return tuple(dict.fromkeys(names))


def lab_pod_security(profile: KamajiHamiProfile, found: ClusterFound | None
                     ) -> tuple[tuple[str, str, str], ...]:
    """(namespace, Pod Security level, what needs it) for the namespaces `up` creates whose pods
    would not pass `restricted` (gpulab.pod_security.needed over the pinned charts rendered
    with gpulab's values: tests/contract/test_pod_security.py): Kamaji 26.8.2-edge and
    kamaji-etcd run without a seccomp profile, etcd as root (`baseline`); the tenants' control
    planes are Deployments Kamaji builds with the TenantControlPlane's security contexts, none
    by default (internal/builders/controlplane/deployment.go:1235-1237, :427-430, :508-511,
    :611-614), so `baseline`. cert-manager v1.21's pods pass `restricted` (no label); MetalLB's
    manifest labels its own namespace `privileged` (metallb-native.yaml v0.16.1:1-8)."""
    comps = profile.components
    out = []
    if found is None or found.kamaji is None:
        out.append((comps.kamaji.namespace, pod_security.BASELINE, "Kamaji and kamaji-etcd"))
    out.append((comps.kamaji.tenant_namespace, pod_security.BASELINE,
                "the tenants' control planes"))
    return tuple(out)


def existing_needs(profile: KamajiHamiProfile, lab: str, owned_before: Any
                   ) -> ExistingNeeds:
    """What the plan creates, for the provider's read-only preflight: namespaces that must not
    exist yet, each verb and resource the user must be allowed, and the stack's own reader."""
    from functools import partial

    from gpulab.providers.base import (
        RBAC,
        Access,
        ExistingNeeds,
        chart_cluster_access,
        release_access,
    )

    comps = profile.components
    owned = tuple(owned_before or ())
    access = [Access(verb, "", "namespaces") for verb in ("create", "delete")]
    access += chart_cluster_access()
    tenants = comps.kamaji.tenant_namespace
    access += [Access(verb, "kamaji.clastix.io", "tenantcontrolplanes", tenants)
               for verb in ("create", "get", "delete")]
    access.append(Access("get", "", "secrets", tenants))  # the admin kubeconfigs
    for namespace in (comps.cert_manager.namespace, comps.kamaji.namespace):
        access += release_access(namespace, (
            ("", "services"), ("", "serviceaccounts"), ("", "configmaps"),
            ("apps", "deployments"), ("apps", "statefulsets"), ("batch", "jobs"),
            (RBAC, "roles"), (RBAC, "rolebindings")))
    spec = profile.cluster
    namespaces = lab_namespaces(profile, None)
    if spec is not None and spec.metallb == "allow":
        namespaces = (*namespaces, METALLB_NAMESPACE)
    return ExistingNeeds(namespaces=namespaces, queues=(), access=tuple(access),
                         owned_before=owned,
                         read=partial(read_cluster, profile=profile, owned_before=owned),
                         pod_security=lab_pod_security(profile, None))


def _older(version: str, major: int) -> bool:
    match = re.match(r"^v?(\d+)\.", version)
    return bool(match) and int(match.group(1)) < major  # type: ignore[union-attr]


def existing_problems(profile: KamajiHamiProfile, facts: Any) -> list[str]:
    """Why the lab cannot go into this cluster, one line each ([]: it can)."""
    from gpulab.stacks.kamaji_hami import compat

    found: ClusterFound = facts.stack
    problems: list[str] = []
    if facts.minor is None:
        problems.append(f"Kubernetes version {facts.version} is not one gpulab can read")
    else:
        low, high = compat.MANAGEMENT_MINORS
        if not low <= facts.minor <= high:
            problems.append(f"Kubernetes {facts.version} is outside what the pinned Kamaji and "
                            f"cert-manager support as a management cluster (v1.{low}-v1.{high})")
    comps = profile.components
    cert = found.cert_manager
    if cert is not None:
        if not cert.namespace:
            problems.append(f"cert-manager's CRDs ({CERT_MANAGER_CRD}) are there but no "
                            "controller runs (no Deployment of a cert-manager-controller "
                            "image): finish or remove that install; gpulab does not adopt it")
        elif CERT_MANAGER_API not in cert.serves or _older(cert.version, 1):
            problems.append(f"cert-manager {cert.version or '(version unreadable)'} in "
                            f"{cert.namespace} does not serve cert-manager.io/"
                            f"{CERT_MANAGER_API}, which Kamaji's chart asks for: upgrade it "
                            "yourself (gpulab never changes it)")
    kamaji = found.kamaji
    pinned = comps.kamaji.image_tag
    if kamaji is not None:
        if not kamaji.namespace:
            problems.append(f"Kamaji's CRD ({KAMAJI_CRD}) is there but no Kamaji controller "
                            "runs: finish or remove that install; gpulab does not adopt it")
        elif kamaji.version != pinned:
            problems.append(f"Kamaji {kamaji.version or '(version unreadable)'} is installed in "
                            f"{kamaji.namespace}; this profile pins {pinned} (reused only at "
                            "that tag; gpulab never upgrades or removes it)")
        elif kamaji.namespace == comps.kamaji.tenant_namespace:
            problems.append(f"Kamaji runs in {kamaji.namespace}, the namespace the lab puts its "
                            "TenantControlPlanes in: set components.kamaji.tenant_namespace")
    if kamaji is None and facts.default_storage_class is None:
        problems.append("no default StorageClass: the kamaji-etcd datastore Kamaji's chart "
                        "installs keeps its data on PersistentVolumeClaims of the default class "
                        "(charts/kamaji-etcd/templates/etcd_sts.yaml volumeClaimTemplates); "
                        "mark one with storageclass.kubernetes.io/is-default-class=true")
    problems += _load_balancer_problems(profile, found)
    needed = set(lab_namespaces(profile, found))
    if installs_metallb(profile, found):
        needed.add(METALLB_NAMESPACE)
    for namespace in facts.namespaces_found:
        if namespace in needed:
            problems.append(f"namespace {namespace} already exists; gpulab does not adopt it "
                            "(delete it, or choose another namespace in the profile)")
    for name in found.tcps_found:
        problems.append(f"TenantControlPlane {comps.kamaji.tenant_namespace}/{name} already "
                        "exists; gpulab does not adopt it (rename the tenant)")
    for index, tenant in enumerate(profile.tenants):
        if tenant.control_plane.service_type != "LoadBalancer":
            problems.append(f"tenants[{index}].control_plane.service_type is "
                            f"{tenant.control_plane.service_type}: on an existing cluster each "
                            "control plane is a LoadBalancer Service (workers join at its "
                            "address)")
    if facts.denied:
        more = f" (+{len(facts.denied) - 1} more)" if len(facts.denied) > 1 else ""
        problems.append(f"not allowed to {facts.denied[0]}{more}: see docs/own-cluster.md for "
                        "the RBAC to grant")
    return problems


def _load_balancer_problems(profile: KamajiHamiProfile, found: ClusterFound) -> list[str]:
    spec = profile.cluster
    if spec is not None and spec.expose in ("NodePort", "port-forward"):
        return [f"cluster.expose is {spec.expose}: kamaji-hami exposes each control plane as a "
                f"LoadBalancer Service ({spec.expose} is for vcluster-kai)"]
    if found.load_balancer or found.metallb is not None or _lb_said(profile):
        return []
    if spec is not None and spec.metallb == "allow":
        if not spec.metallb_range:
            return ["cluster.metallb is allow but cluster.metallb_range is not set: give the "
                    "free IPv4 range MetalLB may hand out, first-last"]
        return []
    return ["no LoadBalancer: no Service of type LoadBalancer has an address and MetalLB is not "
            "installed, and each control plane is a LoadBalancer Service; set cluster.metallb: "
            "allow with cluster.metallb_range for gpulab to install MetalLB, or cluster.expose: "
            "LoadBalancer if your cluster hands out addresses anyway"]


# --------------------------------------------------------------------------- steps


def _labelled(obj: dict[str, Any], lab: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    labels = out.setdefault("metadata", {}).setdefault("labels", {})
    labels.update({naming.LABEL_LAB: lab, naming.LABEL_MANAGED: "gpulab"})
    return out


# Kamaji's chart brings a DataStore (the kamaji-etcd subchart's templates/etcd_datastore.yaml,
# on by `kamaji-etcd.datastore.enabled`, named `default` by charts/kamaji/values.yaml:115-117 at
# 26.8.2-edge), and Kamaji's controller puts a finalizer on it that only it removes, once no
# TenantControlPlane uses it (controllers/datastore_controller.go:77-119). `helm uninstall`
# would delete the controller and the DataStore at once and leave it Terminating, and its CRD
# with it: so `down` deletes the DataStore first and waits, while Kamaji still runs.
DATASTORE_GONE_SECONDS = 120


def kamaji_datastore(release: HelmRelease) -> Artifact | None:
    """The DataStore the Kamaji release makes, as a `chart-object` (recorded after the release,
    so removed before it); None when the values turn it off."""
    etcd = release.values.get("kamaji-etcd") or {}
    store = etcd.get("datastore") or {}
    if etcd.get("deploy") is False or store.get("enabled") is False:
        return None
    name = str(store.get("name") or "default")
    return Artifact("chart-object", f"DataStore/{name}", {
        "apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "DataStore", "name": name,
        "namespace": None, "wait": DATASTORE_GONE_SECONDS,
        "why": f"made by the {release.name} release; down deletes it while Kamaji still runs"})


@dataclass
class ExistingMetalLB:
    """MetalLB (metallb-native.yaml at the pinned version) and a pool on cluster.metallb_range,
    each object labelled for the lab. The manifest's objects are only known once it is fetched,
    so they are recorded in lab.json (ahead of the pool's, which Owning recorded) before any is
    applied."""

    profile: KamajiHamiProfile
    lab: str
    address_range: str
    name: str = "management/metallb"
    title: str = "Installing MetalLB (cluster.metallb: allow)"
    requires: tuple[str, ...] = ("management/cluster",)
    timeout: float = 240

    def pool_objects(self) -> list[dict[str, Any]]:
        objects = render.metallb_objects(self.profile, None)
        objects[0]["spec"]["addresses"] = [self.address_range]
        return [_labelled(o, self.lab) for o in objects]

    def describe(self) -> list[Artifact]:
        metallb = self.profile.components.metallb
        return [Artifact("manifest", f"metallb-{metallb.version}",
                         {"url": metallb.url, "apply": "server-side",
                          "labels": {naming.LABEL_LAB: self.lab}, "pool": self.address_range}),
                *(Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o)
                  for o in self.pool_objects())]

    @staticmethod
    def _running(kube: KubeGateway) -> tuple[bool, str]:
        ok, seen = deployment_available(kube, "controller", METALLB_NAMESPACE)
        if not ok:
            return ok, seen
        return daemonset_ready(kube, "speaker", METALLB_NAMESPACE)

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        try:
            ok, _ = self._running(kube)
            live = kube.get("metallb.io/v1beta1", "IPAddressPool",
                            self.profile.components.metallb.pool_name, METALLB_NAMESPACE)
        except AdapterError:
            return False
        return ok and live is not None and (live.get("spec") or {}).get("addresses") == [
            self.address_range]

    def apply(self, ctx: StepContext) -> None:
        from gpulab import lab_record

        kube = management_kube(ctx)
        objects = [_labelled(o, self.lab) for o in manifest_objects(
            adapters_of(ctx).fetch(self.profile.components.metallb.url))]
        entries = [{"type": "object", "apiVersion": o["apiVersion"], "kind": o["kind"],
                    "name": o["metadata"]["name"],
                    "namespace": o["metadata"].get("namespace")} for o in objects]
        pool = [{"type": "object", "apiVersion": o["apiVersion"], "kind": o["kind"],
                 "name": o["metadata"]["name"], "namespace": METALLB_NAMESPACE}
                for o in self.pool_objects()]
        lab_record.insert_owned(ctx.lab, entries, pool)
        for obj in objects:
            kube.apply(obj)
        wait_until(ctx, self.name, "MetalLB controller and speaker",
                   lambda: self._running(kube), timeout=self.timeout)

        def apply_pool() -> tuple[bool, str]:  # the webhook answers a while after Ready
            for obj in self.pool_objects():
                kube.apply(obj)
            return True, f"pool {self.address_range} accepted"

        wait_until(ctx, self.name, "MetalLB to accept the address pool", apply_pool,
                   timeout=self.timeout, interval=3)


def existing_control_plane(profile: KamajiHamiProfile, tenant: TenantSpec, lab: str, *,
                           containers: bool = False) -> dict[str, Any]:
    """The TenantControlPlane on an existing cluster: the kind lab's, labelled for the lab (its
    Service too, through `additionalMetadata`), always a LoadBalancer Service. For real workers
    (`containers` False): Kamaji's own kube-proxy addon, and of the kubelet patches only the
    cgroup driver (the others turn off eviction and image GC, which only make sense for a
    kindest/node container that sees its host's disk). For kindest/node workers on this host
    (`cluster.workers: containers`) the kind lab's settings as they are."""
    tcp = copy.deepcopy(render.tenant_control_plane(profile, tenant))
    labels = {naming.LABEL_LAB: lab, naming.LABEL_MANAGED: "gpulab"}
    tcp["metadata"]["labels"].update(labels)
    spec = tcp["spec"]
    spec["controlPlane"]["service"] = {"serviceType": "LoadBalancer",
                                       "additionalMetadata": {"labels": dict(labels)}}
    if not containers:
        spec["kubernetes"]["kubelet"]["configurationJSONPatches"] = [
            p for p in render.kubelet_config_patches(tenant) if p["path"] == "/cgroupDriver"]
        spec["addons"]["kubeProxy"] = {}
    return tcp


def reaches(host: str, port: int, timeout: float = 3.0) -> bool:
    """This host opens a TCP connection to host:port within `timeout` seconds."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- gpulab join
# A real machine joins a tenant as Kamaji's docs have it (docs/content/getting-started/
# kamaji-generic.md:292-318 at 26.8.2-edge: kubeadm's token and `kubeadm join`). What kubeadm
# join needs is Kamaji's: its BootstrapToken phase writes kube-public/cluster-info and the
# bootstrap RBAC (internal/kubeadm/bootstraptoken.go:20-77), and the tenant's controller-manager
# runs the bootstrapsigner and tokencleaner (internal/builders/controlplane/deployment.go:481),
# which sign cluster-info with each token and delete it once expired. So gpulab creates the
# token itself, as `kubeadm token create --ttl` would: a Secret `bootstrap-token-<id>` of type
# bootstrap.kubernetes.io/token in kube-system with token-id, token-secret, expiration (RFC 3339,
# UTC), the two usages and the kubeadm node group (k8s.io/cluster-bootstrap
# token/api/types.go:24-100; kubeadm's default group, render.NODE_BOOTSTRAPPERS).

TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
# HAMi's chart runs its NVIDIA device plugin on nodes labelled gpu=on
# (charts/hami/values.yaml:419-420 `devicePlugin.nvidiaNodeSelector`, used by
# templates/device-plugin/daemonsetnvidia.yaml:258 at v2.10.0); its README's prerequisites for
# that plugin: NVIDIA driver >= 440 and NVIDIA as the container runtime's default
# (README.md:93-110 at v2.10.0).
HAMI_GPU_LABEL = ("gpu", "on")


def new_token() -> tuple[str, str]:
    """(id, secret): 6 and 16 characters of [a-z0-9] (types.go BootstrapTokenPattern)."""
    import secrets

    def pick(n: int) -> str:
        return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(n))

    return pick(6), pick(16)


def bootstrap_token_secret(token_id: str, token_secret: str, expires: str, lab: str,
                           tenant: str) -> dict[str, Any]:
    """The bootstrap token as kubeadm stores it (stringData: the API server encodes it)."""
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system",
                     "labels": {naming.LABEL_LAB: lab, naming.LABEL_TENANT: tenant,
                                naming.LABEL_MANAGED: "gpulab"}},
        "stringData": {
            "description": f"gpulab join: a worker for {tenant} of lab {lab}",
            "token-id": token_id, "token-secret": token_secret, "expiration": expires,
            "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
            "auth-extra-groups": render.NODE_BOOTSTRAPPERS,
        },
    }


def _der_element(data: bytes, at: int) -> tuple[int, int]:
    """(start of contents, end) of the DER element at `at`."""
    length = data[at + 1]
    start = at + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[start:start + count], "big")
        start += count
    return start, start + length


def ca_cert_hash(pem: bytes) -> str:
    """kubeadm's --discovery-token-ca-cert-hash: `sha256:` and the hex SHA-256 of the CA
    certificate's DER SubjectPublicKeyInfo (kubeadm's pubkeypin.Hash over
    RawSubjectPublicKeyInfo). X.509: Certificate = SEQUENCE { tbsCertificate SEQUENCE {
    [0] version?, serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo,
    ...} ...} (RFC 5280 4.1)."""
    import base64
    import hashlib

    text = pem.decode("ascii", errors="replace")
    try:
        body = text.split("-----BEGIN CERTIFICATE-----", 1)[1].split("-----END CERTIFICATE-----",
                                                                     1)[0]
        der = base64.b64decode("".join(body.split()))
        start, _ = _der_element(der, 0)  # Certificate
        at, _ = _der_element(der, start)  # tbsCertificate
        if der[at] == 0xA0:  # explicit version
            at = _der_element(der, at)[1]
        for _field in range(5):  # serial, signature, issuer, validity, subject
            at = _der_element(der, at)[1]
        _inner, end = _der_element(der, at)
    except (IndexError, ValueError) as err:
        raise ValueError(f"not a PEM certificate ({err})") from None
    return "sha256:" + hashlib.sha256(der[at:end]).hexdigest()


def _tenant_kubeconfig(path: Any) -> tuple[str, bytes]:
    """(server URL, CA PEM) of a saved tenant kubeconfig (its current context's cluster)."""
    import base64

    import yaml

    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    cluster = (contexts.get(config.get("current-context")) or {}).get("cluster")
    for entry in config.get("clusters") or []:
        if entry.get("name") == cluster or cluster is None:
            body = entry.get("cluster") or {}
            ca = body.get("certificate-authority-data")
            if body.get("server") and ca:
                return str(body["server"]), base64.b64decode(ca)
    raise ValueError("no server with certificate-authority-data")


def hami_worker_values(profile: KamajiHamiProfile, tenant: TenantSpec) -> dict[str, Any]:
    """HAMi's values for real GPUs: the chart's NVIDIA device plugin (on by default:
    values.yaml:276-277, on gpu=on nodes) and no mock; its kube-scheduler at the tenant's
    version, as the kind lab has it; the node lock left at HAMi's default (the real plugin
    releases it, unlike the mock the kind lab's short timeout works around)."""
    hami = profile.components.hami
    values: dict[str, Any] = {
        "scheduler": {"kubeScheduler": {"image": {
            "registry": hami.kube_scheduler_registry, "repository": "kube-scheduler",
            "tag": tenant.kubernetes_version}}},
        "devicePlugin": {"enabled": True},
        "mockDevicePlugin": {"enabled": False},
    }
    return deep_merge(values, hami.values)


def join_commands(profile: KamajiHamiProfile, lab: str, member: str, *, node: str | None,
                  ttl_seconds: int, kube: Any, now: Any = None) -> str:
    """The commands that make a real machine a GPU worker of tenant `member`: a bootstrap token
    created in the tenant now (expiring after `ttl_seconds`), kubeadm join, the node's labels,
    and HAMi with its NVIDIA device plugin (values written to the lab folder)."""
    import datetime as dt
    import shlex

    import yaml

    from gpulab.errors import UsageError
    from gpulab.paths import lab_dir

    try:
        tenant = profile.tenant(member)
    except KeyError as err:
        raise UsageError(str(err.args[0])) from None
    folder = lab_dir(lab)
    path = folder / f"{tenant.name}.kubeconfig"
    if not path.is_file():
        raise UsageError(f"no kubeconfig for tenant {tenant.name} in lab '{lab}' ({path})",
                         hint=f"gpulab up --name {lab} creates its control plane first")
    try:
        server, ca = _tenant_kubeconfig(path)
        digest = ca_cert_hash(ca)
    except (OSError, ValueError) as err:
        raise UsageError(f"{path}: cannot read the tenant's server and CA ({err})") from None
    endpoint = server.split("://", 1)[-1].rstrip("/")
    host = endpoint.rsplit(":", 1)[0]
    when = now or dt.datetime.now(dt.timezone.utc)
    expires = (when + dt.timedelta(seconds=ttl_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    token_id, token_secret = new_token()
    client = kube(path)
    client.create(bootstrap_token_secret(token_id, token_secret, expires, lab, tenant.name))
    name = node or render.worker_name(lab, tenant.name, 0)
    values = folder / f"{tenant.name}-hami-values.yaml"
    values.write_text(yaml.safe_dump(hami_worker_values(profile, tenant), sort_keys=False),
                      encoding="utf-8")
    hami = profile.components.hami
    q = shlex.quote
    k = q(str(path))
    labels = " ".join(f"{a}={b}" for a, b in (HAMI_GPU_LABEL, (naming.LABEL_LAB, lab),
                                                (naming.LABEL_TENANT, tenant.name)))
    minor = ".".join(tenant.kubernetes_version.lstrip("v").split(".")[:2])
    konnectivity = tenant.control_plane.konnectivity_port
    hours = f"{ttl_seconds // 3600}h" if ttl_seconds % 3600 == 0 else f"{ttl_seconds // 60}m"
    return "\n".join([
        f"# A GPU worker for tenant {tenant.name} of lab {lab}: control plane {server} "
        f"(Kubernetes {tenant.kubernetes_version}), Konnectivity on {host}:{konnectivity}.",
        f"# The machine needs containerd, kubeadm and kubelet v{minor}.x (kubelet's cgroup "
        f"driver {tenant.control_plane.kubelet_cgroup_driver}, as the tenant's kubelet config "
        "says), the NVIDIA driver (>= 440) with NVIDIA as containerd's default runtime (HAMi's "
        f"prerequisites), and a route to {endpoint} and {host}:{konnectivity}.",
        f"# The token expires at {expires} ({hours}); `gpulab join {tenant.name} --name {lab}` "
        "makes a new one.",
        "",
        "# 1. On the machine, as root:",
        f"kubeadm join {endpoint} --token {token_id}.{token_secret} "
        f"--discovery-token-ca-cert-hash {digest} --node-name {q(name)}",
        "",
        f"# 2. Here, once `kubectl --kubeconfig {k} get node {q(name)}` lists it (gpu=on is the "
        "label HAMi's chart runs its NVIDIA device plugin on):",
        f"kubectl --kubeconfig {k} label node {q(name)} {labels}",
        "",
        f"# 3. Here, once per tenant: HAMi with its NVIDIA device plugin (values: {values})",
        f"helm upgrade --install {q(hami.release)} {q(hami.chart.name)} --repo "
        f"{q(hami.chart.repo or '')} --version {q(hami.chart.version)} --namespace "
        f"{q(hami.namespace)} --kubeconfig {k} --values {q(str(values))} --wait",
        "",
    ])
