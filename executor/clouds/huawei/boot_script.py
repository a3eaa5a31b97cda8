"""The boot script a Huawei Cloud ECS server runs as user data (:mod:`executor.clouds.boot_script`,
under :mod:`executor.clouds.huawei.on_instance`): it gets and puts files in OBS with boto3 (the
S3-compatible API) and the agency's keys from the ECS metadata, and exports the region for
``obs://`` checkpoints (:mod:`.obs_filesystem`) (``SPOTWISE_HUAWEI_METADATA_URL``
and ``SPOTWISE_HUAWEI_OBS_URL`` override where; tests run it against local servers). The
launcher names the server (its id is known only after the create job), so the script learns
its id from the metadata's ``openstack/latest/meta_data.json`` (``uuid``).

User data is readable on the server and through the ECS API, so it carries no secret: secrets
are CSMS secrets' names, read with the agency."""

from __future__ import annotations

from collections.abc import Sequence

from spotwise.executor.clouds.boot_script import CloudBoot
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.huawei.agency import SECURITY_KEY
from spotwise.executor.clouds.huawei.notice import METADATA
from spotwise.executor.clouds.huawei.obs import OBS_VARIABLE
from spotwise.executor.clouds.huawei.obs_filesystem import REGION_VARIABLE
from spotwise.executor.clouds.huawei.on_instance import HuaweiAgent

_SERVER_ID = """\
ID=$(curl -sf "$IMDS/openstack/latest/meta_data.json" | grep -o '"uuid": *"[0-9a-f-]*"' \\
  | grep -o '[0-9a-f-]\\{36\\}')
[ -n "$ID" ] || { echo "spotwise boot: no server id from $IMDS"; $SHUTDOWN; exit 1; }
"""
_OBS = f"""\
obs() {{  # obs get|put KEY FILE: boto3 against OBS's S3 API, with the agency's keys
  "$PY" -c '
import json, os, sys, urllib.request, boto3
op, bucket, region, imds, key, path = sys.argv[1:]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
c = json.load(opener.open(imds + "/{SECURITY_KEY}", timeout=5))["credential"]
url = os.environ.get("{OBS_VARIABLE}") or "https://obs." + region + ".myhuaweicloud.com"
s3 = boto3.client("s3", endpoint_url=url, region_name=region, aws_access_key_id=c["access"],
                  aws_secret_access_key=c["secret"], aws_session_token=c.get("securitytoken"))
s3.download_file(bucket, key, path) if op == "get" else s3.upload_file(path, bucket, key)
' "$1" "$BUCKET" "$SPOTWISE_HUAWEI_REGION" "$IMDS" "$2" "$3"
}}
"""
HUAWEI_BOOT = CloudBoot(
    cloud="huawei",
    agent=HuaweiAgent.module,
    agent_options='--bucket "$BUCKET" --region "$SPOTWISE_HUAWEI_REGION" --project "$PROJECT"',
    store="obs",
    store_function=_OBS,
    store_url="obs://$BUCKET/",
    metadata=METADATA,
    identity=_SERVER_ID,
    exported=(REGION_VARIABLE,),
)
"""What Huawei Cloud's boot script does its own way."""


def boot_script(
    command: Sequence[str],
    env: dict[str, str],
    *,
    code: ShippedCode,
    region: str,
    project: str,
    bucket: str,
    prefix: str,
    setup: Sequence[str] = (),
    secrets: dict[str, str] | None = None,
    python: str | None = None,
) -> str:
    """The user data of one server in ``region`` and ``project``, its job's objects under
    ``prefix`` in ``bucket``; ``secrets`` maps a variable to the CSMS secret holding its value;
    ``python`` is the user's ``--python``
    (:meth:`CloudBoot.script <executor.clouds.boot_script.CloudBoot.script>`)."""
    return HUAWEI_BOOT.script(
        command,
        env,
        code=code,
        settings={REGION_VARIABLE: region, "PROJECT": project, "BUCKET": bucket},
        prefix=prefix,
        setup=setup,
        secrets=secrets,
        python=python,
    )
