"""Huawei Cloud as pricing and the plan know it: BSS list prices, ECS spot sell status, OBS, the
ECS launch flags.

Its ``spotwise collect huawei`` is declared here (:data:`COLLECTOR`: its flags as data) and runs
:mod:`.collector`; its sources sit beside it: :mod:`.list_prices` (BSS) and
:mod:`.sell_policies` (ECS). Huawei publishes no spot price history: a spot price is one the user
read and gave (``--spot-prices``), stored labelled as such (:mod:`.given_prices`)."""

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
        help="Comma-separated Huawei Cloud regions, e.g. ap-southeast-1,cn-north-4.",
    ),
    CollectOption(
        flag="--flavors",
        type=str,
        default="",
        help="Comma-separated ECS flavors of the GPU table, e.g. p3.2xlarge.8 (default: all of "
        "Huawei's, or those of --gpu).",
        show_default=False,
    ),
    CollectOption(flag="--gpu", type=str, help="Only flavors with this GPU (A100, V100, T4)."),
    CollectOption(
        flag="--list-prices/--no-list-prices",
        type=bool,
        default=True,
        help="On-demand list prices from BSS (needs the account's BSS read access).",
    ),
    CollectOption(
        flag="--spot-prices",
        type=str,
        default="",
        help="Spot prices you read (Huawei publishes no spot price API), USD an hour, as "
        "FLAVOR@ZONE=PRICE, comma-separated, e.g. p3.2xlarge.8@ap-southeast-1a=1.20; stored "
        "labelled as given.",
        show_default=False,
    ),
)

COLLECTOR = Collector(
    help="Collect Huawei Cloud's on-demand list prices (BSS) and whether spot sells per zone and "
    "flavor (ECS flavor-sell-policies), and the spot prices you give "
    "(SPOTWISE_HUAWEI_ECS_URL and SPOTWISE_HUAWEI_BSS_URL override the endpoints).",
    options=OPTIONS,
    run=CollectorModule(f"{__name__}.collector"),
    region_flag="--regions",
    shape_flag="--flavors",
    per_region=True,
    needs_region="ap-southeast-1",
)
"""How ``spotwise collect huawei`` is written and what it runs."""

PROFILE = CloudProfile(
    name="huawei",
    title="Huawei Cloud",
    collector=COLLECTOR,
    storage=StorageList(
        usd_per_gb_month=0.0209,
        usd_per_1k_writes=0.0013,
        egress_usd_per_gb=0.12,
        inter_region_usd_per_gb=0.12,
        inter_continent_usd_per_gb=0.12,
        source="https://www.huaweicloud.com/intl/en-us/pricing/index.html#/obs (OBS Standard: "
        "storage, PUT requests, internet egress; between regions billed as egress) - "
        "APPROXIMATE, not read from that page: check it before quoting",
        as_of="2026-12-07",
    ),
    launch=LaunchForm(
        cloud="huawei",
        flags=(
            ("project", "--project", "PROJECT_ID"),
            ("image", "--image", "IMAGE_ID"),
            ("bucket", "--bucket", "OBS_BUCKET"),
            ("network", "--network", "VPC_ID/SUBNET_ID"),
        ),
        scheme="obs",
    ),
    zone_separator=None,  # ap-southeast-1a: the region and one letter
    skypilot=None,
    gpu_prefixes=("p2s.", "p2v.", "p3.", "pi2.", "g6."),  # GPU-accelerated ECS families
)
