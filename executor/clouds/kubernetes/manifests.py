"""The object the Kubernetes launcher writes for one instance, as plain JSON: a Job of one Pod on
the platform's spot nodes that the autoscalers do not scale down of their own accord.

The Job's Pod selects the platform's spot nodes and tolerates their taints (and the GPU taint
when it asks for GPUs), has ``terminationGracePeriodSeconds`` inside the platform's window and
tells the guard the same grace (``SPOTWISE_NOTICE_S``: the SIGTERM the kubelet sends on a
reclaim is the guard's stop notice, its emergency checkpoint goes to the PersistentVolumeClaim,
which outlives the node), carries ``karpenter.sh/do-not-disrupt`` and the cluster
autoscaler's ``safe-to-evict: "false"`` (neither consolidation nor a scale-down takes its node;
no PodDisruptionBudget: EKS hands a spot reclaim to a drain, Karpenter's interruption handling or
the node termination handler, whose evictions a budget of one Pod would refuse, so the Pod would
get no SIGTERM before EC2 takes the node),
and the ledger's job id on its labels. Its ``podFailurePolicy`` ignores a Pod that ended with
the ``DisruptionTarget`` condition (a reclaim, a preemption, a drain: the Job starts a new Pod,
which resumes from the checkpoint, without using a retry) and fails the Job at once on any exit
code but the guard's preempted one (a failing script is not retried); ``podReplacementPolicy:
Failed`` starts the new Pod only once the old one has ended, so its last checkpoint is
committed first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from spotwise.executor.clouds.kubernetes.platforms import GPU_RESOURCE, GPU_TOLERATION
from spotwise.executor.clouds.kubernetes.target import CHECKPOINT_MOUNT, KubernetesTarget
from spotwise.executor.clouds.orphans import this_host
from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError

JOB_LABEL = "spotwise.dev/job"
"""The ledger's job id: what ``gc kubernetes`` and ``jobs`` find a job's objects by."""
HOST_LABEL = "spotwise.dev/host"
INSTANCE_LABEL = "spotwise.dev/instance"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CONTAINER = "train"
CLAIM_VOLUME = "checkpoints"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NOTICE_ENV = "SPOTWISE_NOTICE_S"
"""The guard's SIGTERM window in the Pod: its grace (:attr:`KubernetesTarget.grace`)."""
BACKOFF_LIMIT = 3
"""Retries of a Pod that stopped preempted without a ``DisruptionTarget`` (an eviction the
kubelet did not mark); a reclaim never counts."""


def label_value(text: str) -> str:
    """``text`` as a label value (63 letters, digits, ``-_.``, alphanumeric at both ends)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", text)[:63]
    return cleaned.strip("-_.") or "unknown"


def host_label() -> str:
    """This machine's name as the host label holds it."""
    return label_value(this_host())


def labels(job_id: str, instance: str) -> dict[str, str]:
    """The labels of every object of one instance of ``job_id``, made on this host."""
    return {JOB_LABEL: job_id, HOST_LABEL: host_label(), INSTANCE_LABEL: instance}


def secret_name(job_id: str) -> str:
    """The Secret holding job ``job_id``'s secrets."""
    return f"spotwise-{job_id}"


def secret(job_id: str, values: Mapping[str, str]) -> dict[str, Any]:
    """The Secret of job ``job_id``: each variable a key (the apiserver stores them; a Pod's
    env reads them by name, so no value is ever in a Job's manifest).

    Raises:
        ExecutorError: for a name that is no environment variable's.
    """
    for name in values:
        if not ENV_NAME.fullmatch(name):
            raise ExecutorError(
                f"secret {name[:40]!r} is not an environment variable's name (letters, digits "
                "and _, not starting with a digit)"
            )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(job_id),
            "labels": {JOB_LABEL: job_id, HOST_LABEL: host_label()},
        },
        "type": "Opaque",
        "stringData": dict(values),
    }


def pod_spec(
    target: KubernetesTarget,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    spot: bool = True,
    secret: str = "",
    secret_keys: Sequence[str] = (),
) -> dict[str, Any]:
    """The Pod of one instance: ``command`` in the target's image on its platform's spot
    nodes (``spot`` False: its on-demand ones), with ``env``, each of ``secret_keys`` read
    from the Secret ``secret``, and the claim at :data:`CHECKPOINT_MOUNT`."""
    platform = target.platform_rules
    selector = dict(platform.spot_selector if spot else platform.on_demand_selector or {})
    if target.shape:
        selector["node.kubernetes.io/instance-type"] = target.shape
    tolerations = [dict(t) for t in platform.spot_tolerations] if spot else []
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": target.image,
        "command": list(command),
        "env": [
            {"name": k, "value": v}
            for k, v in sorted({**env, NOTICE_ENV: str(target.grace)}.items())
        ]
        + [
            {"name": "SPOTWISE_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "SPOTWISE_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        ]
        + [
            {"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
            for key in sorted(secret_keys)
        ],
        "volumeMounts": [{"name": CLAIM_VOLUME, "mountPath": CHECKPOINT_MOUNT}],
    }
    if target.workdir != ".":
        container["workingDir"] = target.workdir
    if target.gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: str(target.gpus)}}
        tolerations.append(dict(GPU_TOLERATION))
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": target.grace,
        "containers": [container],
        "volumes": [{"name": CLAIM_VOLUME, "persistentVolumeClaim": {"claimName": target.claim}}],
    }
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if target.zones:
        term = {"key": platform.pool_label, "operator": "In", "values": list(target.zones)}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
    if target.service_account:
        spec["serviceAccountName"] = target.service_account
    return spec


def job(
    target: KubernetesTarget,
    name: str,
    job_id: str,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    spot: bool = True,
    secrets: Sequence[str] = (),
) -> dict[str, Any]:
    """The Job of instance ``name`` of ``job_id`` (``spot`` False: on on-demand nodes), its
    ``secrets`` (variables' names) read from the job's Secret."""
    own = labels(job_id, name)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": own},
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "podReplacementPolicy": "Failed",
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "Ignore",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    },
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": CONTAINER,
                            "operator": "NotIn",
                            "values": [PREEMPTED_EXIT_CODE],
                        },
                    },
                ]
            },
            "template": {
                "metadata": {
                    "labels": own,
                    "annotations": {DO_NOT_DISRUPT: "true", SAFE_TO_EVICT: "false"},
                },
                "spec": pod_spec(
                    target,
                    command,
                    env,
                    spot=spot,
                    secret=secret_name(job_id),
                    secret_keys=secrets,
                ),
            },
        },
    }
