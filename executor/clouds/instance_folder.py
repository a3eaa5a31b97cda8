"""The names in an instance's folder of the job's bucket (``PREFIX/INSTANCE/``), the same on
every cloud: the boot script and the on-instance agent write them, the launcher reads them back
(:class:`executor.clouds.instance.BucketInstance`).

No imports: the agent reads these before the instance's requirements exist.
"""

LOG_FOLDER = "log"
"""The folder of the command's output, in chunks of JSON lines (``00000001.jsonl``, ...)."""
EXIT_NAME = "exit"
"""The command's exit code, written once it has ended."""
BOOT_LOG = "boot.log"
"""The boot script's own log, uploaded when the boot fails before the command runs."""
