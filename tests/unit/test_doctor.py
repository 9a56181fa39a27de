"""Doctor's findings are pure functions of a host snapshot."""

from __future__ import annotations

from gpulab.adapters.base import ContainerInfo, NetworkInfo, RuntimeInfo
from gpulab.doctor import HostSnapshot, diagnose, needs
from gpulab.naming import LABEL_LAB

# Architecture: moby's own example of GET /info (swagger.yaml SystemInfo, tests/upstream_docker)
GOOD = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian GNU/Linux 12",
                   architecture="x86_64")
KIND_NET = NetworkInfo("id", "kind", [{"Subnet": "fc00::/64"}, {"Subnet": "172.18.0.0/16"}])


def _snapshot(**changes) -> HostSnapshot:
    base = {"docker": GOOD, "disk_free_bytes": 200 * 1024**3, "inotify_watches": 524288,
                "inotify_instances": 512, "swap_active": False, "kind_version": "v0.33.0",
                "helm_version": "v3.19.2", "networks": (KIND_NET,)}
    base.update(changes)
    return HostSnapshot(**base)


def _by_check(findings):
    return {f.check: f for f in findings}


def test_healthy_host_is_all_ok(kamaji_profile) -> None:
    findings = diagnose(_snapshot(privileged_probe="", probe_image="kindest/node:v1"),
                        kamaji_profile, "kamaji-hami")
    # the one image whose platforms nobody could confirm (docs/images.md) stays a warning
    odd = [(f.check, f.status, f.detail.split(":")[0]) for f in findings if f.status != "ok"]
    assert odd == [("image platform", "warn", "registry.k8s.io/coredns/coredns")]
    assert {f.check for f in findings} >= {"docker", "engine", "privileged", "memory", "cpu",
                                           "disk", "inotify watches",
                                           "inotify instances", "swap", "kind", "helm", "names",
                                           "subnets"}


def test_docker_unreachable_fails_first(kamaji_profile) -> None:
    findings = diagnose(_snapshot(docker=None, docker_error="connection refused"),
                        kamaji_profile, "x")
    assert [(f.check, f.status) for f in findings] == [("docker", "fail")]
    assert "connection refused" in findings[0].detail and findings[0].fix


def test_low_limits_warn_with_the_fix(kamaji_profile) -> None:
    small = RuntimeInfo("28.2.2", "1.50", 2, 4 * 1024**3, "Debian")
    found = _by_check(diagnose(_snapshot(docker=small, inotify_watches=8192, inotify_instances=128,
                                         disk_free_bytes=3 * 1024**3, swap_active=True),
                               kamaji_profile, "x"))
    # not enough memory for the profile is a failure, with the numbers
    assert found["memory"].status == "fail"
    assert "4.0 GiB for Docker; the profile needs about" in found["memory"].detail
    assert found["disk"].status == "warn"
    assert found["inotify watches"].fix == "sudo sysctl fs.inotify.max_user_watches=524288"
    assert found["inotify instances"].fix == "sudo sysctl fs.inotify.max_user_instances=512"
    # swap is tolerated (failSwapOn: false, as kind): never a reason to swapoff
    assert found["swap"].status == "ok" and "tolerated" in found["swap"].detail
    assert "swapoff" not in found["swap"].fix


def test_one_cpu_fails(kamaji_profile) -> None:
    one = RuntimeInfo("28.2.2", "1.50", 1, 32 * 1024**3, "Debian")
    assert _by_check(diagnose(_snapshot(docker=one), kamaji_profile, "x"))["cpu"].status == "fail"


