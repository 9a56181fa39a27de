"""The use cases behind the commands, one module per concern; `gpulab.core` is their façade.

The CLI (`gpulab.cli`) parses, calls one use case through `gpulab.core` and renders; the logic
lives here and in `gpulab.core` (what reaches this host's tools: Docker, Helm, the providers).
"""
