"""``spotwise check gcp``: is this project ready for ``spotwise run --launcher gcp``?

Each check is one line with its fix, in the order a user would fix them: credentials, the
project, the APIs Spotwise calls (a disabled one answers ``SERVICE_DISABLED``: the fix is the
``gcloud services enable`` command), the bucket (exists, private, in the region), the image,
the VMs' service account, the zones (each offers the shape's GPU) and the region's Spot
(preemptible) GPU quota. Every probe is a read; nothing is made or changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from spotwise.executor.clouds.base import Check
from spotwise.executor.clouds.gcp.clients import (
    NO_CREDENTIALS,
    SERVICE_NAMES,
    Clients,
    credentials,
    disabled_service,
    google_errors,
    message,
    status,
)
from spotwise.executor.clouds.gcp.setup import ACCOUNT_ID
from spotwise.executor.clouds.gcp.target import IMAGE, GcpTarget
from spotwise.executor.clouds.image_python import python_note
from spotwise.executor.errors import ExecutorError

DOCS = "docs/gcp.md"
IMAGES = (
    "a Deep Learning VM image with PyTorch: gcloud compute images list --project "
    "deeplearning-platform-release --filter='family~pytorch' (then --image "
    "projects/deeplearning-platform-release/global/images/family/FAMILY)"
)
QUOTA_METRICS = {
    "nvidia-tesla-v100": "NVIDIA_V100_GPUS",
    "nvidia-tesla-t4": "NVIDIA_T4_GPUS",
    "nvidia-tesla-p100": "NVIDIA_P100_GPUS",
    "nvidia-tesla-p4": "NVIDIA_P4_GPUS",
    "nvidia-tesla-a100": "NVIDIA_A100_GPUS",
    "nvidia-a100-80gb": "NVIDIA_A100_80GB_GPUS",
    "nvidia-h100-80gb": "NVIDIA_H100_GPUS",
    "nvidia-h100-mega-80gb": "NVIDIA_H100_MEGA_GPUS",
    "nvidia-l4": "NVIDIA_L4_GPUS",
}
"""Compute Engine's regional GPU quota per accelerator type; a Spot VM counts against its
``PREEMPTIBLE_`` twin."""


def _who(found: Any) -> str:
    email = getattr(found, "service_account_email", None)
    if isinstance(email, str) and "@" in email:
        return email
    account = getattr(found, "account", None)
    return account if isinstance(account, str) and account else "your gcloud login"


class GcpCheck:
    """The checks for one project and one set of ``spotwise run`` settings."""

    def __init__(self, target: GcpTarget) -> None:
        self.target = target
        self.project = target.project or ""
        self._disabled: set[str] = set()
        self._project_ok = False
        self.clients: Clients | None = None

    def run(self) -> Iterator[Check]:
        """Every check, each as soon as it is decided; the APIs last, from what the others'
        calls found enabled."""
        first = self.credentials()
        yield first
        if first.status != "ok":
            return  # nothing else can be asked
        project = self.check_project()
        yield project
        if project.status == "missing":
            return
        yield self.check_bucket()
        yield self.image()
        yield self.service_account()
        yield self.zones()
        yield self.quota()
        self.probe_secret_manager()
        yield self.apis()

    def credentials(self) -> Check:
        """The credentials check: whose they are, or the sign-in to run."""
        try:
            found = credentials("check gcp")
        except ExecutorError:
            return Check(
                "credentials",
                "missing",
                "none found",
                NO_CREDENTIALS.removeprefix("no Google credentials found; "),
            )
        if not self.project:
            return Check(
                "credentials",
                "missing",
                f"{_who(found)}, but no --project",
                "pass --project PROJECT (gcloud projects list)",
            )
        self.clients = Clients(self.project, found, self.target.endpoint_url)
        return Check("credentials", "ok", _who(found))

    def _client(self) -> Clients:
        assert self.clients is not None
        return self.clients

    def _call(self, what: str, call: Any) -> tuple[Any, BaseException | None]:
        """``call()``'s answer, or the Google error (a disabled API is remembered)."""
        try:
            return call(), None
        except google_errors() as exc:
            service = disabled_service(exc)
            if service is not None:
                self._disabled.add(service)
            return None, exc

    def check_project(self) -> Check:
        """The project check: it exists and these credentials see it."""
        what = "project"
        projects = self._client().compute("projects")
        found, exc = self._call(what, lambda: projects.get(project=self.project))
        if exc is None:
            self._project_ok = True
            return Check(what, "ok", f"{self.project} (number {found.id})")
        if disabled_service(exc):
            return Check(what, "unknown", f"{self.project}: its Compute Engine API is off (below)")
        if status(exc) in (403, 404):
            return Check(
                what,
                "missing",
                f"{self.project} cannot be read ({message(exc)[:160]})",
                "pass the id of a project you may use (gcloud projects list), or grant "
                f"roles/compute.instanceAdmin.v1 there ({DOCS})",
            )
        return Check(what, "unknown", f"{self.project}: {message(exc)[:200]}")

    def apis(self) -> Check:
        """The APIs check: each one Spotwise calls is enabled, else its enable command."""
        what = "APIs enabled"
        names = ", ".join(SERVICE_NAMES.values())
        if not self._disabled:
            return Check(what, "ok", f"{names} answer")
        off = sorted(self._disabled)
        return Check(
            what,
            "missing",
            f"not enabled in {self.project}: {', '.join(SERVICE_NAMES.get(s, s) for s in off)}",
            f"gcloud services enable {' '.join(off)} --project {self.project}",
        )

    def probe_secret_manager(self) -> None:
        """Whether Secret Manager answers for the project (a read)."""
        secrets = self._client().secrets()
        self._call(
            "secrets",
            lambda: next(
                iter(
                    secrets.list_secrets(
                        request={"parent": f"projects/{self.project}", "page_size": 1}
                    )
                ),
                None,
            ),
        )

    def check_bucket(self) -> Check:
        """The bucket check: it exists, is private and in the region."""
        what = "bucket"
        if not self.target.bucket:
            return Check(
                what, "skipped", "no --bucket given", "pass --bucket NAME to check it", "--bucket"
            )
        name, region = self.target.bucket_name, self.target.region
        storage = self._client().storage()
        found, exc = self._call(what, lambda: storage.get_bucket(name))
        if exc is not None:
            return self._bucket_unread(name, region, exc)
        return _bucket_state(found, name, region)

    def _bucket_unread(self, name: str, region: str, exc: BaseException) -> Check:
        """The bucket check when the bucket could not be read: missing, or not readable here."""
        if status(exc) == 404:
            return Check(
                "bucket",
                "missing",
                f"gs://{name} does not exist",
                f"spotwise setup gcp --project {self.project} --region {region} --bucket {name}",
            )
        return Check(
            "bucket",
            "missing",
            f"gs://{name} cannot be read ({message(exc)[:120]}): not this project's, or no "
            "storage.buckets.get",
            f"use a bucket of this project, or grant roles/storage.admin on it ({DOCS})",
        )

    def image(self) -> Check:
        """The image check: it exists where the instances run."""
        what = "image"
        image = self.target.image
        if not image:
            return Check(what, "skipped", "no --image given", f"pass --image: {IMAGES}", "--image")
        found, exc = self._call(what, self._image_lookup(image))
        if exc is not None:
            if status(exc) == 404:
                return Check(what, "missing", f"{image} not found", f"use {IMAGES}")
            return Check(what, "unknown", f"cannot read {image} ({message(exc)[:160]})")
        return _image_state(found)

    def _image_lookup(self, image: str) -> Callable[[], Any]:
        """The read of ``image`` (a family's newest, or one image), in its project or ours."""
        parsed = IMAGE.match(image)
        assert parsed is not None  # the target checked its form
        project = parsed["project"] or self.project
        images = self._client().compute("images")
        if parsed["family"]:
            return lambda: images.get_from_family(project=project, family=parsed["name"])
        return lambda: images.get(project=project, image=parsed["name"])

    def service_account(self) -> Check:
        """The VMs' service account check: it exists and is enabled."""
        what = "service account"
        email = self.target.account_email
        if not email:
            return Check(
                what,
                "skipped",
                "no --service-account given",
                f"pass --service-account {ACCOUNT_ID}@{self.project}.iam.gserviceaccount.com "
                "(spotwise setup gcp makes it)",
                "--service-account",
            )
        accounts = self._client().iam()
        name = f"projects/{self.project}/serviceAccounts/{email}"
        found, exc = self._call(what, lambda: accounts.get(name=name).execute())
        if exc is not None:
            if status(exc) == 404:
                return Check(
                    what,
                    "missing",
                    f"{email} does not exist",
                    f"spotwise setup gcp --project {self.project} --region "
                    f"{self.target.region} --bucket {self.target.bucket_name or 'BUCKET'}"
                    + ("" if email.startswith(f"{ACCOUNT_ID}@") else f" --service-account {email}"),
                )
            return Check(what, "unknown", f"cannot read {email} ({message(exc)[:160]})")
        if found.get("disabled"):
            return Check(
                what,
                "missing",
                f"{email} is disabled",
                f"gcloud iam service-accounts enable {email} --project {self.project}",
            )
        return Check(what, "ok", email)

    def zones(self) -> Check:
        """The zones check: each offers the shape's GPU."""
        what = "zones"
        shape = self.target.shape
        zones = self.target.zones_or_default
        if not shape.accelerator:
            return Check(what, "ok", f"{', '.join(zones)} ({shape.machine_type} has no GPU)")
        types = self._client().compute("accelerator_types")
        lacking = []
        for zone in zones:
            _, exc = self._call(
                what,
                lambda zone=zone: types.get(
                    project=self.project, zone=zone, accelerator_type=shape.accelerator
                ),
            )
            if exc is not None:
                if status(exc) != 404:
                    return Check(what, "unknown", f"cannot read {zone} ({message(exc)[:160]})")
                lacking.append(zone)
        if lacking:
            return Check(
                what,
                "missing",
                f"{', '.join(lacking)} offer no {shape.accelerator}",
                f"pass --pools with zones that do (gcloud compute accelerator-types list "
                f"--filter=name={shape.accelerator})",
            )
        return Check(what, "ok", f"{', '.join(zones)} offer {shape.accelerator}")

    def quota(self) -> Check:
        """The Spot quota check: enough is left for one instance of the shape."""
        what = "Spot GPU quota"
        shape, region = self.target.shape, self.target.region
        if not shape.accelerator:
            return Check(what, "ok", f"{shape.machine_type} has no GPU")
        metric = QUOTA_METRICS.get(shape.accelerator)
        if metric is None:
            return Check(what, "unknown", f"no quota known for {shape.accelerator}")
        metric = f"PREEMPTIBLE_{metric}"
        regions = self._client().compute("regions")
        found, exc = self._call(what, lambda: regions.get(project=self.project, region=region))
        if exc is not None:
            return Check(what, "unknown", f"cannot read {region}'s quotas ({message(exc)[:160]})")
        quota = next((q for q in found.quotas if q.metric == metric), None)
        if quota is None:
            return Check(what, "unknown", f"{region} lists no {metric} quota")
        free = quota.limit - quota.usage
        detail = (
            f"{metric} in {region}: {free:g} of {quota.limit:g} free; one VM takes {shape.count}"
        )
        if free < shape.count:
            return Check(
                what,
                "missing",
                detail,
                f"ask for more {metric} in {region}: the console's IAM & Admin → Quotas "
                f"(gcloud compute regions describe {region} shows them)",
            )
        return Check(what, "ok", detail)


