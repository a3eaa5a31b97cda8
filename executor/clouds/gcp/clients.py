"""Google's client libraries for one project: Application Default Credentials, Compute Engine
and Secret Manager over REST (google-cloud-compute, google-cloud-secret-manager), IAM through
google-api-python-client, GCS through google-cloud-storage; each error Google answers turned
into one line that says what to do. The libraries are imported here only, when a GCP command
runs (the ``gcp`` extra)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from spotwise.executor.errors import ExecutorError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
EXTRA = "pip install 'spotwise[gcp]'"
NO_CREDENTIALS = (
    "no Google credentials found; run `gcloud auth application-default login`, or set "
    "GOOGLE_APPLICATION_CREDENTIALS to a service account key file, then run again"
)
SERVICE_NAMES = {
    "compute.googleapis.com": "Compute Engine API",
    "storage.googleapis.com": "Cloud Storage API",
    "secretmanager.googleapis.com": "Secret Manager API",
    "iam.googleapis.com": "IAM API",
}


def require_libraries(who: str) -> None:
    """Import the ``gcp`` extra's libraries, or say in one line how to install them.

    Raises:
        ExecutorError: naming the extra to install.
    """
    try:
        import google.auth
        import google.cloud.compute_v1
        import google.cloud.secretmanager_v1
        import google.cloud.storage  # noqa: F401
        import googleapiclient.discovery  # noqa: F401
    except ImportError as exc:
        raise ExecutorError(
            f"{who}: Google's client libraries are not installed ({exc.name}); run {EXTRA}"
        ) from None


def credentials(who: str) -> Any:
    """Application Default Credentials (a key file, gcloud's, or a VM's).

    Raises:
        ExecutorError: in one line, when none are found or they cannot be read.
    """
    require_libraries(who)
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        found, _ = google.auth.default(scopes=list(SCOPES))
    # google-auth reads a key file that is JSON but no object with an AttributeError
    except (DefaultCredentialsError, ValueError, AttributeError, TypeError) as exc:
        from spotwise.pricing.clouds.gcp.credentials import key_file_problem

        raise ExecutorError(f"{who}: {key_file_problem(exc) or NO_CREDENTIALS}") from None
    return found


@dataclass(frozen=True, slots=True)
class Clients:
    """The clients of one project, made once per command."""

    project: str
    credentials: Any
    endpoint_url: str | None = None

    def _options(self) -> Any:
        from google.api_core.client_options import ClientOptions

        return ClientOptions(api_endpoint=self.endpoint_url) if self.endpoint_url else None

    def compute(self, kind: str) -> Any:
        """A Compute Engine client over REST (``instances``, ``zone_operations``, ...)."""
        from google.cloud import compute_v1

        names = {
            "instances": compute_v1.InstancesClient,
            "zone_operations": compute_v1.ZoneOperationsClient,
            "firewalls": compute_v1.FirewallsClient,
            "regions": compute_v1.RegionsClient,
            "projects": compute_v1.ProjectsClient,
            "images": compute_v1.ImagesClient,
            "accelerator_types": compute_v1.AcceleratorTypesClient,
            "machine_types": compute_v1.MachineTypesClient,
        }
        return names[kind](
            credentials=self.credentials, transport="rest", client_options=self._options()
        )

    def secrets(self) -> Any:
        """A Secret Manager client over REST."""
        from google.cloud import secretmanager_v1

        return secretmanager_v1.SecretManagerServiceClient(
            credentials=self.credentials, transport="rest", client_options=self._options()
        )

    def iam(self) -> Any:
        """IAM's ``projects.serviceAccounts`` (google-api-python-client, its bundled
        discovery document)."""
        from googleapiclient import discovery

        endpoint = self.endpoint_url
        options = {"api_endpoint": endpoint.rstrip("/") + "/"} if endpoint else None
        service = discovery.build(
            "iam",
            "v1",
            credentials=self.credentials,
            client_options=options,
            static_discovery=True,
            cache_discovery=False,
        )
        return service.projects().serviceAccounts()

    def storage(self) -> Any:
        """A GCS client (``STORAGE_EMULATOR_HOST`` reaches an emulator, as Google documents)."""
        from google.cloud import storage

        return storage.Client(project=self.project, credentials=self.credentials)


def clients(project: str | None, endpoint_url: str | None, who: str) -> Clients:
    """The clients of ``project`` with Application Default Credentials.

    Raises:
        ExecutorError: without a project, the libraries or credentials.
    """
    if not project:
        raise ExecutorError(f"{who}: give the GCP project with --project (gcloud projects list)")
    return Clients(project, credentials(who), endpoint_url)


def reason(exc: BaseException) -> str:
    """The ``ErrorInfo`` reason of a Google API error ('' when it has none)."""
    for detail in _details(exc):
        if isinstance(detail, dict) and detail.get("reason"):
            return str(detail["reason"])
        found = getattr(detail, "reason", "")
        if found:
            return str(found)
    return ""


def _details(exc: BaseException) -> list[Any]:
    details = list(getattr(exc, "details", None) or [])
    content = getattr(exc, "content", None)  # googleapiclient's HttpError keeps the body
    if isinstance(content, bytes | str):
        import json

        with contextlib.suppress(ValueError, AttributeError):
            details += json.loads(content).get("error", {}).get("details", [])
    return details


def disabled_service(exc: BaseException) -> str | None:
    """The service an error says is not enabled (None: the error says something else)."""
    if reason(exc) != "SERVICE_DISABLED" and "has not been used in project" not in str(exc):
        return None
    for detail in _details(exc):
        metadata = detail.get("metadata", {}) if isinstance(detail, dict) else {}
        metadata = metadata or dict(getattr(detail, "metadata", {}) or {})
        if metadata.get("service"):
            return str(metadata["service"])
    found = re.search(r"apis/api/([a-z0-9.-]+\.googleapis\.com)", str(exc))
    return found.group(1) if found else "the API"


def status(exc: BaseException) -> int:
    """The HTTP status of a Google API error (0: not an HTTP answer)."""
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return code
    resp = getattr(exc, "resp", None)  # googleapiclient's HttpError
    return int(getattr(resp, "status", 0) or 0)


def message(exc: BaseException) -> str:
    """A Google API error's message, on one line."""
    text = getattr(exc, "message", None) or getattr(exc, "reason", None) or str(exc)
    if hasattr(exc, "_get_reason"):
        text = exc._get_reason() or text
    return " ".join(str(text).split())[:300]


