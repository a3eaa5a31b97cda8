"""Google Cloud played on this machine: a loopback fake of the APIs the launcher calls
(Compute Engine, Secret Manager, IAM), checked against Google's discovery documents."""
