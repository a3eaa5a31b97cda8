"""What each managed Kubernetes does its own way with spot nodes: the label that selects them,
the taint they carry, and the window between the reclaim's start and the node's end (which
bounds ``terminationGracePeriodSeconds``: a grace longer than the window is cut short by the
node going away, so the emergency checkpoint must fit inside it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

PlatformName = Literal["gke", "eks", "aks", "cce", "generic"]


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
    window_s: int
    """Seconds from the reclaim's start to the node's end: the longest useful grace."""
    on_demand_selector: dict[str, str] | None = None
    """The node labels that select its on-demand nodes (None: none; the Pod then only leaves
    out the spot selector and tolerations)."""
    pool_label: str = "topology.kubernetes.io/zone"
    """The node label ``--pools`` names values of (a zone; on CCE, a spot node pool)."""
    source: str
    """Where its rules are documented."""


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
            window_s=30,
            source="https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms",
        ),
        Platform(
            name="eks",
            title="EKS with Karpenter spot capacity",
            spot_selector={"karpenter.sh/capacity-type": "spot"},
            spot_tolerations=(),
            on_demand_selector={"karpenter.sh/capacity-type": "on-demand"},
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
            window_s=120,
            pool_label="cce.cloud.com/cce-nodepool",
            source="https://support.huaweicloud.com/intl/en-us/price-cce/cce_03_0026.html",
        ),
        Platform(
            name="generic",
            title="a cluster whose spot nodes carry a label of your own",
            spot_selector={},
            spot_tolerations=(),
            window_s=30,
            source="docs/kubernetes.md",
        ),
    )
}

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
"""GKE, AKS and the NVIDIA device plugin's node pools taint GPU nodes with ``nvidia.com/gpu``."""
