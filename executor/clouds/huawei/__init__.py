"""Huawei Cloud under the cloud seam: ECS spot servers, OBS, its metadata notice
(docs/huawei.md)."""
