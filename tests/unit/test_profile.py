"""Profile model and validation: every problem is one line with file, line and field path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.errors import ExitCode, ProfileError, UsageError
from gpulab.profile.load import builtin_profiles, format_path
from gpulab.stacks import load_profile, parse_profile

BUILTIN = builtin_profiles()["kamaji-hami"]
TEXT = BUILTIN.read_text()
SRC = "bad.yaml"


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    return text.count("\n", 0, index) + 1


def _mutate(old: str, new: str, occurrence: int = 1) -> tuple[str, int]:
    """Replace the n-th occurrence of `old`; return the text and the line it is on."""
    line = _line_of(TEXT, old, occurrence)
    parts = TEXT.split(old)
    text = old.join(parts[:occurrence]) + new + old.join(parts[occurrence:])
    return text, line


def _problems(text: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        parse_profile(text, SRC)
    assert info.value.exit_code == ExitCode.USAGE
    return info.value.problems


def test_builtin_profile_reproduces_the_write_up(kamaji_profile) -> None:
    a, b = kamaji_profile.tenants
    assert (a.name, b.name) == ("tenant-a", "tenant-b")
    assert a.kubernetes_version == b.kubernetes_version == "v1.36.4"
    assert a.workers.image == (
        "kindest/node:v1.36.4@sha256:"
        "099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
    )
    assert [(g.model, g.count, g.memory_mib, g.cores, g.split) for g in a.gpus] == [
        ("NVIDIA-A100-SXM4-80GB", 1, 81920, 100, 10)
    ]
    assert [(g.model, g.count, g.memory_mib, g.cores, g.split) for g in b.gpus] == [
        ("NVIDIA-L4", 2, 24576, 100, 10)
    ]
    assert a.pod_cidr == "10.244.0.0/16"
    assert a.control_plane.service_type == "LoadBalancer"
    assert a.control_plane.konnectivity_port == 8132
    assert a.control_plane.konnectivity_agent_mode == "DaemonSet"
    assert a.control_plane.kubelet_cgroup_driver == "systemd"
    comps = kamaji_profile.components
    assert comps.cert_manager.chart.version == "v1.21.2"
    assert comps.metallb.version == "v0.16.1"
    assert comps.calico.version == "v3.31.2"
    assert comps.hami.chart.version == "2.10.0"
    assert comps.hami.mock_device_plugin_tag == "1.0.1"
    assert comps.kamaji.image_tag == "26.8.2-edge"
    assert kamaji_profile.management.kind_version == "v0.33.0"
    assert "@sha256:" in kamaji_profile.management.node_image


def test_device_ids_match_the_write_up(kamaji_profile) -> None:
    a, b = kamaji_profile.tenants
    assert a.device_ids(0) == ["GPU-MOCK-0"]
    assert b.device_ids(0) == ["GPU-MOCK-B0", "GPU-MOCK-B1"]
    assert b.device_ids(1) == ["GPU-MOCK-B2", "GPU-MOCK-B3"]  # unique across a tenant's workers


BROKEN = [
    # (id, old, new, occurrence, expected problem after "bad.yaml:<line>: ")
    ("zero-memory", "memory_mib: 24576", "memory_mib: 0", 1,
     "tenants[1].gpus[0].memory_mib: must be > 0"),
    ("negative-count", "count: 2", "count: -1", 1, "tenants[1].gpus[0].count: must be > 0"),
    ("split-zero", "split: 10", "split: 0", 1,
     "tenants[0].gpus[0].split: must be >= 1 (a card shared by 0 pods can never be used)"),
    ("wrong-type", "memory_mib: 81920", "memory_mib: lots", 1,
     "tenants[0].gpus[0].memory_mib: must be a whole number"),
    ("unknown-key", "    gpus:", "    gpu_list:", 1,
     "tenants[0].gpu_list: unknown field"),
    ("bad-name", "- name: tenant-b", "- name: Tenant_B", 1,
     "tenants[1].name: 'Tenant_B' is not a DNS-1123 label"),
    ("duplicate-tenant", "- name: tenant-b", "- name: tenant-a", 1,
     "tenants[1].name: duplicate tenant name 'tenant-a'"),
    ("invalid-cidr", "pod_cidr: 10.244.0.0/16", "pod_cidr: 10.244.0.0/33", 2,
     "tenants[1].pod_cidr: '10.244.0.0/33' is not a valid CIDR"),
    ("host-bits-cidr", "pod_cidr: 10.244.0.0/16", "pod_cidr: 10.244.0.1/16", 1,
     "tenants[0].pod_cidr: '10.244.0.1/16' is not a valid CIDR"),
    ("overlapping-cidrs", "service_cidr: 10.96.0.0/16", "service_cidr: 10.244.128.0/17", 1,
     "tenants[0].service_cidr: 10.244.128.0/17 overlaps pod_cidr 10.244.0.0/16"),
    ("unsupported-version", "kubernetes_version: v1.36.4", "kubernetes_version: v1.29.3", 1,
     "tenants[0].kubernetes_version: v1.29.3 is not supported by Kamaji 26.8.2-edge "
     "(tenants v1.30.x to v1.36.x)"),
    ("worker-digest-missing",
     "image: kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
     "image: kindest/node:v1.36.4", 2,
     "tenants[0].workers.image: image 'kindest/node:v1.36.4' must be pinned by digest"),
    ("node-image-digest-missing",
     "node_image: kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
     "node_image: kindest/node:v1.36.4", 1,
     "management.node_image: image 'kindest/node:v1.36.4' must be pinned by digest"),
    ("chart-range", "version: 2.10.0}", "version: ^2.10}", 1,
     "components.hami.chart.version: chart version '^2.10' must be exact"),
    ("kamaji-unpinned", "image_tag: 26.8.2-edge", "image_tag: latest", 1,
     "components.kamaji.image_tag: image_tag must pin a Kamaji build"),
    ("worker-version-mismatch", "kubernetes_version: v1.36.4", "kubernetes_version: v1.35.8", 2,
     "tenants[1].workers.image: kindest/node v1.36.4 does not match kubernetes_version v1.35.8"),
    ("service-type", "service_type: LoadBalancer", "service_type: Ingress", 1,
     "tenants[0].control_plane.service_type: must be 'LoadBalancer', 'NodePort' or 'ClusterIP'"),
    ("helm-release-too-long", "release: hami", "release: " + "h" * 54, 1,
     "components.hami.release: '" + "h" * 54 + "' is 54 characters; Helm release names are at "
     "most 53"),
    ("quoted-number", "count: 2", "count: '2'", 1,
     "tenants[1].gpus[0].count: must be a whole number"),
    ("float-count", "count: 2", "count: 2.0", 1,
     "tenants[1].gpus[0].count: must be a whole number"),
    ("number-as-string", "image_tag: 26.8.2-edge", "image_tag: 26", 1,
     "components.kamaji.image_tag: must be a string"),
    ("tenant-named-management", "- name: tenant-b", "- name: management", 1,
     "tenants[1].name: 'management' is the management cluster's name"),
    ("loopback-pod-cidr", "pod_cidr: 10.244.0.0/16", "pod_cidr: 127.0.0.0/16", 1,
     "tenants[0].pod_cidr: 127.0.0.0/16 is loopback"),
    ("link-local-service", "service_cidr: 10.96.0.0/16", "service_cidr: 169.254.0.0/16", 1,
     "tenants[0].service_cidr: 169.254.0.0/16 is link-local"),
    ("public-pod-cidr", "pod_cidr: 10.244.0.0/16", "pod_cidr: 8.8.0.0/16", 1,
     "tenants[0].pod_cidr: 8.8.0.0/16 is not a private range"),
    ("tiny-pod-cidr", "pod_cidr: 10.244.0.0/16", "pod_cidr: 10.244.0.0/26", 1,
     "tenants[0].pod_cidr: 10.244.0.0/26 is too small"),
    ("tiny-service-cidr", "service_cidr: 10.96.0.0/16", "service_cidr: 10.96.0.0/30", 1,
     "tenants[0].service_cidr: 10.96.0.0/30 must be between /12 and /28"),
    ("huge-service-cidr", "service_cidr: 10.96.0.0/16", "service_cidr: 10.0.0.0/8", 1,
     "tenants[0].service_cidr: 10.0.0.0/8 must be between /12 and /28"),
    ("network-host", "network: kind", "network: host", 1,
     "management.network: 'host' is Docker's own network"),
    ("kind-too-old", "kind_version: v0.33.0", "kind_version: v0.1.0", 1,
     "management.kind_version: kind v0.1.0 is outside what gpulab supports"),
    ("pool-name", "pool_name: kind-ip-pool", "pool_name: Kind_Pool", 1,
     "components.metallb.pool_name: 'Kind_Pool' is not a DNS-1123 label"),
    ("model-hami-ignores", "model: NVIDIA-L4", "model: Tesla-L4", 1,
     "tenants[1].gpus[0].model: 'Tesla-L4' would be ignored by HAMi"),
    ("memory-past-int32", "memory_mib: 24576", "memory_mib: 2147483648", 1,
     "tenants[1].gpus[0].memory_mib: must be <= 2147483647"),
    ("lock-timeout-not-a-duration", "node_lock_timeout: 5s", "node_lock_timeout: 5 seconds", 1,
     "components.hami.node_lock_timeout: '5 seconds' must be a Go duration"),
    ("port-clash", "konnectivity_port: 8132", "konnectivity_port: 6443", 1,
     "tenants[0].control_plane.konnectivity_port: must differ from control_plane.port (6443)"),
]


@pytest.mark.parametrize(("old", "new", "occurrence", "expected"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_broken_profile_names_file_line_and_path(old, new, occurrence, expected) -> None:
    text, line = _mutate(old, new, occurrence)
    if expected.startswith("tenants[1].workers.image"):  # reported where the image is
        line = _line_of(text, "image: kindest/node", 3)
    problems = _problems(text)
    prefix = f"{SRC}:{line}: "
    matching = [p for p in problems if p.startswith(prefix + expected)]
    assert matching, f"expected {prefix}{expected!r} in {problems}"


def test_the_old_lock_key_is_refused_with_its_new_name() -> None:
    """`node_lock_expire` only set HAMI_NODELOCK_EXPIRE, which HAMi v2.10 overrides: a profile
    still using it must not silently keep the 5-minute lock."""
    text, _ = _mutate("node_lock_timeout: 5s", "node_lock_expire: 5s", 1)
    problems = _problems(text)
    assert any("components.hami: node_lock_expire was renamed node_lock_timeout" in p
               for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    text, _ = _mutate("memory_mib: 24576", "memory_mib: 0")
    text = text.replace("split: 10", "split: 0", 1).replace("- name: tenant-b", "- name: B b")
    problems = _problems(text)
    assert len(problems) == 3
    assert all(re.match(rf"{SRC}:\d+: \S", p) for p in problems)


def test_missing_required_field() -> None:
    text = TEXT.replace("    workers:\n      count: 1\n      image: kindest/node:v1.36.4@sha256:"
                        "099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed\n", "", 1)
    problems = _problems(text)
    assert any(p.endswith("tenants[0].workers: required field is missing") for p in problems)


def test_duplicate_yaml_key_is_refused() -> None:
    text, line = _mutate("    pod_cidr: 10.244.0.0/16\n", "    pod_cidr: 10.244.0.0/16\n"
                         "    pod_cidr: 10.245.0.0/16\n")
    problems = _problems(text)
    assert f"{SRC}:{line + 1}: tenants[0].pod_cidr: key appears twice" in problems


def test_invalid_yaml_has_a_line() -> None:
    problems = _problems("name: [unclosed\nstack: kamaji-hami\n")
    assert problems[0].startswith(f"{SRC}:") and "not valid YAML" in problems[0]


@pytest.mark.parametrize("text", ["", "- a list\n", "just a string\n"])
def test_non_mapping_documents(text: str) -> None:
    assert _problems(text)


def test_unknown_stack() -> None:
    problems = _problems(TEXT.replace("stack: kamaji-hami", "stack: kamaji-gpu"))
    assert any("stack: must be one of kamaji-hami" in p for p in problems)


def test_no_tenants() -> None:
    text = TEXT[: TEXT.index("tenants:")] + "tenants: []\n"
    problems = _problems(text)
    assert any(p.endswith("tenants: must not be empty") for p in problems)


def test_user_can_add_a_tenant_and_point_at_their_file(tmp_path: Path) -> None:
    extra = """
  - name: tenant-c
    kubernetes_version: v1.35.8
    workers:
      count: 2
      image: kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0
    gpus:
      - {model: NVIDIA-H100-80GB-HBM3, count: 4, memory_mib: 81559, split: 4, id_prefix: GPU-H-}
"""
    path = tmp_path / "mine.yaml"
    path.write_text(TEXT + extra)
    loaded = load_profile(str(path))
    assert not loaded.builtin
    tenant_c = loaded.profile.tenant("tenant-c")
    assert tenant_c.workers.count == 2
    assert tenant_c.device_ids(1) == ["GPU-H-4", "GPU-H-5", "GPU-H-6", "GPU-H-7"]


def test_unknown_builtin_and_missing_file() -> None:
    with pytest.raises(UsageError, match="unknown profile 'nope'"):
        load_profile("nope")
    with pytest.raises(UsageError, match="profile file not found"):
        load_profile("./missing.yaml")


def test_format_path() -> None:
    assert format_path(("tenants", 1, "gpus", 0, "memory_mib")) == "tenants[1].gpus[0].memory_mib"
    assert format_path(()) == ""
