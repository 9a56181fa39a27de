"""What the fake schedulers read of a container's command line, written from Go's `flag` package
(the last `--name=value` wins), for the fakes only: gpulab's own readers are not used there."""

from __future__ import annotations


def flag(args: list[str], name: str) -> str | None:
    """The value of `--name=value` in `args` (the last one given), or None when absent."""
    value = None
    for arg in args:
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value
