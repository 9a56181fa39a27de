"""vcluster-kai on an existing cluster at scale: plan, preflight, up and status for 20 teams on a
cluster with 200 GPU nodes, against one team on one GPU node.

The cluster is simulated: every read (and `up`'s writes) goes over HTTP to local kmock API
servers on 127.0.0.1 (tests/existing/kmock_cluster.py: the host cluster, one per vCluster) through
gpulab's real KubeClient; Helm is the tests' fake, which records installs and how many overlap
(each install takes HELM_SECONDS, so the bound on parallel Helm calls is what shows). It measures
gpulab's own cost per request and how it grows with teams and nodes (requests to the host API
are counted), not a real API server's latency.

Goals (full mode): at 20 teams x 200 GPU nodes, plan + preflight under GOAL_PLAN_SECONDS; status
under GOAL_STATUS_SECONDS; Helm installs never more than the bound at once (default 4).
`--smoke` runs tiny sizes once without goals (CI: the benchmark cannot rot).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from gpulab import core
from gpulab.providers.base import ClusterChoice
from gpulab.stacks import load_profile, parse_profile
from tests.existing.kmock_cluster import ExistingCluster

GOAL_PLAN_SECONDS = 5.0  # plan + preflight at the largest size
GOAL_STATUS_SECONDS = 5.0
HELM_SECONDS = 0.05  # what one fake `helm upgrade --install` takes
RTT_MS = 10.0  # a network round trip to the API server (a cloud cluster from a laptop: 10-50)


def scaled_profile(teams: int) -> Any:
    """The built-in vcluster-kai profile with `teams` teams (ports and queues of their own)."""
    data = yaml.safe_load(load_profile("vcluster-kai").source.read_text(encoding="utf-8"))
    base = data["teams"][0]
    data["teams"] = [{**base, "name": f"team-{i:02d}", "api_node_port": 31443 + i}
                     for i in range(teams)]
    return parse_profile(yaml.safe_dump(data, sort_keys=False), f"bench-{teams}-teams.yaml")


class TailLog(list):  # type: ignore[type-arg]
    """kmock's request log, kept short: kmock matches each request against every request it
    logged before (kmock/_internal/dsl.py `__contains__`), so with a full log the fake itself
    grows quadratic in requests and would hide gpulab's own cost. `total` counts them all."""

    total = 0

    def append(self, request: Any) -> None:
        TailLog.total += 1
        super().append(request)
        if len(self) > 64:
            del self[:32]


def short_logs(cluster: ExistingCluster) -> None:
    def swap() -> None:
        for member in (cluster.host, *cluster.vclusters.values()):
            member.km._requests = TailLog()

    cluster.host.call(swap)


def requests_to(cluster: ExistingCluster, fn: Any) -> tuple[float, int, Any]:
    """(seconds, requests to every API server, value) of fn()."""
    before = TailLog.total
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, TailLog.total - before, value


