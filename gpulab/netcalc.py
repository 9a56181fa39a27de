"""The MetalLB address range, derived from the kind network's IPAM data.

kind networks are dual-stack: `IPAM.Config` holds an IPv4 entry and an IPv6 ULA entry, and the IPv6
entry has no `Gateway`. Gluing the gateways together (the Kamaji guide's template) produced
`fc00:…::1172.18.0.1` in the write-up; here only IPv4 subnets are considered.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from gpulab.errors import HostError

__all__ = ["AddressRange", "ipv4_subnets", "metallb_range"]


@dataclass(frozen=True)
class AddressRange:
    """An inclusive IPv4 range in MetalLB's `first-last` notation."""

    first: ipaddress.IPv4Address
    last: ipaddress.IPv4Address
    subnet: ipaddress.IPv4Network

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"

    @property
    def size(self) -> int:
        return int(self.last) - int(self.first) + 1


def ipv4_subnets(ipam_config: list[dict[str, Any]] | None) -> list[ipaddress.IPv4Network]:
    """The IPv4 subnets of a Docker network's `IPAM.Config`, in order; IPv6 and junk skipped."""
    subnets: list[ipaddress.IPv4Network] = []
    for entry in ipam_config or []:
        raw = entry.get("Subnet") if isinstance(entry, dict) else None
        if not raw:
            continue
        try:
            net = ipaddress.ip_network(raw, strict=False)
        except ValueError:
            continue
        if isinstance(net, ipaddress.IPv4Network):
            subnets.append(net)
    return subnets


def metallb_range(
    ipam_config: list[dict[str, Any]] | None,
    *,
    size: int = 51,
    offset_from_top: int = 5,
    network: str = "kind",
    avoid: list[tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]] | None = None,
) -> AddressRange:
    """A pool of `size` addresses ending `offset_from_top` below the broadcast address.

    For kind's default 172.18.0.0/16 this is 172.18.255.200-172.18.255.250, the write-up's range.
    Docker hands out container addresses from the bottom of the subnet, so the top is free.
    Ranges in `avoid` (other labs' pools on the same network) are stepped over, downwards.
    """
    subnets = ipv4_subnets(ipam_config)
    if not subnets:
        raise HostError(
            f"Docker network '{network}' has no IPv4 subnet, so MetalLB has no addresses to use",
            hint=f"recreate it with an IPv4 subnet: docker network rm {network}, then gpulab up",
        )
    subnet = subnets[0]
    broadcast = int(subnet.broadcast_address)
    last = broadcast - offset_from_top
    first = last - size + 1
    taken = sorted(((int(a), int(b)) for a, b in avoid or []), reverse=True)
    for low, high in taken:
        if first <= high and low <= last:  # overlaps another lab's pool: go below it
            last = low - 1
            first = last - size + 1
    # Keep clear of the network address, the gateway (.1) and the low addresses Docker assigns.
    lowest_usable = int(subnet.network_address) + max(2, subnet.num_addresses // 2)
    if first < lowest_usable:
        usable = max(0, last - lowest_usable + 1)
        raise HostError(
            f"Docker network '{network}' subnet {subnet} is too small for a {size}-address "
            f"MetalLB pool (only {usable} addresses in its upper half)",
            hint="lower components.metallb.pool_size in the profile, or use a larger subnet",
        )
    return AddressRange(ipaddress.IPv4Address(first), ipaddress.IPv4Address(last), subnet)
