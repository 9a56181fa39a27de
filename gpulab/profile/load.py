"""Find, read and validate profiles; report every problem as `file:line: path: message`.

The loader knows no stack: callers pass the profile model of each stack name (the registry in
gpulab.stacks does, through its `load_profile`/`parse_profile`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from gpulab.errors import HostError, ProfileError, UsageError
from gpulab.profile import safe_yaml

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from pydantic_core import ErrorDetails

    from gpulab.profile.base import LabProfile


__all__ = [
    "LoadedProfile",
    "builtin_profiles",
    "format_path",
    "load_profile",
    "no_builtin_profiles",
    "parse_profile",
    "profiles_dir",
    "read_profile_file",
]

PROFILES_ENV = "GPULAB_PROFILES_DIR"
DEFAULT_PROFILE = "kamaji-hami"

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile and where it came from."""

    profile: LabProfile
    source: Path
    builtin: bool


def profiles_dir() -> Path:
    """Where built-in profiles live: $GPULAB_PROFILES_DIR, else the package `gpulab.profiles`
    found through importlib.resources: the repository's top-level `profiles/` folder, which
    pyproject.toml maps to `gpulab/profiles` in the wheel (pip, `pip install --user`, pipx) and
    which an editable install's finder maps to the tree. Where nothing maps it (gpulab imported
    from a checkout by PYTHONPATH or an editable install in compat mode), the checkout's own
    `profiles/` beside `gpulab/`."""
    override = os.environ.get(PROFILES_ENV)
    if override:
        return Path(override)
    try:
        folder = resources.files("gpulab.profiles")
    except ModuleNotFoundError:
        return _unmapped_profiles_dir()
    # Every install pip or pipx makes is a real folder; a zipped import would not be, and then no
    # profile is found, which `no_builtin_profiles` reports (never silently).
    return folder if isinstance(folder, Path) else Path(str(folder))


def _unmapped_profiles_dir() -> Path:
    """A checkout's `profiles/` (beside `gpulab/` and pyproject.toml); else where an install
    keeps its profiles (`gpulab/profiles`, absent: `no_builtin_profiles` names it)."""
    package = resources.files("gpulab")
    package = package if isinstance(package, Path) else Path(str(package))
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "profiles").is_dir():
        return checkout / "profiles"
    return package / "profiles"


def builtin_profiles() -> dict[str, Path]:
    """Built-in profile names mapped to their files (empty when none is found: see
    `no_builtin_profiles`)."""
    folder = profiles_dir()
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def no_builtin_profiles() -> HostError:
    """The error for an install (or a $GPULAB_PROFILES_DIR) with no built-in profile in it."""
    folder = profiles_dir()
    if os.environ.get(PROFILES_ENV):
        return HostError(f"no built-in profiles: ${PROFILES_ENV} is {folder}, which holds no "
                         "*.yaml file", hint=f"unset {PROFILES_ENV}, or point it at a folder "
                         "of profiles")
    return HostError(f"no built-in profiles in {folder}: this gpulab install lacks its package "
                     "data", hint="reinstall gpulab: `pip install --force-reinstall WHEEL-OR-DIR` "
                     "or `pipx reinstall gpulab`; or pass a profile file with --profile")


def load_profile(ref: str | None, models: Mapping[str, type[LabProfile]]) -> LoadedProfile:
    """Resolve a built-in name or a path and validate it against the model of its `stack`
    (`models`: stack name → profile model). Raises ProfileError or UsageError, or HostError
    when a name is given and the install has no built-in profile at all."""
    ref = ref or DEFAULT_PROFILE
    builtins = builtin_profiles()
    looks_like_path = os.sep in ref or ref.endswith((".yaml", ".yml")) or Path(ref).is_file()
    if not looks_like_path and ref in builtins:
        path, builtin = builtins[ref], True
    elif looks_like_path:
        path, builtin = Path(ref), False
    elif not builtins:
        raise no_builtin_profiles()
    else:
        raise UsageError(
            f"unknown profile '{ref}'",
            hint=f"built-in profiles: {', '.join(builtins)}; or pass a file path to --profile",
        )
    data = read_profile_file(path)
    text, problem = safe_yaml.decode(data)
    if problem and len(data) > safe_yaml.MAX_BYTES:
        problem = _too_big(path, len(data))
    if problem:
        raise ProfileError(str(path), [f"{path}: {problem}"])
    return LoadedProfile(parse_profile(text, models, str(path)), path, builtin)


def _too_big(path: Path, read: int) -> str:
    """Why a profile is refused for its size, with the file's own size (only its first
    MAX_BYTES + 1 bytes were read; a file gone since then keeps that count)."""
    try:
        size = max(path.stat().st_size, read)
    except OSError:
        size = read
    return f"is {size} bytes; a profile is at most {safe_yaml.MAX_BYTES} bytes"


