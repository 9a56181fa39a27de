"""A run's long waits are never silent: every 30 s of waiting for a pod (or for the namespace to
go) says what it last saw, also without -v. Here nobody schedules the pods (no FakeHami)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.cluster.execute import Timeouts, run_plan
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from gpulab.verify.observe import Clock
from tests.cluster import builders as b
from tests.kamaji_hami.fakes import FakeClock

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SERVER = "https://gpu.example:6443"
TIMEOUTS = Timeouts(running=400, refused=30, cleanup=10, interval=2)
PENDING = "Pending, schedulerName default-scheduler, node -"  # no webhook either


def test_a_pod_that_is_never_scheduled_is_reported_every_30s() -> None:
    api, clock = b.shape_one_card_per_node(), FakeClock()
    planned = plan(inventory(read_cluster(api, "prod", SERVER)), "abcdefabcdef")
    said: list[str] = []

    run = run_plan(api, planned, timeouts=TIMEOUTS, clock=Clock(clock.now, clock.sleep),
                   say=said.append)

    waits = [m for m in said if m.startswith("still waiting for gpu-share-1 ")]
    assert waits[0] == f"still waiting for gpu-share-1 ({PENDING}): 30s of 6m40s"
    assert waits[1] == f"still waiting for gpu-share-1 ({PENDING}): 1m of 6m40s"
    assert waits[-1] == f"still waiting for gpu-share-1 ({PENDING}): 6m30s of 6m40s"
    assert len(waits) == 13  # one line per 30 s of the 400 s wait, no more
    assert "gpu-share-1: timeout after 400s" in said
    assert run.pods is not None and run.pods[0].outcome == "timeout"


def test_the_cli_shows_long_waits_without_v(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.usecases import anycluster

    api, clock = b.shape_one_card_per_node(), FakeClock()
    config = b.kubeconfig_file(tmp_path / "prod.kubeconfig")
    deadlines: list[float | None] = []

    @contextlib.contextmanager
    def clients(_members: Any, **_kwargs: Any) -> Any:
        yield [("prod", SERVER, api)]

    def reading(*args: Any, deadline: float | None = None, **kwargs: Any) -> Any:
        deadlines.append(deadline)
        return read_cluster(*args, deadline=deadline, **kwargs)

    monkeypatch.setattr(anycluster, "_cluster_clients", clients)
    monkeypatch.setattr("gpulab.cluster.run.read_cluster", reading)
    monkeypatch.setattr("gpulab.cluster.run.Clock", lambda: Clock(clock.now, clock.sleep))
    monkeypatch.setattr("gpulab.cluster.execute.Timeouts", lambda: TIMEOUTS)

    result = CliRunner().invoke(app, ["verify", "--kubeconfig", str(config),
                                      "--discovery-timeout", "2m"])

    assert deadlines == [120.0]
    lines = result.stderr.splitlines()
    assert f"  prod: still waiting for gpu-share-1 ({PENDING}): 30s of 6m40s" in lines
    assert "  prod: gpu-share-1: timeout after 400s" not in lines, "the rest needs -v"
    assert result.exit_code == 3, result.output


def test_discovery_timeout_is_read_like_request_timeout(tmp_path: Path) -> None:
    config = b.kubeconfig_file(tmp_path / "prod.kubeconfig")
    bad = CliRunner().invoke(app, ["verify", "--kubeconfig", str(config), "--inspect",
                                   "--discovery-timeout", "soon"])
    assert bad.exit_code == 2
    assert "--discovery-timeout: 'soon' is not a duration" in bad.output
    lab = CliRunner().invoke(app, ["verify", "--discovery-timeout", "10s"])
    assert lab.exit_code == 2
    assert "--discovery-timeout goes with a cluster gpulab did not build" in lab.output
