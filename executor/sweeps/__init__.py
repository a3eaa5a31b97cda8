"""Sweeps and work queues: specs, the trial runner, workers, the report and the demo."""
