"""`HelmGateway` with pyhelm3 (async) behind a synchronous facade.

Each call runs its coroutine with `asyncio.run`; called from a thread whose event loop is running,
it runs in a fresh thread instead (never nested in the caller's loop). Rules this module keeps:

- the helm binary is checked up front (`HostError`), not left to pyhelm3's bare `assert`;
- a release's values go to helm as ONE dict (pyhelm3 concatenates lists across several dicts);
- the chart is resolved with `get_chart(name, repo=, version=)` and its version must be the pin;
- `--timeout` is given with a unit (helm refuses a bare number of seconds);
- `disable_validation` is never used (pyhelm3 0.5.8 builds a broken command line with it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic
import yaml
from pyhelm3 import Client, Command
from pyhelm3 import errors as helm_errors
from pyhelm3.models import ReleaseRevisionStatus

from gpulab.adapters.git_chart import chart_from_git
from gpulab.errors import AdapterError, HostError
from gpulab.paths import cache_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from gpulab.adapters.base import HelmRelease

__all__ = ["PyHelm3Gateway", "chart_reference"]

T = TypeVar("T")

_CHART_NAME = re.compile(r"^[a-z0-9-]+$")
_INSTALL_HINT = "install helm (v3.8+ or v4) on PATH, or run `gpulab doctor --install-tools`"


def chart_reference(release: HelmRelease, helm: str | None = None
                    ) -> tuple[str | Path, str | None]:
    """(chart ref, repo URL) as pyhelm3 accepts them, or AdapterError saying what to write.

    A bare name needs `repo: https://…`; OCI charts are a full `oci://registry/path/chart` (a repo
    given as `oci://…` is joined with the name); a release pinned to a git commit is fetched into
    gpulab's cache (git_chart.chart_from_git, with `helm` for its dependencies); anything else
    must be a local chart path.
    """
    chart, repo = release.chart, release.repo
    if release.git_commit:
        if not repo or not release.git_path:
            raise AdapterError(f"chart {chart} of release {release.name}: a git commit needs the "
                               "repository URL and the chart's folder in it")
        return chart_from_git(repo, release.git_commit, release.git_path, cache_dir(),
                              helm or "helm"), None
    if repo and repo.startswith("oci://"):
        return f"{repo.rstrip('/')}/{chart}", None
    if repo:
        if not _CHART_NAME.match(chart):
            raise AdapterError(
                f"chart '{chart}' of release {release.name}: with a repo URL the chart must be a "
                "bare name such as 'hami'",
                hint="repo aliases like 'nvidia/gpu-operator' are not supported; give repo: URL",
            )
        return chart, repo
    if chart.startswith("oci://"):
        return chart, None
    path = Path(chart).expanduser()
    if path.exists():
        return path.resolve(), None
    raise AdapterError(
        f"chart '{chart}' of release {release.name} is neither a name with a repo URL, "
        "an oci:// reference nor a local chart path"
    )


def _expected_chart_name(ref: str | Path) -> str | None:
    if isinstance(ref, Path):
        return None
    return ref.rstrip("/").rsplit("/", 1)[-1]


def _same_version(got: str, pin: str) -> bool:
    return got.removeprefix("v") == pin.removeprefix("v")


def _normalized(values: Any) -> Any:
    """Values as helm stores them: a JSON round trip (tuples → lists, numbers as JSON numbers),
    with null-valued keys dropped: whether helm keeps `key: null` in `get values` must not make a
    finished release look different on every run (Kamaji's `resources: null`)."""
    return _drop_nulls(json.loads(json.dumps(values or {})))


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _last_line(text: str) -> str:
    """Helm's error line: the last `Error: …` line (helm 4 prints hints after it), else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line.removeprefix("Error:").strip() for line in lines if line.startswith("Error:")]
    return errors[-1] if errors else (lines[-1] if lines else "")


def _resolve_executable(executable: str) -> str:
    found = shutil.which(executable)
    if found:
        return found
    path = Path(executable)
    if path.is_file() and os.access(path, os.X_OK):
        return str(path.resolve())
    raise HostError(f"helm not found: '{executable}' is not an executable on PATH",
                    hint=_INSTALL_HINT)


class PyHelm3Gateway:
    """Helm releases on the cluster of `kubeconfig` (None: helm's own default)."""

    def __init__(self, kubeconfig: Path | None, *, executable: str = "helm") -> None:
        self.kubeconfig = kubeconfig
        self.executable = _resolve_executable(executable)
        self._command = Command(executable=self.executable, kubeconfig=kubeconfig)
        try:
            # Runs `helm version` synchronously and parses it as semver.
            self._client = Client(self._command, executable=self.executable)
        except (subprocess.CalledProcessError, OSError, ValueError, AssertionError) as err:
            detail = err.stderr.decode(errors="replace") if isinstance(
                err, subprocess.CalledProcessError) and err.stderr else str(err)
            raise HostError(
                f"helm at {self.executable} did not answer `helm version`: "
                f"{_last_line(detail) or type(err).__name__}",
                hint=_INSTALL_HINT,
            ) from err
        self.version = str(self._client.version)

    # ----------------------------------------------------------------------- sync facade

    def _run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(make())
        # Called from a coroutine's thread: a nested asyncio.run is impossible, use a fresh thread.
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = asyncio.run(make())
            except BaseException as err:
                box["error"] = err

        thread = threading.Thread(target=target, name="gpulab-helm")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        result: T = box["result"]
        return result

    def _call(self, what: str, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a pyhelm3 coroutine; helm and parsing failures become one-line AdapterErrors."""
        try:
            return self._run(make)
        except helm_errors.Error as err:
            stderr = err.stderr.decode(errors="replace") if err.stderr else ""
            raise AdapterError(
                f"helm {what} failed: {_last_line(stderr) or f'exit code {err.returncode}'}",
                output=stderr,
            ) from err
        except pydantic.ValidationError as err:
            raise AdapterError(
                f"helm {what}: unexpected answer from helm ({err.error_count()} validation errors)",
                output=str(err),
            ) from err
        except (ValueError, yaml.YAMLError) as err:  # json/yaml parse failures of helm's output
            raise AdapterError(f"helm {what}: could not read helm's output ({err})") from err

    @staticmethod
    def _what(verb: str, release: HelmRelease) -> str:
        return (f"{verb} {release.name} ({release.chart} {release.version}) "
                f"in namespace {release.namespace}")

    # ----------------------------------------------------------------------- HelmGateway

    def install(self, release: HelmRelease, *, timeout_seconds: int = 600) -> None:
        """`helm upgrade --install` at the pinned chart version, waiting for readiness."""
        ref, repo = chart_reference(release, self.executable)

        async def go() -> None:
            chart = await self._client.get_chart(ref, repo=repo, version=release.version)
            resolved = str(chart.metadata.version)
            if not _same_version(resolved, release.version):
                raise AdapterError(
                    f"chart {release.chart} resolved to version {resolved}, "
                    f"but release {release.name} pins {release.version}"
                )
            revision = await self._client.install_or_upgrade_release(
                release.name,
                chart,
                release.values,  # exactly one dict: gpulab merged it (lists replace, not append)
                namespace=release.namespace,
                create_namespace=True,
                wait=True,
                timeout=f"{int(timeout_seconds)}s",
            )
            if revision.status != ReleaseRevisionStatus.DEPLOYED:
                raise AdapterError(
                    f"helm release {release.name} in {release.namespace} is "
                    f"{revision.status.value} after install"
                )

        self._call(self._what("upgrade --install", release), go)

    def installed(self, release: HelmRelease) -> bool:
        """Deployed, same chart (name when known) at the pinned version, same user values."""
        ref, _ = chart_reference(release, self.executable)
        expected_name = _expected_chart_name(ref)

        async def go() -> bool:
            try:
                revision = await self._client.get_current_revision(
                    release.name, namespace=release.namespace
                )
            except helm_errors.ReleaseNotFoundError:
                return False
            if revision.status != ReleaseRevisionStatus.DEPLOYED:
                return False
            metadata = await revision.chart_metadata()
            if not _same_version(str(metadata.version), release.version):
                return False
            if expected_name is not None and metadata.name != expected_name:
                return False
            values = await revision.values()  # user-supplied values only (`helm get values`)
            return bool(_normalized(values) == _normalized(release.values))

        return self._call(self._what("status", release), go)

    def uninstall(self, name: str, namespace: str) -> None:
        """Uninstall and wait; a release that does not exist is not an error."""

        async def go() -> None:
            await self._client.uninstall_release(name, namespace=namespace, wait=True)

        self._call(f"uninstall {name} in namespace {namespace}", go)

    def releases(self) -> list[dict[str, Any]]:
        """Releases in every namespace (deployed, failed, pending) with chart, version, status."""

        async def go() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for release in await self._client.list_releases(
                all_namespaces=True, include_failed=True, include_pending=True
            ):
                revision = await release.current_revision()
                metadata = await revision.chart_metadata()
                out.append({
                    "name": release.name,
                    "namespace": release.namespace,
                    "chart": metadata.name,
                    "version": str(metadata.version),
                    "revision": revision.revision,
                    "status": revision.status.value,
                })
            return out

        return self._call("list releases in all namespaces", go)

    # ----------------------------------------------------------------------- extras

    def template(
        self,
        release: HelmRelease,
        *,
        kube_version: str | None = None,
        include_crds: bool = False,
    ) -> list[dict[str, Any]]:
        """`helm template` of the release as it would be installed (no cluster contacted)."""
        ref, repo = chart_reference(release, self.executable)
        argv: list[Any] = [
            "template", release.name, ref,
            "--namespace", release.namespace,
            "--include-crds" if include_crds else "--skip-crds",
            "--values", "-",
            "--version", release.version,
        ]
        if repo:
            argv += ["--repo", repo]
        if kube_version:
            argv += ["--kube-version", kube_version]
        stdin = json.dumps(release.values).encode()

        async def go() -> list[dict[str, Any]]:
            out = await self._command.run(argv, stdin)
            return [doc for doc in yaml.safe_load_all(out) if isinstance(doc, dict)]

        return self._call(self._what("template", release), go)
