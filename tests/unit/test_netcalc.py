"""The MetalLB pool `up` derives from the kind network (gpulab/netcalc.py): its edges, the other
labs' pools it steps over, and what the user reads when there is no room.

tests/unit/test_render.py holds the write-up's range; these pin the boundaries (mutation
testing, docs/dev/mutation-testing.md, found them unpinned)."""

from __future__ import annotations

import ipaddress

import pytest

from gpulab.errors import HostError
from gpulab.netcalc import ipv4_subnets, metallb_range

IP = ipaddress.IPv4Address


def test_the_first_ipv4_subnet_counts_whatever_comes_before_it() -> None:
    """Entries without a subnet, junk and IPv6 are skipped, not the end of the list; a subnet
    written with host bits is read as its network (Docker accepts `10.1.2.3/24`)."""
    ipam = [{"Gateway": "172.18.0.1"}, "junk", {"Subnet": "not-a-subnet"},
            {"Subnet": "fd00::/64"}, {"Subnet": "10.1.2.3/24"}, {"Subnet": "172.18.0.0/16"}]
    assert ipv4_subnets(ipam) == [ipaddress.IPv4Network("10.1.2.0/24"),
                                  ipaddress.IPv4Network("172.18.0.0/16")]
    pool = metallb_range(ipam)
    assert str(pool) == "10.1.2.200-10.1.2.250"
    assert pool.subnet == ipaddress.IPv4Network("10.1.2.0/24")


def test_no_ipv4_subnet_names_the_network_and_how_to_recreate_it() -> None:
    with pytest.raises(HostError) as default:
        metallb_range([{"Subnet": "fd00::/64"}])
    assert default.value.message == ("Docker network 'kind' has no IPv4 subnet, so MetalLB has "
                                     "no addresses to use")
    assert default.value.hint == ("recreate it with an IPv4 subnet: docker network rm kind, "
                                  "then gpulab up")
    with pytest.raises(HostError) as named:
        metallb_range(None, network="lab-net")
    assert "docker network rm lab-net" in str(named.value)


@pytest.mark.parametrize(("avoid", "expected"), [
    # another lab's pool ends exactly where ours would start: they overlap by one address
    ([("172.18.255.150", "172.18.255.200")], "172.18.255.99-172.18.255.149"),
    # another lab's pool starts exactly where ours would end
    ([("172.18.255.250", "172.18.255.254")], "172.18.255.199-172.18.255.249"),
    # touching from below or above is no overlap
    ([("172.18.255.100", "172.18.255.199")], "172.18.255.200-172.18.255.250"),
    ([("172.18.255.251", "172.18.255.254")], "172.18.255.200-172.18.255.250"),
    # two pools stacked below the top: stepped over one after the other
    ([("172.18.255.200", "172.18.255.250"), ("172.18.255.149", "172.18.255.199")],
     "172.18.255.98-172.18.255.148"),
])
def test_other_labs_pools_are_stepped_over_downwards(avoid, expected) -> None:
    ranges = [(IP(low), IP(high)) for low, high in avoid]
    pool = metallb_range([{"Subnet": "172.18.0.0/16"}], avoid=ranges)
    assert str(pool) == expected
    assert pool.size == 51


def test_the_pool_may_reach_down_to_the_middle_of_the_subnet_not_below() -> None:
    """On a /24 the upper half starts at .128: a 123-address pool ending at .250 starts there and
    fits; one more address does not, and the user reads how many there are."""
    fits = metallb_range([{"Subnet": "10.9.8.0/24"}], size=123)
    assert (str(fits), fits.size) == ("10.9.8.128-10.9.8.250", 123)
    with pytest.raises(HostError) as refused:
        metallb_range([{"Subnet": "10.9.8.0/24"}], size=124, network="lab")
    assert refused.value.message == ("Docker network 'lab' subnet 10.9.8.0/24 is too small for a "
                                     "124-address MetalLB pool (only 123 addresses in its upper "
                                     "half)")
    assert refused.value.hint == ("lower components.metallb.pool_size in the profile, or use a "
                                  "larger subnet")


@pytest.mark.parametrize(("size", "usable"), [(150, 123), (300, 123)])
def test_a_pool_larger_than_the_upper_half_is_refused(size, usable) -> None:
    with pytest.raises(HostError, match=rf"\(only {usable} addresses in its upper half\)"):
        metallb_range([{"Subnet": "10.9.8.0/24"}], size=size)


def test_no_room_at_all_says_zero_addresses() -> None:
    """Other labs' pools took the whole upper half: nothing is left, not a negative count."""
    taken = [(IP("10.9.8.100"), IP("10.9.8.254"))]
    with pytest.raises(HostError, match=r"\(only 0 addresses in its upper half\)"):
        metallb_range([{"Subnet": "10.9.8.0/24"}], size=10, avoid=taken)


def test_a_tiny_subnet_still_keeps_clear_of_the_network_address_and_the_gateway() -> None:
    """A /29 (.0-.7): its upper half would start at .4, but never lower than .2 (network and
    gateway); on a /30 the floor of two addresses decides."""
    assert str(metallb_range([{"Subnet": "10.0.0.0/29"}], size=3, offset_from_top=1)) == (
        "10.0.0.4-10.0.0.6")
    assert str(metallb_range([{"Subnet": "10.0.0.0/30"}], size=1, offset_from_top=1)) == (
        "10.0.0.2-10.0.0.2")
    with pytest.raises(HostError, match=r"\(only 1 addresses in its upper half\)"):
        metallb_range([{"Subnet": "10.0.0.0/30"}], size=2, offset_from_top=1)
