"""The route from this host to an API server is proved within seconds, before the first step
that needs it, and a missing one stops `up` in one line naming the engine and the fix."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gpulab import core
from gpulab.docker_engines import Engine
from gpulab.errors import HostError
from gpulab.paths import lab_dir
from gpulab.reach import prove, route_fix
from tests.fakes import FakeWorld, fake_adapters

DESKTOP = Engine("docker-desktop", "Docker Desktop", "OperatingSystem 'Docker Desktop'")


class Dialer:
    """Refuses the first `refusals` connects to each port in `refuse` (all of them: None)."""

    def __init__(self, refuse: dict[int, int | None] | None = None) -> None:
        self.refuse = refuse or {}
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int, timeout: float) -> None:
        assert 0 < timeout <= 2.0
        self.calls.append((host, port))
        if port in self.refuse:
            left = self.refuse[port]
            if left is None or left > 0:
                self.refuse[port] = None if left is None else left - 1
                raise ConnectionRefusedError(111, "Connection refused")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_route_that_answers_is_proved_at_once() -> None:
    dial = Dialer()
    prove(dial, "https://127.0.0.1:30061", "tenant-a's API server", DESKTOP, "fix")
    assert dial.calls == [("127.0.0.1", 30061)]


def test_a_refused_connect_is_retried_for_a_few_seconds() -> None:
    dial, clock = Dialer({30061: 3}), Clock()
    prove(dial, "https://127.0.0.1:30061", "x", DESKTOP, "fix", sleep=clock.sleep, clock=clock)
    assert len(dial.calls) == 4 and clock.now == pytest.approx(1.5)


def test_no_route_is_one_line_with_the_engine_and_the_fix() -> None:
    dial, clock = Dialer({30061: None}), Clock()
    fix = route_fix(DESKTOP, "gpulab-lab-control-plane", 30061)
    with pytest.raises(HostError) as err:
        prove(dial, "https://127.0.0.1:30061", "tenant-a's API server", DESKTOP, fix,
              sleep=clock.sleep, clock=clock)
    assert clock.now == pytest.approx(5.0)  # within seconds, not minutes
    assert err.value.message == ("this host does not reach tenant-a's API server at "
                                 "127.0.0.1:30061 (tried 5 s, Docker Desktop): Connection "
                                 "refused")
    assert "\n" not in err.value.message
    assert err.value.hint.startswith("`docker port gpulab-lab-control-plane` must list "
                                     "127.0.0.1:30061")
    assert "restart Docker Desktop" in err.value.hint


def test_the_fix_fits_the_engine() -> None:
    linux = Engine("linux", "Docker Engine (rootful) on this Linux host", "", routes_nodes=True)
    assert "firewall" in route_fix(linux, "n", 1) and "restart" not in route_fix(linux, "n", 1)
    assert "restart colima" in route_fix(replace(DESKTOP, kind="colima", label="colima"), "n", 1)
    assert route_fix(None, "", 1) == "`docker ps` must list 127.0.0.1:1; then gpulab up (it " \
                                     "resumes)"


def _up(profile: Any, world: FakeWorld, dial: Dialer) -> Any:
    adapters = replace(fake_adapters(world, lab_dir("kamaji-hami")), dial=dial)
    return core.up(profile, None, lambda _e: None, adapters=adapters, sleep=lambda _s: None)


def test_up_proves_each_tenant_route_before_its_workers_join(kamaji_profile: Any) -> None:
    dial = Dialer()
    result = _up(kamaji_profile, FakeWorld(), dial)
    assert result.ok, [str(r.error) for r in result.failures]
    assert ("127.0.0.1", 30061) in dial.calls and ("127.0.0.1", 30062) in dial.calls


def test_up_stops_at_the_control_plane_when_the_host_cannot_reach_it(
        kamaji_profile: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpulab.reach

    clock = Clock()
    monkeypatch.setattr(gpulab.reach, "_sleep", clock.sleep)
    monkeypatch.setattr(gpulab.reach, "_clock", clock)
    world = FakeWorld()

    def dial(host: str, port: int, timeout: float) -> None:
        if port == 30061:
            raise ConnectionRefusedError(111, "Connection refused")

    result = _up(kamaji_profile, world, dial)  # type: ignore[arg-type]
    failed = {r.name: r for r in result.failures}
    assert list(failed) == ["tenant-a/control-plane"]
    assert ("this host does not reach tenant-a's API server at 127.0.0.1:30061 (tried 5 s, "
            "Docker Engine (rootful) on this Linux host): Connection refused"
            ) in str(failed["tenant-a/control-plane"].error)
    # a lab kind made without the tenant ports cannot get them: the hint says so
    assert "has none: gpulab down, then gpulab up" in str(failed["tenant-a/control-plane"].error)
    joins = [c for c in world.faults.calls if c.startswith("docker.exec:kubeadm:join")]
    assert not any("tenant-a" in c for c in joins)
    assert {r.name for r in result.results if r.outcome.name == "DONE"} >= {
        "tenant-b/control-plane", "tenant-b/join"}


def test_the_management_api_is_proved_after_kind_made_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpulab.reach
    from gpulab.providers.kind import ManagementCluster

    clock = Clock()
    monkeypatch.setattr(gpulab.reach, "_sleep", clock.sleep)
    monkeypatch.setattr(gpulab.reach, "_clock", clock)

    class Kind:
        def kubeconfig(self, name: str) -> str:
            return ("apiVersion: v1\nkind: Config\nclusters:\n- name: kind\n  cluster:\n"
                    "    server: https://127.0.0.1:41234\n")

    class Runtime:
        def info(self) -> Any:
            from gpulab.adapters.base import RuntimeInfo

            return RuntimeInfo("27.1.1", "1.46", 4, 8 * 1024**3, "Docker Desktop",
                               name="docker-desktop")

    class Ctx:
        notes: list[str] = []

        def __init__(self, adapters: Any) -> None:
            self.adapters = adapters

        def note(self, text: str) -> None:
            self.notes.append(text)

    from gpulab.adapters.base import LabAdapters

    dial = Dialer({41234: None})
    adapters = LabAdapters(runtime=Runtime(), kind=Kind(), kube=None, helm=None,  # type: ignore[arg-type]
                           fetch=None, lab_dir=tmp_path, dial=dial)  # type: ignore[arg-type]
    step = ManagementCluster({}, "lab")
    with pytest.raises(HostError) as err:
        step._save_kubeconfig(Ctx(adapters), adapters)  # type: ignore[arg-type]
    assert err.value.message.startswith("this host does not reach the management cluster's API "
                                        "server at 127.0.0.1:41234")
    assert "Docker Desktop" in err.value.message
    assert "docker port gpulab-lab-control-plane" in err.value.hint
    ok = replace(adapters, dial=Dialer())
    ctx = Ctx(ok)
    step._save_kubeconfig(ctx, ok)  # type: ignore[arg-type]
    assert any("reaches the management API at https://127.0.0.1:41234" in n for n in ctx.notes)
