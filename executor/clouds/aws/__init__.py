"""AWS: the EC2 launcher, account setup, check and gc, the boot script and the on-instance agent."""
