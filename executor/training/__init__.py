"""What runs inside the training process: the guard, its step heartbeat, the checkpoint interval
and the resumable data order."""
