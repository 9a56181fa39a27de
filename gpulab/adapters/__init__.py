"""Adapters: the only modules that import docker, kubernetes, pyhelm3 or run kind/helm."""