def with_round_trip(seconds: float) -> None:
    """Every request of gpulab's KubeClient waits `seconds` first: the network round trip to a
    real API server, which the in-process fake does not have (it answers in ~2 ms, all of it
    CPU under the same GIL, so only the round trip shows what overlapping requests saves)."""
    from gpulab.adapters.kube import KubeClient

    send = KubeClient._send

    def delayed(self: KubeClient, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return send(self, *args, **kwargs)

    KubeClient._send = delayed  # type: ignore[method-assign]


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure(teams: int, nodes: int, folder: Path) -> dict[str, Any]:
    profile = scaled_profile(teams)
    lab = f"scale-{teams}x{nodes}"
    names = [t.name for t in profile.teams]
    with ExistingCluster(folder, gpu_nodes=nodes).running(names) as cluster:
        short_logs(cluster)
        choice = ClusterChoice("existing", kubeconfig=cluster.kubeconfig)
        preflight, preflight_requests, (facts, _step, problems) = requests_to(
            cluster, lambda: core.survey(profile, lab, choice))
        if problems:
            raise SystemExit(f"bench_existing_scale: preflight refused: {problems}")
        if len(facts.gpu_nodes) != nodes:
            raise SystemExit(f"bench_existing_scale: {len(facts.gpu_nodes)} GPU nodes seen, "
                             f"{nodes} simulated")

        def plan() -> int:
            steps, _note = core.plan_steps(profile, lab, probe_host=False, cluster=choice)
            return sum(len(s.describe()) for s in steps)

        plan_seconds, _artifacts = timed(plan)

        from gpulab.paths import lab_dir

        cluster.helm_seconds = HELM_SECONDS
        up_seconds, result = timed(lambda: core.up(profile, lab, lambda _e: None,
                                                   adapters=cluster.adapters(lab_dir(lab)),
                                                   sleep=lambda _s: None, cluster=choice))
        if not result.ok:
            raise SystemExit("bench_existing_scale: up failed: "
                             + "; ".join(str(f.error) for f in result.failures))
        status_seconds, status_requests, info = requests_to(
            cluster, lambda: core.status(lab, core.lab_provider(lab), profile, cluster.client))
        if len(info["gpu_nodes"]) != nodes or len(info["tenants"]) != teams:
            raise SystemExit("bench_existing_scale: status did not see every node and team")
        return {"teams": teams, "nodes": nodes, "preflight": preflight, "plan": plan_seconds,
                "up": up_seconds, "status": status_seconds, "helm_overlap": cluster.helm_most,
                "preflight_requests": preflight_requests, "status_requests": status_requests}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (1x1 and 2x3), no goal (CI)")
    parser.add_argument("--rtt-ms", type=float, default=RTT_MS,
                        help=f"simulated round trip per API request (default {RTT_MS})")
    args = parser.parse_args(argv)
    if args.rtt_ms > 0:
        with_round_trip(args.rtt_ms / 1000)
    sizes = ((1, 1), (2, 3)) if args.smoke else ((1, 1), (20, 200))
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpulab-bench-") as scratch:
        os.environ["GPULAB_HOME"] = str(Path(scratch) / "home")
        os.environ["KUBECONFIG"] = str(Path(scratch) / "none.kubeconfig")
        for teams, nodes in sizes:
            rows.append(measure(teams, nodes, Path(scratch)))
    print(f"simulated API round trip: {args.rtt_ms:g} ms per request")
    print(f"{'teams':>5} {'nodes':>5} {'preflight':>9} {'plan':>7} {'up':>7} {'status':>7} "
          f"{'helm||':>6} {'reqs pre/status':>15}")
    for r in rows:
        print(f"{r['teams']:>5} {r['nodes']:>5} {r['preflight']:>8.2f}s {r['plan']:>6.2f}s "
              f"{r['up']:>6.2f}s {r['status']:>6.2f}s {r['helm_overlap']:>6} "
              f"{r['preflight_requests']:>7}/{r['status_requests']:<7}")
    small, large = rows[0], rows[-1]
    for key in ("preflight", "plan", "status"):
        print(f"{key}: {large['teams']}x{large['nodes']} / 1x1 = "
              f"{large[key] / small[key]:.1f}x")
    if args.smoke:
        print("smoke run: no goal checked")
        return 0
    from gpulab.providers.existing import HELM_PARALLEL

    checks = [
        (large["plan"] + large["preflight"] < GOAL_PLAN_SECONDS,
         f"plan + preflight {large['plan'] + large['preflight']:.2f}s "
         f"(goal < {GOAL_PLAN_SECONDS}s)"),
        (large["status"] < GOAL_STATUS_SECONDS,
         f"status {large['status']:.2f}s (goal < {GOAL_STATUS_SECONDS}s)"),
        (large["helm_overlap"] <= HELM_PARALLEL,
         f"at most {large['helm_overlap']} Helm installs at once (goal <= {HELM_PARALLEL})"),
    ]
    for ok, text in checks:
        print(f"{text}: {'met' if ok else 'MISSED'}")
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
