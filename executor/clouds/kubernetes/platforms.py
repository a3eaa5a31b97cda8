"""What each managed Kubernetes does its own way with spot nodes: the label that selects them,
the taint they carry, and the window a Pod has between the reclaim's SIGTERM and its end. The
window is the one place both the Pod's ``terminationGracePeriodSeconds`` and the guard's notice
window (``SPOTWISE_NOTICE_S`` in the Pod) come from (:attr:`Platform.grace_s`): a grace longer
than the window is cut short by the node going away, so the emergency checkpoint must fit
inside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

PlatformName = Literal["gke", "eks", "aks", "cce", "generic"]
DEFAULT_GRACE_S = 30
"""Kubernetes' default ``terminationGracePeriodSeconds``: the grace where the platform sets no
window."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """One platform's spot nodes."""

    name: PlatformName
    title: str
    spot_selector: dict[str, str]
    """The node labels that select its spot nodes (empty: chosen by node pool, see
    ``pool_label``)."""
    spot_tolerations: tuple[dict[str, Any], ...]
    """Tolerations its spot nodes' taints need."""
    window_s: int | None
    """Seconds a Pod has from the reclaim's SIGTERM to its end: the longest useful grace
    (None: the platform sets none, the Pod's own grace is its window)."""
    on_demand_selector: dict[str, str] | None = None
    """The node labels that select its on-demand nodes (None: none; the Pod then only leaves
    out the spot selector and tolerations)."""
    pool_label: str = "topology.kubernetes.io/zone"
    """The node label ``--pools`` names values of (a zone; on CCE, a spot node pool)."""
    source: str
    """Where its rules are documented."""

    @property
    def grace_s(self) -> int:
        """The Pod's ``terminationGracePeriodSeconds``, and the guard's window: the
        platform's window, else Kubernetes' default grace."""
        return self.window_s if self.window_s is not None else DEFAULT_GRACE_S


PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform(
            name="gke",
            title="GKE Spot VMs",
            spot_selector={"cloud.google.com/gke-spot": "true"},
            # a Spot node pool may be tainted so only tolerating Pods land there
            spot_tolerations=(
                {
                    "key": "cloud.google.com/gke-spot",
                    "operator": "Equal",
                    "value": "true",
                    "effect": "NoSchedule",
                },
            ),
            # GKE's graceful node shutdown gives a reclaimed Spot node 30 s: the first 15 s to
            # the Pods, the last 15 s to critical system Pods (configurable up to 120 s from
            # GKE 1.35 on a node pool's system config; not assumed here)
            window_s=15,
            source="https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms",
        ),
        Platform(
            name="eks",
            title="EKS with Karpenter spot capacity",
            spot_selector={"karpenter.sh/capacity-type": "spot"},
            spot_tolerations=(),
            on_demand_selector={"karpenter.sh/capacity-type": "on-demand"},
            # EC2's two-minute interruption notice, which Karpenter's interruption handling
            # (or the AWS Node Termination Handler) turns into a drain of the node
            window_s=120,
            source="https://karpenter.sh/docs/concepts/disruption/#interruption",
        ),
        Platform(
            name="aks",
            title="AKS Spot node pools",
            spot_selector={"kubernetes.azure.com/scalesetpriority": "spot"},
            spot_tolerations=(
                {
                    "key": "kubernetes.azure.com/scalesetpriority",
                    "operator": "Equal",
                    "value": "spot",
                    "effect": "NoSchedule",
                },
            ),
            # Azure's Scheduled Events give a Spot VM's eviction at least 30 s of notice
            window_s=30,
            source="https://learn.microsoft.com/azure/aks/spot-node-pool",
        ),
        Platform(
            # CCE documents no label that marks a spot node (its node.cce.io/billing-mode label
            # is seen with pre-paid and post-paid only): a job names its spot node pools, and
            # the Node Problem Detector's reclaim taint comes about 5 minutes ahead.
            name="cce",
            title="CCE spot price node pools",
            spot_selector={},
            spot_tolerations=(),
            # Uncertain: 120 s is what Spotwise's Huawei cloud takes for an ECS spot notice
            # (executor/clouds/huawei/notice.py); CCE documents no Pod grace for a reclaim,
            # and its reclaim taint evicts the Pods with their own grace about 5 minutes ahead
            window_s=120,
            pool_label="cce.cloud.com/cce-nodepool",
            source="https://support.huaweicloud.com/intl/en-us/price-cce/cce_03_0026.html",
        ),
        Platform(
            name="generic",
            title="a cluster whose spot nodes carry a label of your own",
            spot_selector={},
            spot_tolerations=(),
            window_s=None,
            source="docs/kubernetes.md",
        ),
    )
}

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
"""GKE, AKS and the NVIDIA device plugin's node pools taint GPU nodes with ``nvidia.com/gpu``."""
