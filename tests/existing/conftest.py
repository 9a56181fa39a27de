"""The kmock clusters' nodes stand for nodes this machine reaches: `up` with `expose: auto`
probes a node's address (providers.existing.facts.node_reachable, a TCP connection to the kubelet's
port) to choose NodePort over port-forward, and the kmock nodes' addresses (10.0.x.y) are made
up, so whether they answer would depend on the machine the tests run on. Tests that want a node
that does not answer set `reachable` themselves."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def reachable(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the kmock nodes answer (`reachable[0] = False`: they do not)."""
    answer = [True]
    monkeypatch.setattr("gpulab.providers.existing.facts.node_reachable",
                        lambda _address, *_a, **_k: answer[0])
    return answer