def test_missing_or_old_tools(kamaji_profile) -> None:
    found = _by_check(diagnose(_snapshot(kind_version=None, helm_version="v3.2.0"),
                               kamaji_profile, "x"))
    assert found["kind"].status == "fail" and "--install-tools" in found["kind"].fix
    assert found["helm"].status == "fail"
    other_kind = _by_check(diagnose(_snapshot(kind_version="v0.31.0"), kamaji_profile, "x"))
    assert other_kind["kind"].status == "warn"
    # a helm of a major whose post-renderer gpulab does not know is not "newer", it is refused
    helm5 = _by_check(diagnose(_snapshot(helm_version="v5.0.0"), kamaji_profile, "x"))["helm"]
    assert (helm5.status, helm5.fix) == ("fail", "install helm v3.19.2 or newer, of major "
                                                 "version 3 or 4")
    helm4 = _by_check(diagnose(_snapshot(helm_version="v4.1.4"), kamaji_profile, "x"))["helm"]
    assert helm4.status == "ok"


def test_name_collision_with_foreign_container(kamaji_profile) -> None:
    foreign = ContainerInfo("1", "gpulab-lab1-tenant-a-worker", "img", "running", {})
    mine = ContainerInfo("2", "gpulab-lab1-tenant-b-worker", "img", "running", {LABEL_LAB: "lab1"})
    found = _by_check(diagnose(_snapshot(containers=(foreign, mine)), kamaji_profile, "lab1"))
    assert found["names"].status == "fail"
    assert "gpulab-lab1-tenant-a-worker" in found["names"].detail
    resumable = _by_check(diagnose(_snapshot(containers=(mine,)), kamaji_profile, "lab1"))
    assert resumable["names"].status == "ok" and "resumes" in resumable["names"].detail


def test_subnet_collision(kamaji_profile) -> None:
    clash = NetworkInfo("id", "kind", [{"Subnet": "10.244.0.0/16"}])
    found = _by_check(diagnose(_snapshot(networks=(clash,)), kamaji_profile, "x"))
    assert found["subnets"].status == "fail"
    assert "tenant-a.pod_cidr 10.244.0.0/16 overlaps" in found["subnets"].detail


def test_needs_grow_with_tenants(kamaji_profile) -> None:
    memory, disk, cpus = needs(kamaji_profile)
    assert memory > 4 and disk > 12 and cpus == 2


# --------------------------------------------------------------------------- privileged


def test_rootless_on_cgroup_v1_fails_with_kinds_words(kamaji_profile) -> None:
    info = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian", cgroup_version="1",
                       security_options=("name=rootless",))
    found = _by_check(diagnose(_snapshot(docker=info), kamaji_profile, "x"))["privileged"]
    assert found.status == "fail"
    assert "requires cgroup v2" in found.fix and "kind.sigs.k8s.io/docs/user/rootless" in found.fix


def test_rootless_without_delegation_fails(kamaji_profile) -> None:
    info = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian", cgroup_version="2",
                       security_options=("name=rootless",), cpu_shares=False)
    found = _by_check(diagnose(_snapshot(docker=info), kamaji_profile, "x"))["privileged"]
    assert found.status == "fail" and 'Delegate=yes' in found.fix


def test_an_engine_that_refuses_privileged_fails_doctor(kamaji_profile) -> None:
    found = _by_check(diagnose(_snapshot(privileged_probe="unable to apply caps: operation "
                                                          "not permitted",
                                         probe_image="kindest/node:v1.36.4"),
                               kamaji_profile, "x"))["privileged"]
    assert found.status == "fail"
    assert "unable to apply caps" in found.detail and "kindest/node" in found.detail
    assert "rootful Docker" in found.fix


def test_privileged_ok_when_probed_and_unknown_when_not(kamaji_profile) -> None:
    probed = _by_check(diagnose(_snapshot(privileged_probe="", probe_image="kindest/node:v1"),
                                kamaji_profile, "x"))["privileged"]
    assert probed.status == "ok" and "probed with kindest/node:v1" in probed.detail
    unprobed = _by_check(diagnose(_snapshot(), kamaji_profile, "x"))["privileged"]
    # not knowing is not ok: unknown, why, and what to run
    assert unprobed.status == "unknown" and "not probed" in unprobed.detail
    assert unprobed.fix == "gpulab doctor without --no-pull pulls the node image and probes " \
                           "with it"
    plugin = RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian",
                         authorization_plugins=("opa-docker-authz",))
    warned = _by_check(diagnose(_snapshot(docker=plugin), kamaji_profile, "x"))["privileged"]
    assert warned.status == "warn" and "opa-docker-authz" in warned.detail


