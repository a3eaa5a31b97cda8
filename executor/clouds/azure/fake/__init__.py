"""Azure played on this machine: a loopback fake of Resource Manager, Key Vault's data plane and
the managed identity endpoint (:mod:`.arm`), each VM request checked against Azure's published
REST API specification (:mod:`.openapi`, ``spec/``), and Azurite for Blob (:mod:`.servers`)."""
