-- Judging hardening: a call is claimed before it is made, so two runs (of any datasets) that need
-- the same call pay for it once; the server a call went to is part of its key; a run's process is
-- recognised by its start time as well as its id (a recycled pid is not the old run).

-- One row per call some live run has claimed and not yet stored. ``owner`` names the process
-- (host:pid:start time); a lease whose owner is gone (same host) or whose ``expires_at`` passed
-- (owners renew theirs while they run) may be taken over by another run.
CREATE TABLE judge_call_leases (
    call_key   VARCHAR PRIMARY KEY,
    owner      VARCHAR NOT NULL,
    host       VARCHAR NOT NULL,
    pid        INTEGER NOT NULL,
    started    DOUBLE,                       -- the owner's process start time (seconds since the epoch)
    expires_at DOUBLE NOT NULL               -- seconds since the epoch
);

-- The OpenAI-compatible server (base URL list without credentials) a call was keyed on; NULL for
-- calls stored before this migration (their key did not include the server: still readable, and
-- reused by a run on any server, as before).
ALTER TABLE judge_calls ADD COLUMN server VARCHAR;

-- The process start time of a run's pid, so a killed run whose pid was reused is seen as gone.
ALTER TABLE judge_runs ADD COLUMN pid_started DOUBLE;
