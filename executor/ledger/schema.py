"""The executor's tables in the store: ``jobs`` (one row per supervised job) and ``ledger``
(its instances, notices, preemptions, migrations, lost work and checkpoints), registered with
the store so every store this process opens holds them.

Version 1 adds both tables; version 2 records where each job's supervisor runs (``host``,
``supervisor_pid``) and the process group of the command it runs locally (``worker_pgid``), so
a job can be cancelled even if its supervisor died; version 3 marks jobs run on a replayed market
(``simulated``: every launcher but ``aws`` before it); version 4 keeps the job's prices with their
sources (``jobs.prices``, JSON) and, per instance and lost work, the on-demand price of the same
instance type in the same region (``ledger.on_demand_price``), the baseline's rate; version 5
says what a simulated job's replay was and how fast it ran (``jobs.simulation``); version 6 names
the sweep and trial a job ran for (``jobs.sweep``, ``jobs.trial``; None for a lone job); version 7
names the node of a multi-node job each entry is about (``ledger.node``; None for one node);
version 8 the fleet a job ran in and its priority tier (``jobs.fleet``, ``jobs.tier``); version
9 when its supervisor's process started (``jobs.supervisor_started``, the kernel's start time
in clock ticks since boot), so a live supervisor is told from a reused pid by more than its
name (a supervisor run from a user's own Python script has no "spotwise" in its command line).
"""

from __future__ import annotations

from spotwise.pricing.schemas import Schema, register_schema

LEDGER = register_schema(
    Schema(
        "ledger",
        (
            """
    CREATE TABLE jobs (job_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL,
        command VARCHAR NOT NULL, launcher VARCHAR NOT NULL, started TIMESTAMPTZ NOT NULL,
        ended TIMESTAMPTZ, status VARCHAR NOT NULL, compute_hours DOUBLE PRECISION NOT NULL,
        deadline_hours DOUBLE PRECISION NOT NULL, on_demand_price DOUBLE PRECISION NOT NULL,
        checkpoint_usd_per_gb_month DOUBLE PRECISION NOT NULL);
    CREATE TABLE ledger (job_id VARCHAR NOT NULL, seq INTEGER NOT NULL,
        ts TIMESTAMPTZ NOT NULL, kind VARCHAR NOT NULL, pool VARCHAR, market VARCHAR,
        hours DOUBLE PRECISION, price DOUBLE PRECISION, cost_usd DOUBLE PRECISION,
        bytes BIGINT, detail VARCHAR,
        PRIMARY KEY (job_id, seq));
    """,
            """
    ALTER TABLE jobs ADD COLUMN host VARCHAR;
    ALTER TABLE jobs ADD COLUMN supervisor_pid INTEGER;
    ALTER TABLE jobs ADD COLUMN worker_pgid INTEGER;
    """,
            """
    ALTER TABLE jobs ADD COLUMN simulated BOOLEAN;
    UPDATE jobs SET simulated = launcher <> 'aws';
    """,
            """
    ALTER TABLE jobs ADD COLUMN prices VARCHAR;
    ALTER TABLE ledger ADD COLUMN on_demand_price DOUBLE PRECISION;
    """,
            """
    ALTER TABLE jobs ADD COLUMN simulation VARCHAR;
    """,
            """
    ALTER TABLE jobs ADD COLUMN sweep VARCHAR;
    ALTER TABLE jobs ADD COLUMN trial INTEGER;
    """,
            """
    ALTER TABLE ledger ADD COLUMN node VARCHAR;
    """,
            """
    ALTER TABLE jobs ADD COLUMN fleet VARCHAR;
    ALTER TABLE jobs ADD COLUMN tier VARCHAR;
    """,
            """
    ALTER TABLE jobs ADD COLUMN supervisor_started BIGINT;
    """,
        ),
        ("jobs", "ledger"),
    )
)
