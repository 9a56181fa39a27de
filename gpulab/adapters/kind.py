"""The `kind` binary behind `KindProvider`: management cluster lifecycle via subprocess.

Like kind's own `exec.RunError`, a failed command raises `AdapterError` naming the command, with
the last lines of its output in `.output`; a missing binary is a `HostError` saying how to get it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from gpulab import children
from gpulab.errors import AdapterError, HostError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["OUTPUT_TAIL_LINES", "KindCli"]

OUTPUT_TAIL_LINES: Final = 20
_INSTALL_URL: Final = "https://kind.sigs.k8s.io/docs/user/quick-start/#installation"


class KindCli:
    """`KindProvider` on the kind CLI.

    Args:
        binary: the kind executable: a name looked up on PATH, or a path.
        kubeconfig: where `create`/`delete` write kind's context (`--kubeconfig`), instead of
            $KUBECONFIG or ~/.kube/config; None keeps kind's default.
        want_version: the kind release the profile pins, named in the hint when kind is missing.
        timeout: seconds allowed for the quick commands (version, get, delete).
        create_timeout: seconds allowed for `create cluster` (image pull included); None = no limit.
        env: environment for kind on top of gpulab's own; a None value unsets the variable
            (the Docker endpoint gives DOCKER_HOST and clears DOCKER_CONTEXT, so kind's docker
            CLI talks to the engine gpulab talks to: `DockerEndpoint.client_env`).
    """

    def __init__(
        self,
        binary: str | os.PathLike[str] = "kind",
        *,
        kubeconfig: str | os.PathLike[str] | None = None,
        want_version: str | None = None,
        timeout: float = 120,
        create_timeout: float | None = 1800,
        env: Mapping[str, str | None] | None = None,
    ) -> None:
        self.binary = os.fspath(binary)
        self.kubeconfig_path = Path(kubeconfig) if kubeconfig is not None else None
        self.want_version = want_version
        self.timeout = timeout
        self.create_timeout = create_timeout
        self.env = dict(env or {})

    # --- KindProvider -------------------------------------------------------------------------

    def version(self) -> str:
        """kind's release, e.g. `v0.33.0` (from `kind v0.33.0 go1.24 linux/amd64`)."""
        out = self._run(["version"], timeout=self.timeout).strip()
        fields = out.split()
        if len(fields) >= 2 and fields[0] == "kind":
            return fields[1]
        return fields[0] if fields else ""

    def clusters(self) -> list[str]:
        """Names of the kind clusters here (none: "No kind clusters found." goes to stderr)."""
        return [
            line.strip()
            for line in self._run(["get", "clusters"], timeout=self.timeout).splitlines()
            if line.strip()
        ]

    def create(self, name: str, config: dict[str, Any], *, wait_seconds: int = 120) -> None:
        """`kind create cluster` from `config`; kind deletes the cluster itself if this fails."""
        with tempfile.TemporaryDirectory(prefix="gpulab-kind-") as folder:
            path = Path(folder) / "cluster.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
            path.chmod(0o600)
            args = ["create", "cluster", "--name", name, "--config", str(path)]
            args += ["--wait", f"{wait_seconds}s", *self._kubeconfig_args()]
            self._run(args, timeout=self.create_timeout)

    def delete(self, name: str) -> None:
        """`kind delete cluster` (kind succeeds when the cluster does not exist)."""
        self._run(
            ["delete", "cluster", "--name", name, *self._kubeconfig_args()], timeout=self.timeout
        )

    def kubeconfig(self, name: str) -> str:
        """The cluster's kubeconfig (host endpoint), exactly as kind prints it."""
        return self._run(["get", "kubeconfig", "--name", name], timeout=self.timeout)

    # --- running kind -------------------------------------------------------------------------

    def _kubeconfig_args(self) -> list[str]:
        return ["--kubeconfig", str(self.kubeconfig_path)] if self.kubeconfig_path else []

    def _missing(self, detail: str) -> HostError:
        release = f" {self.want_version}" if self.want_version else ""
        return HostError(
            f"kind not found: {detail}",
            hint=f"run gpulab doctor --install-tools, or install kind{release} ({_INSTALL_URL})",
        )

    def _resolve(self) -> str:
        if os.sep in self.binary or (os.altsep and os.altsep in self.binary):
            path = Path(self.binary)
            if not path.is_file():
                raise self._missing(f"{self.binary} does not exist")
            if not os.access(path, os.X_OK):
                raise self._missing(f"{self.binary} is not executable")
            return str(path)
        found = shutil.which(self.binary)
        if found is None:
            raise self._missing(f"no '{self.binary}' on PATH")
        return found

    def _run(self, args: list[str], *, timeout: float | None) -> str:
        """Run kind with `args`; its stdout, or AdapterError with the command and output tail."""
        argv = [self._resolve(), *args]
        shown = shlex.join(["kind", *args])
        env = {**os.environ, **{k: v for k, v in self.env.items() if v is not None}}
        for name in (k for k, v in self.env.items() if v is None):
            env.pop(name, None)
        try:  # a child gpulab can stop with its group (SIGTERM to `up`: gpulab.children)
            done = children.run(argv, timeout=timeout, env=env)
        except FileNotFoundError:
            raise self._missing(f"{argv[0]} disappeared") from None
        except PermissionError:
            raise self._missing(f"{argv[0]} cannot be run (permission denied)") from None
        except subprocess.TimeoutExpired as err:
            output = _tail(_text(err.stderr) + _text(err.stdout))
            raise AdapterError(
                f"`{shown}` did not finish within {err.timeout:g}s",
                hint="see the output; kind may have left a half-made cluster: gpulab down",
                output=output,
            ) from None
        if done.returncode != 0:
            output = _tail(done.stderr + done.stdout)
            reason = _reason(output)
            raise AdapterError(
                f"`{shown}` failed (exit code {done.returncode})"
                + (f": {reason}" if reason else ""),
                output=output,
            )
        return done.stdout


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _tail(output: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last `lines` non-empty lines of a command's output."""
    kept = [line.rstrip() for line in output.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def _reason(output: str) -> str:
    """kind's own `ERROR:` line (the last one), else the output's last line."""
    lines = output.splitlines()
    for line in reversed(lines):
        if line.startswith("ERROR:"):
            return line.removeprefix("ERROR:").strip()
    return lines[-1].strip() if lines else ""
