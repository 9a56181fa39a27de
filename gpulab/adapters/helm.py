"""`HelmGateway` with pyhelm3 (async) behind a synchronous facade.

Each call runs its coroutine with `asyncio.run`; called from a thread whose event loop is running,
it runs in a fresh thread instead (never nested in the caller's loop). Rules this module keeps:

- the helm binary is checked up front (`HostError`), not left to pyhelm3's bare `assert`;
- a release's values go to helm as ONE dict (pyhelm3 concatenates lists across several dicts);
- the chart is resolved with `get_chart(name, repo=, version=)` and its version must be the pin;
- `--timeout` is given with a unit (helm refuses a bare number of seconds);
- `disable_validation` is never used (pyhelm3 0.5.8 builds a broken command line with it);
- given a lab's `labels`, every command that renders a chart (`upgrade --install`, `template`)
  runs gpulab's post-renderer (gpulab.helm_labels), which puts them on every object. pyhelm3
  0.5.8 has no argument for extra flags (Command.install_or_upgrade, pyhelm3/command.py:528-620,
  builds the whole argv), so `_LabellingCommand` appends them in `Command.run`, the one method
  every command goes through (command.py:179). How helm runs a post-renderer differs by major
  version: helm 3 executes the path given to `--post-renderer` (pkg/postrender/exec.go:37-68 at
  v3.19.2; `--post-renderer-args` since v3.9.0, cmd/helm/flags.go:118-196), helm 4 only runs a
  plugin of type `postrenderer/v1` found by name in `$HELM_PLUGINS` (pkg/cmd/flags.go:169-208,
  pkg/postrenderer/postrenderer.go:38-53 at v4.1.4): `post_renderer` writes both forms into the
  lab's folder, and helm 4 is run through a wrapper that puts that folder first in
  `$HELM_PLUGINS` (pyhelm3 starts helm with the caller's environment: command.py:196-201).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pydantic
import semver
import yaml
from pyhelm3 import Client, Command
from pyhelm3 import errors as helm_errors
from pyhelm3.models import ReleaseRevisionStatus

from gpulab.adapters.git_chart import chart_from_git
from gpulab.errors import AdapterError, HostError
from gpulab.paths import cache_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping, Sequence

    from gpulab.adapters.base import HelmRelease

__all__ = ["POST_RENDERER", "PyHelm3Gateway", "chart_reference", "post_renderer"]

T = TypeVar("T")

_CHART_NAME = re.compile(r"^[a-z0-9-]+$")
_INSTALL_HINT = "install helm (v3.9+ or v4) on PATH, or run `gpulab doctor --install-tools`"
POST_RENDERER = "gpulab-labels"  # the post-renderer's folder, and its plugin name for helm 4
_RENDERS = ("upgrade", "install", "template")  # the helm commands that render a chart
_ENV_TIMEOUT = 20  # seconds for `helm version` and `helm env HELM_PLUGINS`


def post_renderer(folder: Path, python: str = sys.executable) -> Path:
    """Write the program helm runs as gpulab's post-renderer into `folder`/gpulab-labels (0700):
    `post-render` (what helm 3's `--post-renderer` names) runs `python` on `post_render.py`,
    which loads gpulab.helm_labels from this very gpulab (whatever the working directory and
    sys.path), and `plugin.yaml` makes the same program helm 4's plugin `gpulab-labels`
    (metadata_v1.go:22-74, runtime_subprocess.go:229-278 at v4.1.4: the command is split on
    spaces before `${HELM_PLUGIN_DIR}` is expanded, subprocess_commands.go:39-113, so a folder
    with spaces works). Returns the plugin's folder."""
    import gpulab

    package = Path(gpulab.__file__).resolve().parent
    plugin = folder / POST_RENDERER
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # the lab's folder
    plugin.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.chmod(0o700)
    plugin.chmod(0o700)
    (plugin / "errors").mkdir(exist_ok=True, mode=0o700)
    loader = (
        "# Written by gpulab: helm runs it (through post-render) as gpulab's post-renderer.\n"
        "import importlib.util\nimport sys\n\n"
        f"PACKAGE = {str(package)!r}\n"
        "spec = importlib.util.spec_from_file_location(\n"
        "    'gpulab', PACKAGE + '/__init__.py', submodule_search_locations=[PACKAGE])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['gpulab'] = module\n"
        "spec.loader.exec_module(module)\n\n"
        "from gpulab.helm_labels import main  # noqa: E402\n\n"
        "raise SystemExit(main())\n"
    )
    _write(plugin / "post_render.py", loader, 0o600)
    _write(plugin / "post-render", "#!/bin/sh\n"
           f"exec {shlex.quote(python)} {shlex.quote(str(plugin / 'post_render.py'))} \"$@\"\n",
           0o700)
    _write(plugin / "plugin.yaml", "\n".join([
        f"name: {POST_RENDERER}",
        "version: 1.0.0",
        "type: postrenderer/v1",
        "apiVersion: v1",
        "runtime: subprocess",
        "runtimeConfig:",
        "  platformCommand:",
        '  - command: "${HELM_PLUGIN_DIR}/post-render"',
        "",
    ]), 0o600)
    return plugin


def _write(path: Path, text: str, mode: int) -> None:
    """Replace `path` whole (another thread of this lab may be starting the same program)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    partial.replace(path)


class _LabellingCommand(Command):  # type: ignore[misc]  # pyhelm3 is untyped
    """pyhelm3's Command that adds `post_render` (the post-renderer's flags) to each command
    that renders a chart, each time with its own `--error-file` for the post-renderer's one
    line: helm 4 does not show a post-renderer's stderr (internal/plugin/runtime_subprocess.go:
    171-190 at v4.1.4) and helm 3 puts it under its own `Error:` line (exec.go:62-65), so the
    line is added last to the error pyhelm3 raises."""

    def __init__(self, *, post_render: Sequence[str] = (), errors: Path | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.post_render = list(post_render)
        self.errors = errors

    def client_version(self) -> semver.VersionInfo:
        """`helm version --template {{ .Version }}` as pyhelm3 0.5.8 asks it (command.py:
        1052-1070, from Client.__init__), with a deadline: pyhelm3 runs it with none, so a helm
        that never answers would hang gpulab (subprocess.TimeoutExpired, one line in
        PyHelm3Gateway._client_of)."""
        done = subprocess.run([self._executable, "version", "--template", "{{ .Version }}"],
                              capture_output=True, check=True, timeout=_ENV_TIMEOUT)
        return semver.VersionInfo.parse(done.stdout.decode().strip().removeprefix("v"))

    async def run(self, command: list[Any], input: bytes | None = None) -> bytes:
        if not self.post_render or self.errors is None or not command \
                or command[0] not in _RENDERS:
            return cast("bytes", await super().run(command, input))
        error_file = self.errors / f"{uuid.uuid4().hex}.txt"
        try:
            return cast("bytes", await super().run(
                [*command, *self.post_render, f"--post-renderer-args=--error-file={error_file}"],
                input))
        except helm_errors.Error as err:
            try:
                said = error_file.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                said = ""
            if said:
                raise type(err)(err.returncode, err.stdout,
                                (err.stderr or b"") + f"\nError: {said}\n".encode()) from err
            raise
        finally:
            error_file.unlink(missing_ok=True)


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
    """Helm releases on the cluster of `kubeconfig` (None: helm's own default). With `labels`
    (a lab's: gpulab.naming.chart_labels) and `folder` (where the post-renderer is written, in
    the lab's folder), every chart it installs or renders carries them (HostError, one line,
    when this helm cannot run a post-renderer gpulab knows: not helm 3.9+ or 4)."""

    def __init__(self, kubeconfig: Path | None, *, executable: str = "helm",
                 labels: Mapping[str, str] | None = None, folder: Path | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.executable = _resolve_executable(executable)
        self.labels = dict(labels or {})
        self._command = _LabellingCommand(executable=self.executable, kubeconfig=kubeconfig)
        self._client = self._client_of(self._command, self.executable)
        self.version = str(self._client.version)
        if self.labels:
            if folder is None:
                raise ValueError("labels need the folder the post-renderer is written to")
            self._label_with(folder)

    def _client_of(self, command: Command, executable: str) -> Client:
        try:
            # Runs `helm version` synchronously and parses it as semver.
            return Client(command, executable=executable)
        except subprocess.TimeoutExpired:
            raise HostError(
                f"helm at {self.executable} did not answer `helm version` within "
                f"{_ENV_TIMEOUT}s", hint=_INSTALL_HINT) from None
        except (subprocess.CalledProcessError, OSError, ValueError, AssertionError) as err:
            detail = err.stderr.decode(errors="replace") if isinstance(
                err, subprocess.CalledProcessError) and err.stderr else str(err)
            raise HostError(
                f"helm at {self.executable} did not answer `helm version`: "
                f"{_last_line(detail) or type(err).__name__}",
                hint=_INSTALL_HINT,
            ) from err

    def _label_with(self, folder: Path) -> None:
        """Write the post-renderer into `folder` and give helm the flags that run it."""
        from gpulab.helm_labels import LabelError, check_labels

        try:
            check_labels(self.labels)
        except LabelError as err:
            raise ValueError(str(err)) from None
        version = self._client.version
        if (version.major, version.minor) < (3, 9) or version.major > 4:
            raise HostError(f"helm {self.version} at {self.executable} cannot run gpulab's "
                            "post-renderer (which labels what charts create): gpulab knows "
                            "helm 3.9+ and helm 4", hint=_INSTALL_HINT)
        unsafe = set(os.pathsep + "*?[\\") & set(str(folder))
        if version.major == 4 and unsafe:
            raise HostError(f"the lab's folder {folder} has {''.join(sorted(unsafe))!r} in its "
                            "path, which helm 4 cannot take in $HELM_PLUGINS",
                            hint="set GPULAB_HOME to a folder without it")
        plugin = post_renderer(folder)
        args = [f"--post-renderer-args={k}={v}" for k, v in self.labels.items()]
        if version.major == 3:
            self._command.post_render = ["--post-renderer", str(plugin / "post-render"), *args]
            self._command.errors = plugin / "errors"
            return
        wrapper = folder / "helm"
        plugins = os.pathsep.join(p for p in (str(folder), self._plugins()) if p)
        _write(wrapper, "#!/bin/sh\n"
               f"HELM_PLUGINS={shlex.quote(plugins)}\n"
               f"export HELM_PLUGINS\nexec {shlex.quote(self.executable)} \"$@\"\n", 0o700)
        self._command = _LabellingCommand(
            executable=str(wrapper), kubeconfig=self.kubeconfig,
            post_render=["--post-renderer", POST_RENDERER, *args], errors=plugin / "errors")
        self._client = self._client_of(self._command, str(wrapper))  # the wrapper runs helm

    def _plugins(self) -> str:
        """The plugin folders helm 4 uses now (`$HELM_PLUGINS` or its default), kept after the
        lab's so the user's own plugins (chart getters) still work."""
        try:
            done = subprocess.run([self.executable, "env", "HELM_PLUGINS"], capture_output=True,
                                  text=True, timeout=_ENV_TIMEOUT, check=True)
        except (OSError, subprocess.SubprocessError) as err:
            raise HostError(f"helm at {self.executable} did not answer `helm env HELM_PLUGINS`: "
                            f"{err}", hint=_INSTALL_HINT) from None
        return done.stdout.strip()

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
