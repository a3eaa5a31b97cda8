"""Google Cloud as pricing and the plan know it: Cloud Billing Catalog prices, GCS, Compute
Engine launch flags."""

from spotwise.pricing.clouds.profile import CloudProfile, Collector, LaunchForm, StorageList

PROFILE = CloudProfile(
    name="gcp",
    title="GCP",
    collector=Collector("--regions", "--shapes", per_region=True, needs_region=None),
    storage=StorageList(
        usd_per_gb_month=0.020,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.12,
        source="https://cloud.google.com/storage/pricing (Standard, us-central1; Class A "
        "operations; Premium Tier egress to the internet, first TiB)",
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
