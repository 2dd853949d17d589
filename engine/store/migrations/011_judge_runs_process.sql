-- Judging runs: which process ran each one, so a later start can tell a run that was killed
-- (status still 'running', process gone) and mark it 'interrupted'; and how many judged pairs had
-- an answer cut to the length limit.
-- judge_runs.status values from here on: running | done | failed-calls (some calls failed after
-- all retries; rerunning completes them) | failed (stopped by an error) | interrupted.
ALTER TABLE judge_runs ADD COLUMN pid INTEGER;
ALTER TABLE judge_runs ADD COLUMN host VARCHAR;
ALTER TABLE judge_runs ADD COLUMN truncated_pairs INTEGER DEFAULT 0;