def explain(exc: BaseException, project: str, what: str) -> str:
    """One line for an error Google answered while doing ``what``: a disabled API names the
    command that enables it, a denial the page of roles, missing credentials the login."""
    service = disabled_service(exc)
    if service is not None:
        name = SERVICE_NAMES.get(service, service)
        return (
            f"{what}: the {name} is not enabled in project {project}; run `gcloud services "
            f"enable {service} --project {project}`, then run again"
        )
    unreached = _unreached(exc)
    if unreached:
        return f"{what}: {unreached}"
    code = status(exc)
    if code == 401:
        return f"{what}: Google refused the credentials ({message(exc)}); {NO_CREDENTIALS}"
    if code == 403:
        return (
            f"{what}: permission denied in project {project} ({message(exc)}); grant the "
            "roles of docs/gcp.md to the account spotwise runs as"
        )
    if code == 404:
        return f"{what}: not found in project {project} ({message(exc)})"
    return f"{what}: {message(exc)}"


def _unreached(exc: BaseException) -> str:
    """The line for a request that got no answer (refused, or none in time), else ''."""
    from google.api_core.exceptions import RetryError
    from requests.exceptions import ConnectionError, Timeout

    if not isinstance(exc, ConnectionError | Timeout | RetryError):
        return ""
    url = str(getattr(getattr(exc, "request", None), "url", "") or "")
    parts = urlsplit(url)
    where = f" at {parts.scheme}://{parts.netloc}" if parts.netloc else ""
    return (
        f"could not reach Google{where} ({type(exc).__name__}); check --endpoint-url and the "
        "network, then run again"
    )


def google_errors() -> tuple[type[BaseException], ...]:
    """The exceptions Google's libraries raise for an API's answer or a failed request."""
    from google.api_core.exceptions import GoogleAPIError
    from google.auth.exceptions import GoogleAuthError
    from googleapiclient.errors import Error as DiscoveryError
    from requests.exceptions import RequestException

    return (GoogleAPIError, GoogleAuthError, DiscoveryError, RequestException, OSError)


@contextlib.contextmanager
def explained(project: str, what: str) -> Iterator[None]:
    """Google's errors inside it become an ExecutorError of one line."""
    try:
        yield
    except google_errors() as exc:
        raise ExecutorError(explain(exc, project, what)) from exc
