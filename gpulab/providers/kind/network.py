"""Provider kind: LoadBalancer addresses on the kind network (`ClusterFacts.lb_range`).

A stack that hands out LoadBalancer addresses itself (kamaji-hami's MetalLB) asks for a range
(`AddressNeed`); on kind they come from the top of the kind Docker network's IPv4 subnet, where
Docker does not hand out container addresses (netcalc.metallb_range). Labs on one host share
that network, so each records its range in its lab folder (`POOL_FILE`) and a new lab steps
below the others' (labs of other users on the host are not seen). Imports no stack.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.errors import GpulabError, HostError
from gpulab.netcalc import AddressRange, ipv4_subnets, metallb_range

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters.base import DockerReader, LabAdapters
    from gpulab.providers.base import AddressNeed

__all__ = ["POOL_FILE", "KindAddresses", "lab_range", "observe"]

POOL_FILE = "metallb-pool"


def _read_range(path: Path) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address] | None:
    try:
        first, last = path.read_text(encoding="utf-8").strip().split("-")
        return ipaddress.IPv4Address(first), ipaddress.IPv4Address(last)
    except (OSError, ValueError):
        return None


def lab_range(need: AddressNeed, lab: str, ipam: list[dict[str, Any]], network: str
              ) -> AddressRange:
    """This lab's range: the one it recorded, else the top range no other lab uses."""
    from gpulab.paths import lab_dir, labs_root

    recorded = _read_range(lab_dir(lab) / POOL_FILE)
    if recorded is not None:
        subnet = next(iter(ipv4_subnets(ipam)), None)
        if subnet is not None and recorded[0] in subnet and recorded[1] in subnet:
            return AddressRange(recorded[0], recorded[1], subnet)
    avoid = [r for path in sorted(labs_root().glob(f"*/{POOL_FILE}"))
             if path.parent.name != lab and (r := _read_range(path)) is not None]
    return metallb_range(ipam, size=need.size, offset_from_top=need.offset_from_top,
                         network=network, avoid=avoid)


@dataclass(frozen=True)
class KindAddresses:
    """`need` met on the kind Docker network `network` (providers.base.AddressRanges): its
    IPAM config as Docker showed it before `up` (`ipam`; None: not seen, `error` says why),
    else looked up once the cluster exists. `fixed` fixes the range outright (tests,
    benchmarks)."""

    need: AddressNeed
    lab: str
    network: str
    ipam: tuple[dict[str, Any], ...] | None = None
    error: str = ""
    fixed: AddressRange | None = None

    def planned(self) -> AddressRange | None:
        if self.fixed is not None:
            return self.fixed
        if self.ipam is None:
            return None
        return lab_range(self.need, self.lab, list(self.ipam), self.network)

    @property
    def pending(self) -> str:
        return self.error

    def resolve(self, adapters: LabAdapters) -> AddressRange:
        planned = self.planned()
        if planned is not None:
            return planned
        network = adapters.runtime.network(self.network)
        if network is None:
            raise HostError(f"Docker network '{self.network}' not found after the cluster was "
                            "created")
        return lab_range(self.need, self.lab, network.ipam_config, self.network)

    def keep(self, addresses: AddressRange) -> None:
        """Recorded in the lab's folder, so the next lab on this host steps below it."""
        from gpulab.paths import lab_dir

        record = lab_dir(self.lab) / POOL_FILE
        record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        record.write_text(f"{addresses}\n", encoding="utf-8")


def observe(need: AddressNeed, lab: str, network: str, runtime: DockerReader | None
            ) -> KindAddresses:
    """Ask Docker for the kind network's subnets; absent network or Docker → pending. Refused
    early (pending, with why) when the network can hold no range at all."""
    if runtime is None:
        return KindAddresses(need, lab, network, error="Docker not reachable")
    try:
        found = runtime.network(network)
    except GpulabError as err:
        return KindAddresses(need, lab, network, error=str(err))
    if found is None:
        return KindAddresses(need, lab, network, error=f"network '{network}' does not exist yet")
    try:
        metallb_range(found.ipam_config, size=need.size, offset_from_top=need.offset_from_top,
                      network=found.name)
    except HostError as err:
        return KindAddresses(need, lab, network, error=str(err))
    return KindAddresses(need, lab, found.name, ipam=tuple(found.ipam_config))
