"""Upstream output the cluster shapes carry, copied verbatim from upstream at the pins (file:line
given for each): what HAMi's device plugin and scheduler write on nodes, what KAI's operator and
docs show, what Kubernetes puts on nodes. Never typed from memory; the builders only place them.
"""

from __future__ import annotations

# ---------------------------------------------------------------- HAMi v2.10.0 (4707fb02c91c)

# hami.io/node-nvidia-register as MarshalNodeDevices writes it (pkg/device/devices.go:422-443):
# pkg/scheduler/scheduler_test.go:2494 and :2578, two A100 cards in hami-core mode, split 10.
REGISTER_A100_GPU0 = ('[{"id":"GPU-0","count":10,"devmem":8192,"devcore":100,"type":"NVIDIA-A100",'
                      '"numa":0,"health":true,"index":0,"mode":"hami-core"}]')
REGISTER_A100_GPU1 = ('[{"id":"GPU-1","count":10,"devmem":8192,"devcore":100,"type":"NVIDIA-A100",'
                      '"numa":0,"health":true,"index":1,"mode":"hami-core"}]')
# The first one as the device plugin registers it when the card is unhealthy: `Health` is
# `json:"health,omitempty"` (devices.go:138), so MarshalNodeDevices leaves `health` out
# (register.go:271 writes it; devices_test.go:304-382 shows the false value being dropped).
REGISTER_A100_GPU0_UNHEALTHY = REGISTER_A100_GPU0.replace('"health":true,', "")
# pkg/scheduler/register_race_test.go:85 with healthy=true: a 40 GiB card.
REGISTER_40G_GPU0 = ('[{"id":"GPU-0","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA",'
                     '"health":true,"mode":"hami-core","numa":0,"index":0,'
                     '"devicevendor":"NVIDIA"}]')
# pkg/device/nvidia/device_test.go:2472: an A100-40GB registered in MIG mode, with its profiles.
REGISTER_MIG_GPU0 = ('[{"id":"GPU-0","count":7,"devmem":40960,"devcore":100,'
                     '"type":"NVIDIA-A100-SXM4-40GB","numa":0,"health":true,"mode":"mig",'
                     '"migProfiles":[{"name":"1g.5gb","memoryMB":5120,"core":14,"sliceCount":1,'
                     '"instanceCount":7,"multiprocessorCount":14,'
                     '"placements":[{"start":6,"size":1}]}]}]')
# pkg/scheduler/scheduler_test.go:1144: the handshake the scheduler writes (devices.go:601).
HANDSHAKE_REQUESTING_OLD = "Requesting_2025-06-13 09:07:40"
# docs/develop/protocol.md:10: the device plugin's answer, `Reported_<time>`.
HANDSHAKE_REPORTED = "Reported_2026-12-01 10:00:00"
# pkg/device/nvidia/device_test.go:1246,1250: hami.io/device-cordon, a uuid list ("dev-1, ").
CORDON_GPU0 = "GPU-0, "
# examples/nvidia/mig_example.yaml:12: a pod asking a MIG device (mixed strategy resource name,
# pkg/device-plugin/nvidiadevice/nvinternal/rm/rm.go:147-153).
MIG_RESOURCE = "nvidia.com/mig-3g.20gb"

# ---------------------------------------------------------------- KAI Scheduler v0.16.8

# pkg/operator/operands/scheduler/resources_test.go:49, :60: a Config naming another scheduler,
# a shard's partition label value; :88-90 a shard argument.
OTHER_SCHEDULER = "other-kai-scheduler"
PARTITION = "partition-1"
NO_FULL_HIERARCHY = {"full-hierarchy-fairness": "false"}
NODE_POOL_LABEL = "kai.scheduler/node-pool"  # pkg/common/constants/constants.go:26

# ---------------------------------------------------------------- Kubernetes

# api core/v1/well_known_taints.go:35 (kubernetes-1.36.3): the taint TaintNodesByCondition puts on
# a node with MemoryPressure, NoSchedule (website taint-and-toleration.md, "Taint Nodes by
# Condition").
MEMORY_PRESSURE_TAINT = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
# api core/v1/well_known_taints.go:21 (kubernetes-1.36.3): the taint on a node that is not
# ready, NoSchedule (TaintNodesByCondition) and NoExecute (the node lifecycle controller); the
# API server's default tolerations cover the NoExecute one only (rules.DEFAULT_TOLERATIONS).
NOT_READY_TAINT_KEY = "node.kubernetes.io/not-ready"
# website content/en/docs/concepts/scheduling-eviction/taint-and-toleration.md: `kubectl taint
# nodes node1 key1=value1:NoSchedule`, and the PreferNoSchedule effect (which never refuses).
TAINT_KEY1 = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
TAINT_PREFER = {"key": "key1", "value": "value1", "effect": "PreferNoSchedule"}

# ---------------------------------------------------------------- kind (fed26882)

# A kind cluster's control plane, named `<cluster>-control-plane`: kubeadm labels it
# node-role.kubernetes.io/control-plane (pkg/cluster/internal/create/actions/waitforready/
# waitforready.go:82 waits on that label) and taints it so; kind removes the taint only when the
# cluster has one node (actions/kubeadminit/init.go:123-147, `control-plane-`).
CONTROL_PLANE_LABEL = {"node-role.kubernetes.io/control-plane": ""}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
# kubernetes/website content/en/docs/reference/access-authn-authz/admission-controllers.md,
# "ExtendedResourceToleration": operators "taint the node with the extended resource name as the
# key" (`nvidia.com/gpu`, NoSchedule: the effect the plugin tolerates, kubernetes
# plugin/pkg/admission/extendedresourcetoleration/admission.go:88-94 at 143ac994); the same key
# with a value, as managed clouds write it (`nvidia.com/gpu=present:NoSchedule`), is tolerated
# alike (operator Exists).
GPU_RESOURCE_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
GPU_RESOURCE_TAINT_PRESENT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

# NVIDIA/k8s-device-plugin deployments/static/nvidia-device-plugin.yml at 1c3a10be (v0.17.1 image;
# Apache-2.0), verbatim from its `apiVersion` line: the device plugin that advertises
# nvidia.com/gpu, one device per GPU, beside HAMi's in tests/cluster/test_two_advertisers.py.
NVIDIA_DEVICE_PLUGIN_DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-device-plugin-daemonset
  namespace: kube-system
spec:
  selector:
    matchLabels:
      name: nvidia-device-plugin-ds
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: nvidia-device-plugin-ds
    spec:
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      # Mark this pod as a critical add-on; when enabled, the critical add-on
      # scheduler reserves resources for critical add-on pods so that they can
      # be rescheduled after a failure.
      # See https://kubernetes.io/docs/tasks/administer-cluster/guaranteed-scheduling-critical-addon-pods/
      priorityClassName: "system-node-critical"
      containers:
      - image: nvcr.io/nvidia/k8s-device-plugin:v0.17.1
        name: nvidia-device-plugin-ctr
        env:
          - name: FAIL_ON_INIT_ERROR
            value: "false"
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            drop: ["ALL"]
        volumeMounts:
        - name: kubelet-device-plugins-dir
          mountPath: /var/lib/kubelet/device-plugins
      volumes:
      - name: kubelet-device-plugins-dir
        hostPath:
          path: /var/lib/kubelet/device-plugins
          type: Directory
"""
