"""Azure: Spot VMs, Blob storage, Key Vault and managed identities through the cloud seam."""
