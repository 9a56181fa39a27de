"""The one domain error family and gpulab's stable exit codes.

The CLI catches only `GpulabError`: each carries one line for the user (what, where, what to do)
and the exit code it maps to. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "AdapterError",
    "BusyError",
    "CheckError",
    "ExitCode",
    "GpulabError",
    "HostError",
    "NoLabError",
    "PreflightError",
    "ProfileError",
    "StepError",
    "UsageError",
]


class ExitCode(IntEnum):
    """Exit codes are part of gpulab's interface; scripts and CI rely on them."""

    OK = 0
    FAILED = 1  # a step of `up`/`down` failed; the lab may be partly built (resumable)
    USAGE = 2  # bad flags, unknown profile, invalid profile file
    CHECKS_FAILED = 3  # `verify` ran and at least one check failed
    HOST = 4  # the host cannot run the lab: Docker unreachable, missing tool, preflight failed;
    #           or cannot reach it: the lab is not up, its management API does not answer
    BUSY = 5  # another gpulab command holds the lab (up, down or verify): try again later
    NO_LAB = 6  # no lab of that name on this host (`gpulab labs` lists them); `down` is exempt
    INTERRUPTED = 130


class GpulabError(Exception):
    """An error the user can act on. `str(err)` is the one line shown to them."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(GpulabError):
    """Bad command-line input: unknown names, conflicting flags."""

    exit_code = ExitCode.USAGE


class BusyError(GpulabError):
    """Another gpulab command is changing the lab; names which one."""

    exit_code = ExitCode.BUSY


class ProfileError(UsageError):
    """A profile file that cannot be used; `problems` holds one line per problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"{source}: {count} {noun} in profile, nothing was created")
        self.source = source
        self.problems = problems


class NoLabError(GpulabError):
    """The command names a lab that does not exist on this host (as minikube's "profile not
    found", exit 85): no lab folder, and for the commands that look, nothing in Docker either."""

    exit_code = ExitCode.NO_LAB


class HostError(GpulabError):
    """The host cannot run a lab as it is (Docker, tools, resources)."""

    exit_code = ExitCode.HOST


class PreflightError(HostError):
    """`up` refused before creating anything: the host checks that failed, each a short line
    (`check: what`) with its fix on a line of its own (`problems`, as ProfileError's)."""

    def __init__(self, failed: list[tuple[str, str, str]], *, more: str = "") -> None:
        count = len(failed)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"preflight: {count} {noun} on this host, nothing was created",
                         hint=more or None)
        self.failed = failed
        self.problems = [line for check, detail, fix in failed
                         for line in (f"{check}: {detail}", *((f"  fix: {fix}",) if fix else ()))]


class AdapterError(GpulabError):
    """An outside system (Docker, kind, helm, a Kubernetes API) refused or failed a call."""

    def __init__(self, message: str, *, hint: str | None = None, output: str = "") -> None:
        super().__init__(message, hint=hint)
        self.output = output


class StepError(GpulabError):
    """A step of the plan failed; names the step and keeps the cause and last observation."""

    def __init__(self, step: str, cause: BaseException | str, *, last_seen: str = "") -> None:
        cause_text = str(cause)
        super().__init__(f"step '{step}' failed: {cause_text}")
        self.step = step
        self.cause = cause
        self.last_seen = last_seen
        if isinstance(cause, GpulabError):
            self.exit_code = cause.exit_code


class CheckError(GpulabError):
    """`verify` could not observe what it needs (not a failed check: that is a result)."""

    exit_code = ExitCode.FAILED
