"""A lab on a cluster gpulab did not build, once the cluster its kubeconfigs reach is another
one (issue 23: "a kubeconfig that points at another cluster is refused"), for both stacks,
driven through the CLI after a kmock `up` (tests/existing/kmock_cluster.py, kmock_kamaji.py).

lab.json keeps the cluster's identity: its server, context and the uid of its `kube-system`
namespace, which lives as long as the cluster does (gpulab/providers/base.py:3-6); the uid
decides, the server and context do not (providers.existing: _survey for `up`, teardown for
`down`, same_cluster for the rest). Three cases:

(a) the kubeconfig `up` was given now names another cluster (another server, another uid):
    `up` and `down` refuse it. status, verify and logs go by the kubeconfig `up` saved in the
    lab's folder, so they keep reaching the lab's own cluster and the other hears nothing.
(b) the lab's cluster was rebuilt behind the same address (the same server URL, another
    kube-system uid: the case the uid is kept for). Played by giving kmock's kube-system a new
    uid in place; the objects of the lab's names stay, so any command that went on would show
    in the cluster's state. Every command that connects refuses with one line, exit 2, asking
    the cluster nothing but /version and its kube-system namespace.
(c) another context name for the same server and uid: the same cluster, not refused.
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab import core, lab_record
from gpulab.cli import app
from gpulab.errors import HostError, UsageError
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile
from tests.existing import test_existing, test_kamaji_existing
from tests.existing.kmock_cluster import ExistingCluster, FakeHelm
from tests.existing.kmock_kamaji import KamajiCluster, KamajiHelm

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

runner = CliRunner()
NEW_UID = "rebuilt-kube-system-uid"
# what a command that refuses may ask the cluster: whether it answers, and who it is
WHO_IS_IT = {("GET", "/version"), ("GET", "/api/v1/namespaces/kube-system")}


@dataclass(frozen=True)
class Stack:
    lab: str
    members: tuple[str, ...]
    make: Callable[[Path], ExistingCluster]
    build: Callable[[ExistingCluster, Path], Any]  # `up` with kmock's adapters
    helm: Callable[[ExistingCluster], FakeHelm]
    clients: str  # what verify opens the lab's clusters with


STACKS = [
    Stack("vcluster-kai", tuple(test_existing.TEAMS), ExistingCluster,
          test_existing._up, FakeHelm,
          "gpulab.stacks.vcluster_kai.run.lab_clients"),
    Stack("kamaji-hami", tuple(test_kamaji_existing.TENANTS), KamajiCluster,
          lambda c, _p: test_kamaji_existing._up(c),  # type: ignore[arg-type]
          KamajiHelm,  # type: ignore[arg-type]
          "gpulab.stacks.kamaji_hami.run.lab_clients"),
]
IDS = [s.lab for s in STACKS]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "user.kubeconfig"))


@pytest.fixture
def verify_reached(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """verify's clients of the lab's clusters: opening them is noted and stops verify there
    (exit 4, 'verify reached the lab's clusters'): whether verify went on is what is asked."""
    reached: list[str] = []

    @contextmanager
    def clients(lab: str, _folder: Path, _members: list[str]) -> Iterator[Any]:
        reached.append(lab)
        raise HostError("verify reached the lab's clusters (the test stops it here)")
        yield  # pragma: no cover

    for stack in STACKS:
        monkeypatch.setattr(stack.clients, clients)
    return reached


def _built(stack: Stack, cluster: ExistingCluster, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`up` the stack's lab; status reads each member at its kmock server. The cluster as
    it was before `up`."""
    before = cluster.state()
    result = stack.build(cluster, tmp_path)
    assert result.ok, [str(f.error) for f in result.failures]
    monkeypatch.setattr(core, "_status_client", cluster.client)
    monkeypatch.setattr(core, "connect_runtime", _no_docker)
    return before


def _no_docker(*_a: Any, **_k: Any) -> Any:
    raise HostError("no Docker engine here (the test)")


def _asked(cluster: ExistingCluster, since: int) -> set[tuple[str, str]]:
    return {(m, p.split("?")[0]) for m, p in cluster.host.calls()[since:]}


def _one_line(result: Any) -> str:
    """The error line of a refused command, its words joined (Rich wraps at the width)."""
    assert result.stderr.count("error:") == 1, result.stderr
    assert result.stdout == "", result.stdout
    return " ".join(result.stderr.split())


def _rebuild(cluster: ExistingCluster) -> str:
    """The cluster rebuilt behind the same address: its kube-system namespace is another one
    (a new uid); the old uid is returned."""
    def swap() -> str:
        meta = cluster.host.namespaces["kube-system"]["metadata"]
        old, meta["uid"] = meta["uid"], NEW_UID
        return str(old)

    return str(cluster.host.call(swap))


# --------------------------------------------------------------------------- (a)


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS, ids=IDS)
def test_a_kubeconfig_now_naming_another_cluster_is_refused_by_up_and_down(
        stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        verify_reached: list[str]) -> None:
    with stack.make(tmp_path).running(list(stack.members)) as cluster:
        _built(stack, cluster, tmp_path, monkeypatch)
        record = lab_record.read(stack.lab)
        assert record is not None
        uid = record.cluster["kube_system_uid"]
        assert record.cluster["kubeconfig"] == str(cluster.kubeconfig)
        lab_state = cluster.state()
        with ExistingCluster(tmp_path, name="other").running([]) as other:
            other_state = other.state()
            other_uid = other.host.namespaces["kube-system"]["metadata"]["uid"]
            assert other.host.url != cluster.host.url and other_uid != uid
            kept = cluster.kubeconfig.read_text()
            # the file `up` was given (lab.json names it) now points at the other cluster
            shutil.copy(other.kubeconfig, cluster.kubeconfig)
            for argv in (["up", "--name", stack.lab],
                         ["up", "--name", stack.lab, "--kubeconfig", str(other.kubeconfig)]):
                result = runner.invoke(app, argv)
                assert result.exit_code == 2, (argv, result.output)
                line = _one_line(result)
                assert (f"error: lab '{stack.lab}' is in another cluster (kube-system uid {uid} "
                        f"at {cluster.host.url}); this kubeconfig reaches {other_uid} at "
                        f"{other.host.url}") in line, line
            for argv in (["down", "--name", stack.lab],
                         ["down", "--name", stack.lab, "--kubeconfig", str(other.kubeconfig)]):
                result = runner.invoke(app, argv)
                assert result.exit_code == 2, (argv, result.output)
                line = _one_line(result)
                assert (f"error: lab '{stack.lab}' is in the cluster with kube-system uid {uid} "
                        f"({cluster.host.url}); the kubeconfig now reaches {other_uid} at "
                        f"{other.host.url}: nothing removed") in line, line
            asked_other = len(other.host.calls())
            assert _asked(other, 0) <= WHO_IS_IT  # not even an access review
            assert other.state() == other_state  # nothing created or deleted there

            # status, verify and logs go by the kubeconfig `up` saved: the lab's own cluster
            status = runner.invoke(app, ["status", "--name", stack.lab, "-o", "json"])
            assert status.exit_code == 0, status.output
            assert json.loads(status.stdout)["management"]["cluster"] == (
                f"existing {cluster.host.url} (context {record.cluster['context']})")
            checked = runner.invoke(app, ["verify", "--name", stack.lab])
            assert checked.exit_code == 4 and verify_reached == [stack.lab], checked.output
            bundle = core.collect_logs(stack.lab, tmp_path / "bundle", core.lab_provider(
                stack.lab), load_profile(stack.lab).profile, tar=False, kube=cluster.client)
            assert (bundle / "management" / "owned.json").is_file()
            assert len(other.host.calls()) == asked_other  # the other heard nothing more
            cluster.kubeconfig.write_text(kept)
        assert cluster.state() == lab_state
        assert lab_record.read(stack.lab) is not None  # the lab is still there to remove


# --------------------------------------------------------------------------- (b)


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS, ids=IDS)
def test_the_cluster_rebuilt_behind_the_same_address_is_refused_by_every_command(
        stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        verify_reached: list[str]) -> None:
    with stack.make(tmp_path).running(list(stack.members)) as cluster:
        found = _built(stack, cluster, tmp_path, monkeypatch)
        record = lab_record.read(stack.lab)
        assert record is not None
        server = cluster.host.url
        assert record.cluster["server"] == server
        uid = _rebuild(cluster)
        assert record.cluster["kube_system_uid"] == uid != NEW_UID
        rebuilt = cluster.state()
        since = len(cluster.host.calls())
        member = stack.members[0]
        bundle = tmp_path / "bundle"
        commands = [["up", "--name", stack.lab], ["status", "--name", stack.lab],
                    ["status", "--name", stack.lab, "-o", "json"],
                    ["verify", "--name", stack.lab], ["logs", str(bundle), "--name", stack.lab],
                    ["down", "--name", stack.lab]]
        commands.append(["kubeconfig", member, "--name", stack.lab, "--port-forward", "--port",
                         "0"] if stack.lab == "vcluster-kai" else
                        ["join", member, "--name", stack.lab])
        saved = (f"lab '{stack.lab}' is in the cluster with kube-system uid {uid} ({server}); "
                 f"the kubeconfig it saved now reaches {NEW_UID} at {server}: another cluster, "
                 "nothing read or changed there")
        expected = {
            "up": f"lab '{stack.lab}' is in another cluster (kube-system uid {uid} at "
                  f"{server}); this kubeconfig reaches {NEW_UID} at {server}",
            "down": f"lab '{stack.lab}' is in the cluster with kube-system uid {uid} "
                    f"({server}); the kubeconfig now reaches {NEW_UID} at {server}: nothing "
                    "removed"}
        for argv in commands:
            result = runner.invoke(app, argv)
            assert result.exit_code == 2, (argv, result.output)
            line = _one_line(result)
            assert f"error: {expected.get(argv[0], saved)}" in line, (argv, line)
        assert verify_reached == []  # verify stopped before opening the lab's clusters
        assert not bundle.exists()  # logs wrote nothing
        assert _asked(cluster, since) <= WHO_IS_IT, _asked(cluster, since) - WHO_IS_IT
        assert cluster.state() == rebuilt  # nothing created, changed or deleted

        # the same through core, as the CLI calls it
        profile = load_profile(stack.lab).profile
        with pytest.raises(UsageError, match="another cluster, nothing read or changed"):
            core.status(stack.lab, core.lab_provider(stack.lab), profile)
        with pytest.raises(UsageError, match="another cluster, nothing read or changed"):
            core.verify(profile, stack.lab, checks=None, keep=False)
        # `kubeconfig` prints a saved file's path: it asks the cluster nothing
        asked = len(cluster.host.calls())
        printed = runner.invoke(app, ["kubeconfig", member, "--name", stack.lab])
        assert printed.exit_code == 0, printed.output
        assert printed.stdout.strip().endswith(f"{member}.kubeconfig")
        assert len(cluster.host.calls()) == asked

        # the lab's own cluster back (as if the kubeconfig reached it again): down removes
        # the lab, and the cluster is as `up` found it
        cluster.host.call(lambda: cluster.host.namespaces["kube-system"]["metadata"].update(
            uid=uid))
        kept = lab_record.read(stack.lab)
        assert kept is not None
        teardown = core.remove_lab(stack.lab, core.lab_provider(
            stack.lab, helm=lambda _p: stack.helm(cluster)))
        assert not teardown.leftovers, teardown.leftovers
        assert cluster.state() == found


# --------------------------------------------------------------------------- (c)


def _renamed(cluster: ExistingCluster, folder: Path) -> Path:
    """The same cluster (server, credentials) under another context and cluster name, as a
    kubeconfig merged by another tool names it."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    (entry,), (context,) = config["clusters"], config["contexts"]
    entry["name"] = context["context"]["cluster"] = "staging-cluster"
    context["name"] = config["current-context"] = "staging"
    path = folder / "renamed.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS, ids=IDS)
def test_another_context_name_for_the_same_cluster_is_not_refused(
        stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.paths import lab_dir

    with stack.make(tmp_path).running(list(stack.members)) as cluster:
        found = _built(stack, cluster, tmp_path, monkeypatch)
        record = lab_record.read(stack.lab)
        assert record is not None and record.cluster["context"] != "staging"
        renamed = _renamed(cluster, tmp_path)
        since = len(cluster.host.calls())
        profile = load_profile(stack.lab).profile
        again = core.up(profile, stack.lab, lambda _e: None,
                        adapters=cluster.adapters(lab_dir(stack.lab)), sleep=lambda _s: None,
                        cluster=ClusterChoice("existing", kubeconfig=renamed, context="staging"))
        assert again.ok, [str(f.error) for f in again.failures]
        # only the provider's own step ran again (the saved kubeconfig names the new context)
        assert [r.name for r in again.results if r.outcome.value != "skipped"] == [
            "management/cluster"]
        # and asked the cluster, reading only (access reviews, server-side dry runs)
        assert not [(m, p) for m, p in cluster.host.calls()[since:] if m != "GET"
                    and not p.startswith("/apis/authorization.k8s.io/")
                    and "dryRun=All" not in p]
        kept = lab_record.read(stack.lab)
        assert kept is not None and kept.cluster["context"] == "staging"
        assert kept.cluster["kube_system_uid"] == record.cluster["kube_system_uid"]
        status = runner.invoke(app, ["status", "--name", stack.lab, "-o", "json"])
        assert status.exit_code == 0, status.output
        teardown = core.remove_lab(stack.lab, core.lab_provider(
            stack.lab, kubeconfig=renamed, context="staging",
            helm=lambda _p: stack.helm(cluster)))
        assert not teardown.leftovers, teardown.leftovers
        assert cluster.state() == found


# --------------------------------------------------------------------------- unknown


class _Api:
    """A management API that answers /version, and kube-system as `namespace` says: a dict,
    or an error to raise (every request noted)."""

    server = "https://203.0.113.9:6443"

    def __init__(self, namespace: Any, version: Any = "v1.34.2") -> None:
        self.namespace, self.version = namespace, version
        self.asked: list[str] = []

    def server_version(self) -> str:
        self.asked.append("/version")
        if isinstance(self.version, Exception):
            raise self.version
        return str(self.version)

    def get(self, _api: str, kind: str, name: str, _ns: str | None = None) -> Any:
        self.asked.append(f"{kind}/{name}")
        if isinstance(self.namespace, Exception):
            raise self.namespace
        return self.namespace

    def close(self) -> None:
        pass


def _saved_lab(cluster: dict[str, Any]) -> None:
    from gpulab.paths import lab_dir

    lab_record.record_cluster("lab-x", cluster)
    (lab_dir("lab-x") / "management.kubeconfig").write_text("saved")


def test_which_cluster_unknown_is_refused_and_an_api_that_is_down_is_left_to_the_command(
) -> None:
    from gpulab.errors import AdapterError, ExitCode
    from gpulab.providers.existing import ExistingProvider

    provider = ExistingProvider(ClusterChoice("existing"))
    _saved_lab({"provider": "existing", "server": _Api.server, "kube_system_uid": "u-1"})
    hidden = _Api(AdapterError(f"get Namespace kube-system at {_Api.server}: 403 Forbidden"))
    with pytest.raises(HostError) as refused:
        provider.same_cluster("lab-x", lambda _p: hidden)
    assert refused.value.exit_code == ExitCode.HOST
    assert refused.value.message == (
        f"lab 'lab-x': which cluster {_Api.server} is cannot be told: reading its kube-system "
        f"namespace failed (get Namespace kube-system at {_Api.server}: 403 Forbidden)")
    gone = _Api(None)  # no kube-system at all: not the lab's cluster
    with pytest.raises(UsageError, match=r"now reaches \(none\) at https://203\.0\.113\.9:6443"):
        provider.same_cluster("lab-x", lambda _p: gone)
    same = _Api({"metadata": {"name": "kube-system", "uid": "u-1"}})
    provider.same_cluster("lab-x", lambda _p: same)  # the lab's cluster: no refusal
    assert same.asked == ["/version", "Namespace/kube-system"]
    down = _Api({}, version=AdapterError("connection refused"))
    provider.same_cluster("lab-x", lambda _p: down)  # status/verify say it does not answer
    assert down.asked == ["/version"]
    # a record without the uid (`up` always writes it): nothing to compare, nothing asked
    _saved_lab({"provider": "existing", "server": _Api.server})
    untold = _Api(None)
    provider.same_cluster("lab-x", lambda _p: untold)
    assert untold.asked == []