def _bucket_state(found: Any, name: str, region: str) -> Check:
    """The bucket check of a bucket read: private (uniform access, public access prevented)
    and in the VMs' region (or a multi-region holding it)."""
    config = found.iam_configuration
    if not config.uniform_bucket_level_access_enabled or (
        config.public_access_prevention != "enforced"
    ):
        return Check(
            "bucket",
            "missing",
            f"gs://{name} allows object ACLs or public access",
            f"gcloud storage buckets update gs://{name} --uniform-bucket-level-access "
            "--public-access-prevention",
        )
    location = str(found.location or "").lower()
    if location and location != region and not region.startswith(_multi(location)):
        return Check(
            "bucket",
            "missing",
            f"gs://{name} is in {location}, the VMs in {region}",
            f"use a bucket in {region} (traffic across regions is billed)",
        )
    return Check("bucket", "ok", f"gs://{name} in {location or '?'}, private")


def _image_state(found: Any) -> Check:
    """The image check of an image read: ready, not obsolete, deleted or deprecated."""
    detail = f"{found.name} ({found.architecture or '?'}, family {found.family or '-'})"
    state = found.deprecated.state if found.deprecated else ""
    if found.status != "READY" or state in ("OBSOLETE", "DELETED"):
        return Check("image", "missing", f"{detail} is {state or found.status}", f"use {IMAGES}")
    if state == "DEPRECATED":
        return Check("image", "unknown", f"{detail} is deprecated", f"prefer {IMAGES}")
    return _image_python(found, detail)


def _image_python(found: Any, detail: str) -> Check:
    """The image check of a ready image: what its name, family and description say of its
    Python (a Deep Learning VM's say its environment's: ``-py310``, ``Python 3.10``)."""
    fix = (
        f"use {IMAGES}, one whose name or description says Python 3.11+; or pass spotwise run "
        "--python PATH of a Python 3.11+ on this one"
    )
    note = python_note(f"{found.name} {found.family or ''} {found.description or ''}")
    if note is None:
        why = "its Python is not known from its name or description (the boot needs 3.11+)"
        return Check("image", "unknown", f"{detail}; {why}", fix)
    old, why = note
    if old:
        return Check("image", "missing", f"{detail}: {why}", fix)
    torch = (
        "torch in its environment, which the boot finds"
        if "pytorch" in f"{found.name} {found.family or ''}".lower()
        else "torch is not known on it: each boot installs it from PyPI (minutes)"
    )
    return Check("image", "ok", f"{detail}: {why}; {torch}")


def _multi(location: str) -> str:
    """The region prefix a multi-region bucket serves (``us`` → ``us-``), else a value no
    region starts with."""
    return {"us": "us-", "eu": "europe-", "asia": "asia-"}.get(location, "\0")
