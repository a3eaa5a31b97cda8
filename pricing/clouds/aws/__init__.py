"""AWS as pricing and the plan know it: EC2 spot and on-demand prices, S3, EC2 launch flags."""

from spotwise.pricing.clouds.profile import CloudProfile, Collector, LaunchForm, StorageList

PROFILE = CloudProfile(
    name="aws",
    title="AWS",
    collector=Collector(
        "--region",
        "--instance-types",
        per_region=False,
        needs_region="us-east-1",
        on_demand_flag="--on-demand",
        gpu_flag=None,
    ),
    storage=StorageList(
        usd_per_gb_month=0.023,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.09,
        source="https://aws.amazon.com/s3/pricing/ (S3 Standard, us-east-1; egress to the "
        "internet, first 10 TB)",
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
