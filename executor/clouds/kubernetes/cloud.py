"""Kubernetes through the cloud seam (:class:`~executor.clouds.base.Cloud`): each instance a
one-Pod Job on a cluster's spot nodes, labelled with the ledger's job id; the code in the
user's image (nothing is shipped); checkpoints on a PersistentVolumeClaim mounted at
:data:`~executor.clouds.kubernetes.target.CHECKPOINT_MOUNT` in every Pod; secrets in a Secret
of the job; the notice the kubelet's SIGTERM (the Pod marked ``DisruptionTarget``), which the
guard always watches."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.base import Check, CloudOptions, CloudTarget, Say, SetUp
from spotwise.executor.clouds.code_bundle import CodeInImage
from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS
from spotwise.executor.clouds.kubernetes.target import CHECKPOINT_MOUNT, KubernetesTarget
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.code_bundle import Code
    from spotwise.executor.clouds.kubernetes.gc import KubernetesSweep
    from spotwise.executor.clouds.kubernetes.launcher import KubernetesLauncher

CHECKPOINTS = f"{CHECKPOINT_MOUNT}/checkpoints"
"""Where in each Pod a run's checkpoints go (``CHECKPOINTS/RUN``: on the claim)."""


def _kubernetes(target: CloudTarget) -> KubernetesTarget:
    if not isinstance(target, KubernetesTarget):
        raise ExecutorError(f"the kubernetes cloud was given {target.cloud}'s settings")
    return target


def _ended(job: Any) -> bool:
    """Whether a Job has ended: complete, or failed."""
    conditions = (job.status.conditions if job.status else None) or []
    return any(c.type in ("Complete", "Failed") and c.status == "True" for c in conditions)


