"""The cloud options, declared once: ``run``, ``fleet run``, ``sweep run`` and ``setup``/
``check``/``gc CLOUD`` take the same flags by the same names for every cloud, and receive them
as one :class:`~executor.clouds.base.CloudOptions` (the command's ``cloud`` parameter)."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from spotwise.executor.clouds.base import CloudOptions

F = TypeVar("F", bound=Callable[..., Any])
GIVEN = CloudOptions()
"""The ``cloud`` parameter's default in a command's own signature: :func:`cloud_options`
replaces it with what the flags say."""


def _positive_price(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter("a price above 0 in USD per hour")
    return value


@dataclass(frozen=True, slots=True)
class _Flag:
    """One cloud option: its parameter, its annotation and whether account commands take it."""

    name: str
    annotation: Any
    default: Any
    account: bool


FLAGS = (
    _Flag(
        "region",
        Annotated[
            str | None,
            typer.Option(
                "--region",
                help="The cloud's region (AWS region, GCP region, Azure location; on Kubernetes "
                "the platform: gke, eks, aks, cce or generic; default: the cloud's).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "instance_type",
        Annotated[
            str | None,
            typer.Option(
                "--instance-type",
                help="The machine shape (EC2 instance type, GCE machine type, Azure VM size; on "
                "Kubernetes a node shape and/or +Ngpu); the price book's.",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "image",
        Annotated[
            str | None,
            typer.Option(
                "--image",
                "--image-id",
                help="The instances' image, with Python 3.11+ and torch (an AMI, a GCE image, "
                "an Azure image URN; on Kubernetes a container image that also carries your "
                "code and spotwise[instance]).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "bucket",
        Annotated[
            str | None,
            typer.Option(
                "--bucket",
                help="Where code, logs, exit codes and checkpoints go (an S3 or GCS bucket, "
                "an Azure ACCOUNT/CONTAINER; on Kubernetes the checkpoints' "
                "PersistentVolumeClaim).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "identity",
        Annotated[
            str | None,
            typer.Option(
                "--identity",
                "--instance-profile",
                "--role",
                "--service-account",
                help="What the instances run as (an instance profile, a service account, a "
                "managed identity; on Kubernetes the Pods' ServiceAccount).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "network",
        Annotated[
            list[str] | None,
            typer.Option(
                "--network",
                "--security-group",
                help="A security group, network tag or subnet for every instance (repeat for "
                "more); an elastic job's nodes need one that lets them reach each other "
                "(`spotwise setup CLOUD` makes it).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "project",
        Annotated[
            str | None,
            typer.Option(
                "--project",
                help="GCP: the project; Azure: SUBSCRIPTION/RESOURCE_GROUP; Kubernetes: "
                "[CONTEXT/]NAMESPACE (AWS: none).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "endpoint_url",
        Annotated[
            str | None,
            typer.Option(
                "--endpoint-url",
                help="Another endpoint for the cloud's APIs (a local emulator).",
                show_default=False,
            ),
        ],
        None,
        True,
    ),
    _Flag(
        "workdir",
        Annotated[
            Path,
            typer.Option(
                "--workdir",
                help="A cloud: the folder shipped to each instance (its .gitignore honoured); "
                "the command runs there (Kubernetes: a folder inside the image).",
            ),
        ],
        Path("."),
        False,
    ),
    _Flag(
        "setup",
        Annotated[
            list[str] | None,
            typer.Option(
                "--setup",
                help="A cloud: a command run in the workdir before the job, e.g. 'pip install "
                "-r requirements.txt' (no shell; repeat for more).",
                show_default=False,
            ),
        ],
        None,
        False,
    ),
    _Flag(
        "python",
        Annotated[
            str | None,
            typer.Option(
                "--python",
                help="A cloud: the image's interpreter to run the job with, an absolute path "
                "(default: the first of /opt/pytorch/bin/python, conda's and python3 that is "
                "Python 3.11+ with torch, found at boot).",
                show_default=False,
            ),
        ],
        None,
        False,
    ),
    _Flag(
        "max_price",
        Annotated[
            float | None,
            typer.Option(
                "--max-price",
                callback=_positive_price,
                help="A cloud: the most USD/h to pay for spot, where the cloud takes a bid "
                "(AWS, Azure; default: up to the on-demand price).",
                show_default=False,
            ),
        ],
        None,
        False,
    ),
)


def cloud_options(*, account: bool = False) -> Callable[[F], F]:
    """Add the cloud options to a command (only those an account command takes, with
    ``account``) and give it them as one ``cloud: CloudOptions`` argument."""
    flags = [f for f in FLAGS if f.account or not account]

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name != "cloud"]
        added = [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation
            )
            for f in flags
        ]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {f.name: kwargs.pop(f.name) for f in flags}
            kwargs["cloud"] = CloudOptions(
                region=values.get("region"),
                instance_type=values.get("instance_type"),
                image=values.get("image"),
                bucket=values.get("bucket"),
                identity=values.get("identity"),
                network=tuple(values.get("network") or ()),
                project=values.get("project"),
                endpoint_url=values.get("endpoint_url"),
                workdir=str(values.get("workdir", Path("."))),
                setup=tuple(values.get("setup") or ()),
                python=values.get("python"),
                max_price=values.get("max_price"),
            )
            return command(*args, **kwargs)

        parameters = [*kept, *added]
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=parameters
        )
        wrapper.__annotations__ = {
            **{p.name: p.annotation for p in parameters},
            "return": signature.return_annotation,
        }
        return wrapper  # type: ignore[return-value]

    return decorate
