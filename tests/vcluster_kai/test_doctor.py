"""Doctor for the vcluster-kai profile: budgets from its teams, no tenant CIDRs to compare."""

from __future__ import annotations

from gpulab.adapters.base import NetworkInfo, RuntimeInfo
from gpulab.doctor import HostSnapshot, diagnose, needs
from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

# Architecture: moby's own example of GET /info (swagger.yaml SystemInfo, tests/upstream_docker)
GOOD = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian GNU/Linux 12",
                   architecture="x86_64")


def test_needs_grow_with_teams(kai_profile: VclusterKaiProfile) -> None:
    memory, disk, cpus = needs(kai_profile)
    data = kai_profile.model_dump(mode="json")
    data["teams"] = data["teams"][:1]
    fewer = needs(VclusterKaiProfile.model_validate(data))
    assert memory > fewer[0] > 4 and disk > fewer[1] >= 12 and cpus == 2
    assert memory < needs(load_profile("kamaji-hami").profile)[0] + 2


def test_a_healthy_host_is_all_ok(kai_profile: VclusterKaiProfile) -> None:
    snapshot = HostSnapshot(docker=GOOD, disk_free_bytes=200 * 1024**3, inotify_watches=524288,
                            inotify_instances=512, swap_active=False, kind_version="v0.33.0",
                            helm_version="v3.19.2", privileged_probe="",
                            probe_image="kindest/node:v1.36.4",
                            networks=(NetworkInfo("id", "kind", [{"Subnet": "10.244.0.0/16"}]),))
    findings = {f.check: f for f in diagnose(snapshot, kai_profile, "vcluster-kai")}
    assert {f.status for f in findings.values()} == {"ok"}, findings
    assert findings["subnets"].detail == "network 'kind' 10.244.0.0/16"
