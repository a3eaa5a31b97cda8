"""Azure as pricing and the plan know it: Retail Prices API prices, Blob storage, Azure VM
launch flags."""

from spotwise.pricing.clouds.profile import CloudProfile, Collector, LaunchForm, StorageList

PROFILE = CloudProfile(
    name="azure",
    title="Azure",
    collector=Collector("--regions", "--vm-sizes", per_region=True, needs_region="eastus"),
    storage=StorageList(
        usd_per_gb_month=0.018,
        usd_per_1k_writes=0.0065,
        egress_usd_per_gb=0.087,
        source="https://azure.microsoft.com/en-us/pricing/details/storage/blobs/ (Hot LRS, "
        "East US; write operations) and .../bandwidth/ (internet egress, first 10 TB)",
        as_of="2026-12-04",
    ),
    launch=LaunchForm(
        cloud="azure",
        flags=(
            ("project", "--project", "SUBSCRIPTION/RESOURCE_GROUP"),
            ("image", "--image", "IMAGE_URN"),
            ("bucket", "--bucket", "ACCOUNT/CONTAINER"),
            ("identity", "--identity", "IDENTITY"),
        ),
        scheme="az",
        bucket_is_account_container=True,
    ),
    zone_separator=None,
    skypilot="azure",
    gpu_prefixes=("standard_n",),  # the N-series (NC, ND, NV)
)
