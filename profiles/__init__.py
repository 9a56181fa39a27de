"""The built-in profiles (`*.yaml`): package data of `gpulab.profiles`.

This top-level folder is the package `gpulab.profiles` (pyproject.toml maps it with
`package-dir`): the wheel carries it as `gpulab/profiles/`, and every install, editable ones
included, finds it through `importlib.resources.files("gpulab.profiles")`
(gpulab.profile.load.profiles_dir). This file makes it a regular package, whose files are a plain
folder.
"""