def read_profile_file(path: Path) -> bytes:
    """The file's bytes (at most safe_yaml.MAX_BYTES + 1), or UsageError saying what it is
    instead: missing, a directory, a FIFO or device, unreadable, a name too long."""
    import errno
    import stat

    try:
        info = path.stat()
    except FileNotFoundError:
        raise UsageError(f"profile file not found: {path}", hint="check the --profile path") \
            from None
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise UsageError(f"profile path is too long for this system ({len(str(path))} "
                             "characters)", hint="move the file, or use a shorter path") from None
        raise UsageError(f"cannot read profile {path}: {err.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"profile {path} is a directory, not a file",
                         hint="give the YAML file inside it, e.g. --profile DIR/lab.yaml")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise UsageError(f"profile {path} is {kind}", hint="give a regular YAML file")
    try:
        with path.open("rb") as handle:
            return handle.read(safe_yaml.MAX_BYTES + 1)
    except PermissionError:
        raise UsageError(f"no permission to read profile {path}",
                         hint="check the file's permissions") from None
    except OSError as err:
        raise UsageError(f"cannot read profile {path}: {err.strerror}") from None


def parse_profile(text: str, models: Mapping[str, type[LabProfile]], source: str) -> LabProfile:
    """Validate profile YAML text against the model its `stack` names; every problem becomes one
    `source:line: path: msg` line (`source`: the file, or what stands for it)."""
    problem = safe_yaml.check_bytes(text.encode("utf-8", "surrogatepass"))
    if problem:
        raise ProfileError(source, [f"{source}: {problem}"])
    try:
        root, unsafe = safe_yaml.compose(text)
    except (yaml.reader.ReaderError, yaml.MarkedYAMLError) as err:
        raise ProfileError(source, [_not_yaml(source, text, err)]) from None
    if unsafe:
        raise ProfileError(source, [f"{source}{f':{line}' if line else ''}: {message}"
                                    for line, message in unsafe])
    if root is None:
        raise ProfileError(source, [f"{source}: the file is empty"])
    lines: dict[Loc, int] = {}
    duplicates: list[str] = []
    _index_lines(root, (), lines, duplicates, source)
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ProfileError(source, [f"{source}:1: a profile must be a mapping of fields"])
    problems = list(duplicates)
    stack = data.get("stack")
    model = models.get(stack) if isinstance(stack, str) else None
    if model is None:
        problems.append(
            _line(source, lines, ("stack",))
            + f"stack: must be one of {', '.join(models)} (got {stack!r})"
        )
        raise ProfileError(source, problems)
    try:
        profile = model.model_validate(data)
    except ValidationError as err:
        problems.extend(_describe(source, lines, err.errors()))
        raise ProfileError(source, problems) from None
    for loc, message in profile.semantic_problems():
        problems.append(f"{_line(source, lines, loc)}{format_path(loc)}: {message}")
    if problems:
        raise ProfileError(source, problems)
    return profile


def _not_yaml(source: str, text: str,
              err: yaml.reader.ReaderError | yaml.MarkedYAMLError) -> str:
    """One line for a YAML error, with its line. The reader refuses a control character with
    its position in the text and a second line naming `<unicode string>`, meaningless to the
    user; the scanner, parser and composer raise each error with the mark of the token at fault
    and what is wrong with it (PyYAML 6.0 scanner.py, parser.py, composer.py: every raise)."""
    if isinstance(err, yaml.reader.ReaderError):
        line = text[: err.position].count("\n") + 1
        return f"{source}:{line}: not valid YAML: {str(err).splitlines()[0]}"
    where = f":{err.problem_mark.line + 1}" if err.problem_mark else ""
    return f"{source}{where}: not valid YAML: {err.problem}"


def format_path(loc: Iterable[str | int]) -> str:
    """('tenants', 1, 'gpus', 0, 'memory_mib') → 'tenants[1].gpus[0].memory_mib'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _index_lines(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], duplicates: list[str], source: str
) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                duplicates.append(
                    f"{source}:{key_node.start_mark.line + 1}: "
                    f"{format_path((*loc, key))}: key appears twice"
                )
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _index_lines(value_node, (*loc, key), lines, duplicates, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, (*loc, index), lines, duplicates, source)


def _line(source: str, lines: dict[Loc, int], loc: Loc) -> str:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return f"{source}:{lines[loc[:end]]}: "
    return f"{source}: "


_MESSAGES = {
    "extra_forbidden": "unknown field (check the spelling; see docs/profile-reference.md)",
    "missing": "required field is missing",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "dict_type": "must be a mapping",
    "list_type": "must be a list",
    "model_type": "must be a mapping of fields",
    "too_short": "must not be empty",
}


def _describe(source: str, lines: dict[Loc, int], errors: list[ErrorDetails]) -> list[str]:
    out: list[str] = []
    for error in errors:
        loc: Loc = tuple(part for part in error["loc"] if not _is_union_tag(part))
        out.append(f"{_line(source, lines, loc)}{format_path(loc) or '<top>'}: {_message(error)}")
    return out


def _is_union_tag(part: str | int) -> bool:
    return isinstance(part, str) and part.startswith(("function-", "constrained-"))


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(kind, "<=")
        bound = next(iter(ctx.values()))
        return f"must be {op} {bound}"
    if kind == "literal_error":
        return f"must be {ctx['expected']}"  # pydantic-core requires it of a literal_error
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    if kind == "string_too_short":
        return "must not be empty"
    return _MESSAGES.get(kind, str(error["msg"]))
