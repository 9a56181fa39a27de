"""A ContainerSpec as the Engine API's host config (kind's node and the privileged probe), the
restart policy, and label filters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docker.types import Mount

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpulab.adapters.base import ContainerSpec


def _label_filters(labels: Mapping[str, str] | None) -> dict[str, list[str]] | None:
    if not labels:
        return None
    return {"label": [f"{key}={value}" for key, value in labels.items()]}


def parse_restart_policy(policy: str) -> dict[str, Any]:
    """Docker's `--restart` syntax (`no`, `always`, `unless-stopped`, `on-failure[:N]`)."""
    name, _, count = policy.partition(":")
    if name not in {"no", "always", "unless-stopped", "on-failure"}:
        raise ValueError(f"unknown restart policy '{policy}'")
    if count and name != "on-failure":
        raise ValueError(f"restart policy '{name}' takes no retry count")
    if not count:
        return {"Name": name}
    if not count.isdigit():
        raise ValueError(f"restart policy '{policy}': retry count must be a number")
    return {"Name": name, "MaximumRetryCount": int(count)}


def node_host_config_args(spec: ContainerSpec) -> dict[str, Any]:
    """`create_host_config` arguments for a node container, flag for flag as kind runs nodes.

    kind (providers/docker/provision.go, commonArgs and runArgsForNode): --privileged, unconfined
    seccomp and apparmor, tmpfs on /tmp and /run, an anonymous volume on /var, /lib/modules
    read-only, --cgroupns=private, --init=false, --restart=on-failure:1; and where the host needs
    them (decided by gpulab.node_options.node_host_options as kind's util.go does):
    --volume /dev/mapper, --device /dev/fuse, --userns=host, and the proxy variables.
    """
    return {
        "privileged": spec.privileged,  # kubelet, containerd and kube-proxy need the host's powers
        "security_opt": list(spec.security_opt),
        "tmpfs": dict.fromkeys(spec.tmpfs, ""),  # systemd wants /run and /tmp as tmpfs
        # Anonymous volumes: the node's containerd store must not live on overlayfs; removed with
        # the container (remove(v=True)).
        "mounts": [
            Mount(target=path, source=None, type="volume") for path in spec.anonymous_volumes
        ],
        # `-v` semantics like kind's `--volume /lib/modules:/lib/modules:ro` (a bind Mount would
        # refuse a missing source; kind tolerates hosts without /lib/modules).
        "binds": {
            **{src: {"bind": dst, "mode": "ro"} for src, dst in spec.readonly_binds},
            **{src: {"bind": dst, "mode": "rw"} for src, dst in spec.binds},
        },
        "cgroupns": spec.cgroupns,  # the node runs its own systemd and cgroup tree
        "init": False,  # systemd is PID 1
        "restart_policy": parse_restart_policy(spec.restart_policy),
        "network_mode": spec.network,
        **({"devices": [f"{d}:{d}:rwm" for d in spec.devices]} if spec.devices else {}),
        **({"userns_mode": spec.userns_mode} if spec.userns_mode else {}),
    }


def probe_host_config_args(spec: ContainerSpec) -> dict[str, Any]:
    """A node's `create_host_config` arguments (`node_host_config_args`) for doctor's throw-away
    probe: every option that asks the engine for privileges or namespaces is the node's
    (--privileged, seccomp/apparmor, --userns=host, --cgroupns=private, /dev/fuse, the binds,
    the tmpfs mounts, --init=false). Left out: the network (kind creates its network with the
    cluster, so it may not exist yet: the probe uses the default bridge), the restart policy
    (the probe is removed at once) and the anonymous /var volume (the engine would copy the
    image's /var into it, and a kindest/node keeps there the Kubernetes images its build
    imported into containerd: kind fed26882 pkg/build/nodeimage/buildcontext.go:256,
    imageimporter.go:80)."""
    args = node_host_config_args(spec)
    for dropped in ("network_mode", "restart_policy", "mounts"):
        args.pop(dropped, None)
    return args
