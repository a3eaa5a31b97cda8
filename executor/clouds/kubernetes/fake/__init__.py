"""Kubernetes played on this machine: a loopback kube-apiserver (:mod:`.apiserver`) over the
fake cluster's state and controllers (:mod:`.cluster`), every object checked against the API's
schema (:mod:`.schema`), and a node player that runs Pods as processes and takes nodes back
(:mod:`.node_player`)."""