class KubernetesCloud:
    """A Kubernetes cluster's spot node pools (GKE, EKS with Karpenter, AKS, CCE, or nodes of
    your own label), through the official client and the kubeconfig as ``kubectl`` reads it
    (``endpoint_url``: another apiserver, a local fake)."""

    name = "kubernetes"
    storage_scheme = ""
    """None: checkpoints go to the claim every Pod mounts, not to an object store."""
    notice_kind = None
    """The kubelet's SIGTERM, which the guard watches on every instance."""
    notice_s = float(min(p.grace_s for p in PLATFORMS.values()))
    """The shortest grace a platform gives (:mod:`.platforms`); each Pod's guard is told its
    own platform's."""
    docs = "docs/kubernetes.md"

    def target(self, options: CloudOptions) -> KubernetesTarget:
        """The cluster's settings the shared options name."""
        return KubernetesTarget.from_options(options)

    def target_from_dict(self, data: Mapping[str, Any]) -> KubernetesTarget:
        """The cluster's settings back from their JSON."""
        return KubernetesTarget.from_dict(data)

    def _api(self, target: KubernetesTarget, who: str) -> Any:
        from spotwise.executor.clouds.kubernetes.clients import api_client

        return api_client(target, who)

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> CodeInImage:
        """Nothing: the image carries the code and Spotwise (``pip install spotwise[instance]``
        in its Dockerfile); what each Pod runs, said on stderr. ``ignore_file`` and ``wheel``
        have nothing to pack.

        Raises:
            ExecutorError: when the settings are incomplete.
        """
        k8s = _kubernetes(target)
        k8s.require_complete()
        image = str(k8s.image)
        workdir = None if k8s.workdir == "." else k8s.workdir
        where = f"in {workdir}" if workdir else "in the image's WORKDIR"
        print(
            f"code: nothing shipped; each Pod runs the command {where} of {image}, which "
            "carries your code and spotwise[instance] (docs/kubernetes.md)",
            file=sys.stderr,
        )
        return CodeInImage(image=image, workdir=workdir)

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> KubernetesLauncher:
        """A launcher of job ``job_id``'s Jobs (the ledger's id: ``gc kubernetes`` judges a Job
        by it), running ``code``'s image.

        Raises:
            ExecutorError: without a job id, for code not in this target's image, or when the
                secrets cannot be stored.
        """
        from spotwise.executor.clouds.kubernetes.launcher import KubernetesLauncher

        k8s = _kubernetes(target)
        if not job_id:
            raise ExecutorError("a Kubernetes launcher needs the ledger's job id (new_job_id())")
        if not isinstance(code, CodeInImage) or code.image != k8s.image:
            raise ExecutorError(
                f"a Kubernetes job runs the code in its image {k8s.image}; it was given other "
                "code (ship_code of this target gives it)"
            )
        return KubernetesLauncher(
            target=k8s,
            api=self._api(k8s, "--launcher kubernetes"),
            job_id=job_id,
            secrets=secrets or {},
        )

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """Job ``job_id``'s Jobs that have not ended and are not being deleted, by its label."""
        from kubernetes import client

        from spotwise.executor.clouds.kubernetes.clients import call
        from spotwise.executor.clouds.kubernetes.manifests import JOB_LABEL

        k8s = _kubernetes(target)
        batch: Any = client.BatchV1Api(self._api(k8s, "jobs"))
        found = call(
            f"Jobs in {k8s.namespace}",
            lambda: batch.list_namespaced_job(
                k8s.namespace,
                label_selector=f"{JOB_LABEL}={job_id}",
                _request_timeout=15,
            ),
        )
        return [
            str(job.metadata.name)
            for job in found.items
            if not job.metadata.deletion_timestamp and not _ended(job)
        ]

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """``/spotwise/checkpoints/RUN``: a folder of the claim, as every Pod mounts it."""
        _kubernetes(target)
        return f"{CHECKPOINTS}/{run}"

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """Never sized from here: the claim is a volume in the cluster, which this machine
        does not mount (the ledger leaves the job's checkpoints not sized, with this reason).

        Raises:
            ExecutorError: always, saying why.
        """
        k8s = _kubernetes(target)
        raise ExecutorError(
            f"{url[:120]} is on the claim {k8s.claim} in the cluster, which this machine does "
            "not mount: not sized (kubectl exec into a Pod that mounts it: du -sb)"
        )

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """Nothing to make: the namespace and the claim are the cluster's (its admin's); each
        is found, or refused with the command that makes it.

        Raises:
            ExecutorError: without an apiserver, a namespace or a bound claim.
        """
        from spotwise.executor.clouds.kubernetes.check import KubernetesCheck

        k8s = _kubernetes(target)
        if not k8s.claim:
            raise ExecutorError(
                "setup kubernetes needs --bucket CLAIM: the PersistentVolumeClaim of checkpoints"
            )
        checks = KubernetesCheck(k8s, lambda: self._api(k8s, "setup kubernetes"))
        made: list[str] = []
        for check in (checks.context(), checks.namespace(), checks.claim()):
            if check.status != "ok":
                raise ExecutorError(
                    f"setup kubernetes: {check.what}: {check.detail}"
                    + (f" (fix: {check.fix})" if check.fix else "")
                )
            line = f"found {check.what}: {check.detail}"
            made.append(line)
            say(line)
        where = f"{k8s.context}/{k8s.namespace}" if k8s.context else k8s.namespace
        return SetUp(
            made=tuple(made),
            next_steps=(
                f"give the account spotwise runs as the Role of {self.docs} in {k8s.namespace}, "
                "then",
                f"  spotwise check kubernetes --project {where} --region {k8s.platform} "
                f"--bucket {k8s.claim} --image IMAGE",
            ),
        )

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """The kubeconfig context and its apiserver, the namespace, each verb the launcher
        uses, the claim, the platform's spot nodes and their GPUs."""
        from spotwise.executor.clouds.kubernetes.check import KubernetesCheck

        k8s = _kubernetes(target)
        yield from KubernetesCheck(k8s, lambda: self._api(k8s, "check kubernetes")).run()

    def sweep(self, target: CloudTarget) -> KubernetesSweep:
        """``gc kubernetes``'s pass over the namespace, with a client of the kubeconfig.

        Raises:
            ExecutorError: in one line, without the client library or the context.
        """
        from spotwise.executor.clouds.kubernetes.gc import KubernetesSweep

        k8s = _kubernetes(target)
        return KubernetesSweep(k8s, self._api(k8s, "gc kubernetes"))
