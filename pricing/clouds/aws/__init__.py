"""AWS as pricing and the plan know it: EC2 spot and on-demand prices, S3, EC2 launch flags.

Its ``spotwise collect aws`` is declared here (:data:`COLLECTOR`: its flags as data) and runs
:mod:`.collector`; its price sources sit beside it: :mod:`.spot_prices` (the spot price history,
its CSV and the EC2 collector), :mod:`.price_list` (on-demand prices), :mod:`.advisor` (the
Spot Advisor's bands)."""

from spotwise.pricing.clouds.profile import (
    CloudProfile,
    CollectOption,
    Collector,
    CollectorModule,
    LaunchForm,
    StorageList,
)

OPTIONS = (
    CollectOption(flag="--region", type=str, required=True, help="AWS region, e.g. us-east-1."),
    CollectOption(
        flag="--instance-types",
        type=str,
        default="",
        help="Comma-separated instance types (default: all in the region).",
        show_default=False,
    ),
    CollectOption(
        flag="--since",
        type=str,
        help="Earliest time (ISO 8601, UTC) for series with nothing stored yet; "
        "stored series resume from their newest price.",
        show_default=False,
    ),
    CollectOption(
        flag="--endpoint-url",
        type=str,
        help="EC2 endpoint (e.g. a moto server); default: AWS.",
        show_default=False,
    ),
    CollectOption(
        flag="--advisor-url",
        type=str,
        help="Spot Advisor feed URL (default: AWS's public feed); '' skips it.",
        show_default=False,
    ),
    CollectOption(
        flag="--placement-scores/--no-placement-scores",
        type=bool,
        default=True,
        help="Ask for spot placement scores (needs --instance-types and permission).",
    ),
    CollectOption(
        flag="--max-attempts",
        type=int,
        default=8,
        min=1,
        help="Attempts per API call; throttled calls back off.",
    ),
    CollectOption(
        flag="--on-demand",
        type=bool,
        default=False,
        help="Collect the region's on-demand prices from the AWS Price List instead "
        "(--endpoint-url is then the Price List's).",
    ),
)

COLLECTOR = Collector(
    help="Collect spot price history (Linux/UNIX), placement scores and Spot Advisor bands; with "
    "--on-demand, on-demand prices from the AWS Price List.",
    options=OPTIONS,
    run=CollectorModule(f"{__name__}.collector"),
    region_flag="--region",
    shape_flag="--instance-types",
    per_region=False,
    needs_region="us-east-1",
    on_demand_flag="--on-demand",
    gpu_flag=None,
)
"""How ``spotwise collect aws`` is written and what it runs."""

PROFILE = CloudProfile(
    name="aws",
    title="AWS",
    collector=COLLECTOR,
    storage=StorageList(
        usd_per_gb_month=0.023,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.09,
        inter_region_usd_per_gb=0.02,
        inter_continent_usd_per_gb=0.02,
        source="https://aws.amazon.com/s3/pricing/ (S3 Standard, us-east-1; egress to the "
        "internet, first 10 TB)"
        "; data transfer to another AWS region, from a US region:"
        " https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer",
        as_of="2026-12-04",
    ),
    launch=LaunchForm(
        cloud="aws",
        flags=(
            ("image", "--image-id", "AMI"),
            ("bucket", "--bucket", "BUCKET"),
            ("identity", "--instance-profile", "PROFILE"),
        ),
        scheme="s3",
    ),
    zone_separator=None,
    skypilot="aws",
    price_grid="h",
    gpu_prefixes=("p2.", "p3", "p4", "p5", "g3", "g4", "g5", "g6", "trn", "inf", "dl1"),
)
