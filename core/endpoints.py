"""The clouds' instance metadata endpoints, where preemption notices are read."""

AWS_IMDS_URL = "http://169.254.169.254"
GCP_METADATA_URL = "http://metadata.google.internal"
AZURE_METADATA_URL = "http://169.254.169.254"
"""Azure's instance metadata service shares AWS's link-local address."""
