"""`plan -o text/json/manifests` of every shape, held to committed snapshots (tests/data/plans/).

A refactor of the provider seam or a stack's plan builder must leave what `plan` shows exactly
as it was (#34: byte-identical before and after): kind without Docker (what plan shows of the
host is then pending, so it does not depend on the machine) for both stacks, and each
existing-cluster shape the tests serve over kmock: vcluster-kai on the write-up's GPU Operator
host, on a multi-node device-plugin cluster without a LoadBalancer, with KAI installed, and
with fake GPUs on named nodes; kamaji-hami on a cluster with its own LoadBalancer, with
cert-manager, and with worker containers on this host. What changes from run to run (the kmock
servers' ports, the test's folders) is replaced by a placeholder first.

After a change that is meant to change the plan, rewrite them and read the diff:

    GPULAB_WRITE_PLANS=1 python -m pytest tests/providers/test_plan_snapshots.py
"""

from __future__ import annotations

import os
import re
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab.cli import app
from tests.existing.kmock_cluster import ExistingCluster
from tests.existing.kmock_kamaji import KamajiCluster

SNAPSHOTS = Path(__file__).parents[1] / "data" / "plans"
TEAMS = ["team-nlp", "team-vision", "team-recommender"]
TENANTS = ["tenant-a", "tenant-b"]
# -o manifests of kamaji-hami: one cluster at a time (the management cluster and each tenant)
OUTPUTS = {"vcluster-kai": (("text",), ("json",), ("manifests",)),
           "kamaji-hami": (("text",), ("json",),
                           *(("manifests", "--cluster", c) for c in ["management", *TENANTS]))}

# name: (profile, the cluster (None: kind), the profile's `cluster:` section)
SHAPES: dict[str, tuple[str, Any, dict[str, Any] | None]] = {
    "kind-kamaji-hami": ("kamaji-hami", None, None),
    "kind-vcluster-kai": ("vcluster-kai", None, None),
    "existing-vcluster-kai-gpu-operator": ("vcluster-kai", {}, None),
    "existing-vcluster-kai-multi-node": ("vcluster-kai", {"shape": "multi-node"}, None),
    "existing-vcluster-kai-kai": ("vcluster-kai", {"kai": True}, None),
    "existing-vcluster-kai-fake-gpus": ("vcluster-kai", {"shape": "no-gpu"},
                                        {"provider": "existing",
                                         "fake_gpu_nodes": ["cpu-2", "cpu-3"]}),
    "existing-kamaji-hami-load-balancer": ("kamaji-hami", {"kamaji": True}, None),
    "existing-kamaji-hami-cert-manager": ("kamaji-hami", {"kamaji": True, "cert_manager": True},
                                          None),
    "existing-kamaji-hami-containers": ("kamaji-hami", {"kamaji": True},
                                        {"provider": "existing", "workers": "containers"}),
}


def _cluster(options: Any, folder: Path, profile: str) -> AbstractContextManager[Any]:
    if options is None:
        return nullcontext(None)
    options = dict(options)
    members = TENANTS if options.pop("kamaji", False) else TEAMS
    kind = KamajiCluster if profile == "kamaji-hami" else ExistingCluster
    return kind(folder, **options).running(members)


def _normal(text: str, cluster: Any, folder: Path) -> str:
    """The plan with what differs between runs replaced: each kmock server's URL (host and
    members alike, in the order they appear), the test's folder, where the built-in profiles
    are installed."""
    text = text.replace(str(folder), "<folder>")
    text = text.replace(str(Path(_builtin("kamaji-hami")).parent), "<profiles>")
    urls: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return urls.setdefault(match.group(0), f"<server-{len(urls) + 1}>")

    return re.sub(r"https?://127\.0\.0\.1:\d+", name, text) if cluster is not None else text


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_plan_is_what_it_was(shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile, options, section = SHAPES[shape]
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))
    # kind: pending; a short path that is never there (a unix socket's path has a length limit,
    # so one under a deep tmp_path would read as another error)
    monkeypatch.setenv("DOCKER_HOST", "unix:///gpulab-test-no-docker.sock")
    argv = ["-p", profile]
    if section is not None:
        document = yaml.safe_load(Path(_builtin(profile)).read_text(encoding="utf-8"))
        document["cluster"] = section
        file = tmp_path / "profile.yaml"
        file.write_text(yaml.safe_dump(document), encoding="utf-8")
        argv = ["-p", str(file)]
    with _cluster(options, tmp_path, profile) as cluster:
        if cluster is not None:
            argv += ["--kubeconfig", str(cluster.kubeconfig)]
        for output, *more in OUTPUTS[profile]:
            result = CliRunner().invoke(app, ["plan", *argv, "-o", output, *more],
                                        env={"COLUMNS": "200"})
            assert result.exit_code == 0, result.output
            shown = _normal(result.stdout + "\n--- stderr\n" + result.stderr, cluster, tmp_path)
            snapshot = SNAPSHOTS / f"{shape}.{'.'.join([output, *more[1:]])}.txt"
            if os.environ.get("GPULAB_WRITE_PLANS"):
                snapshot.parent.mkdir(parents=True, exist_ok=True)
                snapshot.write_text(shown, encoding="utf-8")
            assert snapshot.is_file(), f"no snapshot {snapshot.name}: GPULAB_WRITE_PLANS=1"
            assert shown == snapshot.read_text(encoding="utf-8"), f"{shape} -o {output}"


def _builtin(profile: str) -> str:
    from gpulab.profile.load import builtin_profiles

    return str(builtin_profiles()[profile])
