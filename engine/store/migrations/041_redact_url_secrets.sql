-- Runs recorded before URL secrets were redacted may hold a key given inside --base-url
-- (http://user:KEY@host/v1) in their params: replace the user part with *** (as urls.redact_url).
UPDATE judge_runs
SET params = regexp_replace(params, '([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@,"]+@', '\1***@', 'g')
WHERE params LIKE '%@%';