def test_a_chart_pinned_to_a_commit_needs_git(kamaji_profile) -> None:
    found = _by_check(diagnose(_snapshot(git_found=False), kamaji_profile, "x"))["git"]
    assert found.status == "fail" and "github.com/clastix/kamaji@ddbabd87ed0e" in found.detail
    assert _by_check(diagnose(_snapshot(), kamaji_profile, "x"))["git"].status == "ok"


def test_no_git_finding_without_a_git_chart() -> None:
    from gpulab.stacks import load_profile

    kai_profile = load_profile("vcluster-kai").profile
    assert not [c for c in kai_profile.charts() if c.commit]
    assert kai_profile.charts()  # it does name charts, just none from git
    assert "git" not in _by_check(diagnose(_snapshot(git_found=False), kai_profile, "x"))


def test_the_probe_falls_back_to_images_on_the_host_and_skips_shell_less_ones() -> None:
    from gpulab.adapters.base import ContainerSpec
    from gpulab.doctor import _probe_privileged

    class Runtime:
        def __init__(self) -> None:
            self.probed: list[str] = []

        def image_present(self, image: str) -> bool:
            return False  # the profile's kindest/node is not pulled (--no-pull, or it failed)

        def local_images(self, limit: int = 20) -> list[str]:
            return ["distroless:1", "busybox:1"]

        def probe_privileged(self, spec: ContainerSpec) -> str:
            self.probed.append(spec.image)
            if spec.image == "distroless:1":
                return 'exec: "/bin/sh": stat /bin/sh: no such file or directory'
            return "unable to apply caps: operation not permitted"

    def node(image: str) -> ContainerSpec:
        return ContainerSpec(name="probe", image=image, network="", labels={})

    runtime = Runtime()
    image, answer = _probe_privileged(runtime, ("kindest/node:v1.36.4",), node)  # type: ignore[arg-type]
    assert runtime.probed == ["distroless:1", "busybox:1"]
    assert (image, answer) == ("busybox:1", "unable to apply caps: operation not permitted")


def test_tenant_ranges_must_not_overlap_the_hosts_routes(kamaji_profile) -> None:
    found = _by_check(diagnose(_snapshot(host_routes=("10.96.0.0/24",)), kamaji_profile,
                               "x"))["subnets"]
    assert found.status == "fail"
    assert "tenant-a.service_cidr 10.96.0.0/16 overlaps the host's route to 10.96.0.0/24" in (
        found.detail)


def test_the_hosts_routes_are_read_from_proc(tmp_path) -> None:
    from gpulab.doctor import _host_routes

    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
        "eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\n"  # default: left out
        "eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\n"  # 172.17.0.0/16
        "wg0\t0000600A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n")  # 10.96.0.0/24
    assert _host_routes(str(table)) == ("10.96.0.0/24", "172.17.0.0/16")


def test_an_unwritable_or_full_state_folder_fails(kamaji_profile, tmp_path) -> None:
    import os

    from gpulab.doctor import _state_problem

    found = _by_check(diagnose(_snapshot(state_problem="no permission to write /x"),
                               kamaji_profile, "x"))["state"]
    assert found.status == "fail" and "GPULAB_HOME" in found.fix
    assert _state_problem(tmp_path / "labs") == ""
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "is not a folder" in _state_problem(blocker / "labs")
    if os.geteuid() != 0:  # root writes everywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "no permission to write" in _state_problem(locked / "labs")
