"""Progress a person can follow: one live line per step on a TTY, plain lines otherwise,
JSON event lines for machines. All progress goes to stderr; stdout stays for data."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from gpulab.terminal import neutral

if TYPE_CHECKING:
    from types import TracebackType

    from rich.console import Console
    from rich.progress import TaskID

    from gpulab.engine.runner import Event

__all__ = ["JsonReporter", "LiveReporter", "PlainReporter", "make_reporter"]

_MARKS = {"done": "✓", "skipped": "✓", "failed": "✗"}


class PlainReporter:
    """One line per step when it ends: `✓ title [12.3s]` / `✗ title [0.4s]` (the error follows
    once, from the command); `… title: waiting up to 5m for X` when a step starts to wait;
    with `verbose`, `• title ...` when it starts and its notes."""

    def __init__(self, stream: TextIO | None = None, *, verbose: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        line = self.format(event)
        if line is None:
            return
        with self._lock:  # control characters in a title or a tool's note are shown escaped
            print(neutral(line), file=self.stream, flush=True)

    def format(self, event: Event) -> str | None:
        if event.kind == "started":  # one line per step (when it ends); -v also shows starts
            return f" • {event.title} ..." if self.verbose else None
        if event.kind == "note":
            return f"   {event.message}" if self.verbose else None
        if event.kind == "waiting":  # without -v too: a long wait must not look like a hang
            return f" … {event.title}: {event.message}"
        mark = _MARKS.get(event.kind, "?")
        suffix = " (already done, skipped)" if event.kind == "skipped" else ""
        # a failure's message is printed once, by the command, after the progress lines
        return f" {mark} {event.title}{suffix} [{event.elapsed:.1f}s]"

    def __enter__(self) -> PlainReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class JsonReporter:
    """One JSON object per line on stdout: {"step","event","title","elapsed","message","ts"}."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        payload = event.to_dict() | {"ts": round(time.time(), 3)}
        with self._lock:
            print(json.dumps(payload), file=self.stream, flush=True)

    def __enter__(self) -> JsonReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class LiveReporter:
    """Rich live lines: a spinner per running step (with what it waits for and for how long at
    most, once it waits), ✓/✗/skipped with elapsed when it ends."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = console
        self.verbose = verbose
        self.progress = Progress(  # titles and notes are shown as they are, never as markup
            SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
            console=console, transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        from rich.markup import escape

        with self._lock:
            if event.kind == "started":
                self._tasks[event.step] = self.progress.add_task(event.title)
                return
            if event.kind == "waiting":  # the spinner's line says what, and for how long
                task = self._tasks.get(event.step)
                if task is not None:
                    self.progress.update(task, description=f"{event.title}: {event.message}")
                return
            if event.kind == "note":
                if self.verbose:
                    self.progress.console.print(f"   [dim]{escape(event.message)}[/]",
                                                highlight=False)
                return
            task = self._tasks.pop(event.step, None)
            if task is not None:
                self.progress.remove_task(task)
            title = escape(event.title)
            if event.kind == "done":
                text = f" [green]✓[/] {title} [dim]{event.elapsed:.1f}s[/]"
            elif event.kind == "skipped":
                text = f" [green]✓[/] {title} [dim](already done, skipped)[/]"
            else:  # the message follows once, from the command
                text = f" [red]✗[/] {title} [dim]{event.elapsed:.1f}s[/]"
            self.progress.console.print(text, highlight=False)

    def __enter__(self) -> LiveReporter:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()


def make_reporter(
    console: Console, *, json_lines: bool, verbose: bool
) -> LiveReporter | PlainReporter | JsonReporter:
    """JSON when asked; live lines on a terminal; plain lines in CI and pipes."""
    if json_lines:
        return JsonReporter()
    if console.is_terminal:
        return LiveReporter(console, verbose=verbose)
    return PlainReporter(verbose=verbose)
