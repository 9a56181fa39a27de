"""`up`, `status` and `down` of the vcluster-kai profile against the real Docker engine, on a
host that cannot run kind (a fake `kind` fails the way kind does without its node image)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.naming import LABEL_LAB
from tests.docker.conftest import unique
from tests.docker.test_cli_lifecycle import FAKE_KIND
from tests.host import require_helm

runner = CliRunner()


@pytest.fixture
def fake_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kind = bin_dir / "kind"
    kind.write_text(FAKE_KIND)
    kind.chmod(kind.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    return bin_dir


def test_up_stops_at_kind_and_leaves_nothing(fake_kind: Path, client, _isolated_home: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    helm_dir = str(Path(require_helm()).parent)  # after the fake kind: a real kind may be there
    monkeypatch.setenv("PATH", os.pathsep.join([str(fake_kind), helm_dir,
                                                os.environ.get("PATH", "")]))
    lab = unique("kai")
    result = runner.invoke(app, ["up", "-p", "vcluster-kai", "--name", lab, "--skip-preflight"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "step 'management/cluster' failed" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"}) == []
    assert not (_isolated_home / "labs" / lab).exists()
    down = runner.invoke(app, ["down", "-p", "vcluster-kai", "--name", lab])
    assert down.exit_code == 0 and "nothing to remove" in down.stderr


def test_status_on_nothing(client) -> None:
    lab = unique("kai")
    result = runner.invoke(app, ["status", "-p", "vcluster-kai", "--name", lab, "-o", "json"])
    assert result.exit_code == 6, result.stderr  # no such lab: one line, nothing on stdout
    assert result.stdout == "" and f"error: no lab named '{lab}'" in result.stderr
    from gpulab import core
    from gpulab.stacks import load_profile

    core.record_profile(lab, load_profile("vcluster-kai"))  # its folder, nothing built yet
    result = runner.invoke(app, ["status", "--name", lab, "-o", "json"])
    assert result.exit_code == 4, result.stderr  # shown, but not up
    info = json.loads(result.stdout)
    assert info["exists"] is True and info["stack"] == "vcluster-kai"
    assert set(info["tenants"]) == {"team-nlp", "team-vision", "team-recommender"}
    text = runner.invoke(app, ["status", "--name", lab])
    assert text.exit_code == 4 and f"error: lab '{lab}' is not up" in text.stderr
    assert "team-nlp: vCluster in vcluster-team-nlp" in text.stdout
