"""The cost ledger: jobs and their entries in the store, the journal of pending writes, and the
prices a job is charged."""
