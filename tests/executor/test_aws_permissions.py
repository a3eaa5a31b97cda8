"""docs/aws.md's IAM policies allow every AWS call the code makes: read off the code, not a
list kept by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_CODE = [
    ROOT / "executor/launchers/aws.py",
    ROOT / "executor/orphans.py",
    ROOT / "pricing/sources/aws.py",
]
SERVICES = {"ec2": "ec2", "s3": "s3", "ssm": "ssm", "client": "ec2"}
"""The name a boto3 client goes by in the code → its IAM service (the collector's ``client``
is EC2's)."""
CLI_CALLS = {r"aws ssm get-parameter": "ssm:GetParameter", r"aws s3 cp -": "s3:PutObject"}
"""What the boot script runs on the instance, as IAM actions."""


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def controller_actions() -> set[str]:
    """IAM actions of every boto3 call in the controller's code, and what they imply."""
    actions = set()
    for path in CONTROLLER_CODE:
        text = path.read_text()
        for client, method in re.findall(r"\b(ec2|s3|ssm|client)\.(?!get_paginator)(\w+)\(", text):
            actions.add(f"{SERVICES[client]}:{_camel(method)}")
        for method in re.findall(r'get_paginator\("(\w+)"\)', text):
            actions.add(f"ec2:{_camel(method)}")
        if "TagSpecifications" in text:
            actions.add("ec2:CreateTags")  # tags at launch need it
        if "IamInstanceProfile" in text:
            actions.add("iam:PassRole")
    return actions


def instance_actions() -> set[str]:
    text = (ROOT / "executor/launchers/aws.py").read_text()
    return {action for command, action in CLI_CALLS.items() if command in text}


def documented_policies() -> list[set[str]]:
    """The actions each JSON policy of docs/aws.md allows, in order."""
    doc = (ROOT / "docs/aws.md").read_text()
    policies = []
    for block in re.findall(r"```json\n(.*?)```", doc, flags=re.S):
        statements = json.loads(block)["Statement"]
        policies.append({a for s in statements if s["Effect"] == "Allow" for a in s["Action"]})
    return policies


def test_the_documented_policies_allow_every_call_and_nothing_unused() -> None:
    controller, instance = documented_policies()
    called = controller_actions()
    assert {"ec2:RunInstances", "ec2:DescribeSpotPriceHistory", "s3:GetObject"} <= called
    assert called == controller  # every call allowed, and nothing allowed that is not called
    assert instance_actions() == instance == {"ssm:GetParameter", "s3:PutObject"}
