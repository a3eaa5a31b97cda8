"""Supervision: the supervisor and its elastic and replay variants, the job log and cancellation."""
