"""Google Cloud as pricing and the plan know it: Cloud Billing Catalog prices, GCS, Compute
Engine launch flags.

Its ``spotwise collect gcp`` is declared here (:data:`COLLECTOR`: its flags as data) and runs
:mod:`.collector`; its price sources sit beside it: :mod:`.billing` (the Cloud Billing Catalog)
and :mod:`.price_changes` (the bundled change-point file)."""

from spotwise.pricing.clouds.profile import (
    CloudProfile,
    CollectOption,
    Collector,
    CollectorModule,
    LaunchForm,
    StorageList,
)

OPTIONS = (
    CollectOption(
        flag="--regions",
        type=str,
        default="",
        help="Comma-separated GCP regions, e.g. us-central1 (default: every region a shape is "
        "priced in).",
        show_default=False,
    ),
    CollectOption(
        flag="--shapes",
        type=str,
        default="",
        help="Comma-separated shapes of the GPU table, e.g. a2-highgpu-1g (default: all of "
        "GCP's, or those of --gpu).",
        show_default=False,
    ),
    CollectOption(
        flag="--gpu", type=str, help="Only shapes with this GPU (A100, H100, L4, T4, V100)."
    ),
    CollectOption(
        flag="--since",
        type=str,
        help="Earliest time (ISO 8601, UTC) when nothing is stored yet (default: the start of "
        "this month); stored prices resume from their newest.",
        show_default=False,
    ),
    CollectOption(
        flag="--max-attempts",
        type=int,
        default=5,
        min=1,
        help="Tries per page; 5xx and 429 back off.",
    ),
)

COLLECTOR = Collector(
    help="Collect spot and on-demand prices of GCP GPU shapes from the Cloud Billing Catalog "
    "(built from their vCPU, RAM and GPU SKUs; SPOTWISE_GCP_BILLING_ENDPOINT overrides Google's "
    "endpoint).",
    options=OPTIONS,
    run=CollectorModule(f"{__name__}.collector"),
    region_flag="--regions",
    shape_flag="--shapes",
    per_region=True,
    needs_region=None,
)
"""How ``spotwise collect gcp`` is written and what it runs."""

PROFILE = CloudProfile(
    name="gcp",
    title="GCP",
    collector=COLLECTOR,
    storage=StorageList(
        usd_per_gb_month=0.020,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.12,
        inter_region_usd_per_gb=0.02,
        inter_continent_usd_per_gb=0.08,
        source="https://cloud.google.com/storage/pricing (Standard, us-central1; Class A "
        "operations; Premium Tier egress to the internet, first TiB)"
        "; data transfer between regions within a continent and between continents (Asia):"
        " https://cloud.google.com/storage/pricing#network-buckets",
        as_of="2026-12-04",
    ),
    launch=LaunchForm(
        cloud="gcp",
        flags=(
            ("project", "--project", "PROJECT"),
            ("image", "--image", "IMAGE"),
            ("bucket", "--bucket", "BUCKET"),
            ("identity", "--service-account", "SERVICE_ACCOUNT"),
        ),
        scheme="gs",
    ),
    zone_separator="-",
    skypilot="gcp",
    gpu_prefixes=("a2-", "a3-", "a4-", "g2-", "g4-"),
)
