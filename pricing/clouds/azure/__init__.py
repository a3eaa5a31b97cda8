"""Azure as pricing and the plan know it: Retail Prices API prices, Blob storage, Azure VM
launch flags.

Its ``spotwise collect azure`` is declared here (:data:`COLLECTOR`: its flags as data) and runs
:mod:`.collector`; its price source sits beside it: :mod:`.prices` (the Retail Prices API and
Resource Graph)."""

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
        required=True,
        help="Comma-separated Azure regions, e.g. eastus,westeurope.",
    ),
    CollectOption(
        flag="--vm-sizes",
        type=str,
        default="",
        help="Comma-separated VM sizes of the GPU table, e.g. Standard_NC6s_v3 (default: all of "
        "Azure's, or those of --gpu).",
        show_default=False,
    ),
    CollectOption(flag="--gpu", type=str, help="Only sizes with this GPU (A100, H100, T4, V100)."),
    CollectOption(
        flag="--resource-graph/--no-resource-graph",
        type=bool,
        default=True,
        help="Also read spot eviction bands and spot price history from Resource Graph (needs "
        "Azure credentials and the azure extra).",
    ),
    CollectOption(
        flag="--subscriptions",
        type=str,
        default="",
        help="Comma-separated subscription ids Resource Graph queries (default: all the "
        "identity may read).",
        show_default=False,
    ),
    CollectOption(
        flag="--max-attempts",
        type=int,
        default=5,
        min=1,
        help="Tries per request; 5xx and 429 back off.",
    ),
)

COLLECTOR = Collector(
    help="Collect Azure spot and on-demand prices from the Retail Prices API and, where the "
    "account may read them, spot eviction bands and price history from Resource Graph "
    "(SPOTWISE_AZURE_PRICES_URL and SPOTWISE_AZURE_RESOURCE_GRAPH_URL override the endpoints).",
    options=OPTIONS,
    run=CollectorModule(f"{__name__}.collector"),
    region_flag="--regions",
    shape_flag="--vm-sizes",
    per_region=True,
    needs_region="eastus",
)
"""How ``spotwise collect azure`` is written and what it runs."""

PROFILE = CloudProfile(
    name="azure",
    title="Azure",
    collector=COLLECTOR,
    storage=StorageList(
        usd_per_gb_month=0.018,
        usd_per_1k_writes=0.0065,
        egress_usd_per_gb=0.087,
        inter_region_usd_per_gb=0.02,
        inter_continent_usd_per_gb=0.05,
        source="https://azure.microsoft.com/en-us/pricing/details/storage/blobs/ (Hot LRS, "
        "East US; write operations) and .../bandwidth/ (internet egress, first 10 TB)"
        "; data transfer between regions within North America or Europe and between continents:"
        " https://azure.microsoft.com/en-us/pricing/details/bandwidth/",
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
    hourly_bands=True,  # Resource Graph's eviction rate: the share evicted an hour
)
