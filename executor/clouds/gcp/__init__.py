"""Google Cloud: Spot VMs, GCS, Secret Manager and IAM behind the cloud seam."""
