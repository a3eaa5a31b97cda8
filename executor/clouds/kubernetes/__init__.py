"""Kubernetes: training Pods on a cluster's spot node pools (GKE, EKS with Karpenter, AKS, CCE)."""
