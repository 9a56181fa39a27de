"""The example recordings shipped with gpulab: `gpulab verify --replay example:NAME`.

One per built-in profile, package data in `gpulab/examples/recordings/<profile>/` (found through
importlib.resources, like the built-in profiles: the same in a source tree, a wheel, `pip install
--user` and pipx). They let a new user see what `verify` prints without any cluster. They are
**not recordings of a running lab**: the tests build them from the write-ups' published outputs
(`python -m tests.kamaji_hami.builders`, `python -m tests.vcluster_kai.builders`), and
tests/unit/test_examples.py keeps them identical to the tests' copies in tests/data/recordings.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from gpulab.errors import UsageError

EXAMPLE_PREFIX = "example:"

# What each example is, said wherever it is replayed (never passed off as a real lab's run).
PROVENANCE = ("an example recording shipped with gpulab, built from the write-up's published "
              "outputs, not recorded on a running lab")


def examples_dir() -> Path:
    """`gpulab/examples/recordings` of this install."""
    folder = resources.files("gpulab").joinpath("examples").joinpath("recordings")
    # Every install pip or pipx makes is a real folder (see gpulab.profile.load.profiles_dir).
    return folder if isinstance(folder, Path) else Path(str(folder))


def example_recordings() -> dict[str, Path]:
    """Example name (a built-in profile's) → its recording folder; empty when the install lacks
    them."""
    folder = examples_dir()
    if not folder.is_dir():
        return {}
    return {path.name: path for path in sorted(folder.iterdir())
            if (path / "manifest.json").is_file()}


def is_example_ref(value: str) -> bool:
    return value.startswith(EXAMPLE_PREFIX)


def example_recording(ref: str) -> Path:
    """The folder of `example:NAME` (or `NAME`); a UsageError listing the examples otherwise."""
    name = ref.removeprefix(EXAMPLE_PREFIX)
    found = example_recordings()
    if name in found:
        return found[name]
    if not found:
        raise UsageError(f"no example recordings in {examples_dir()}: this gpulab install lacks "
                         "its package data",
                         hint="reinstall gpulab: `pip install --force-reinstall WHEEL-OR-DIR` "
                              "or `pipx reinstall gpulab`")
    choices = ", ".join(EXAMPLE_PREFIX + n for n in found)
    raise UsageError(f"no example recording '{name}'", hint=f"examples: {choices}")


def is_example(directory: Path) -> bool:
    """Whether `directory` is one of the shipped examples."""
    try:
        return directory.resolve() in {p.resolve() for p in example_recordings().values()}
    except OSError:
        return False
