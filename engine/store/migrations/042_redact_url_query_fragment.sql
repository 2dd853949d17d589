-- Runs and calls recorded before every part of a server URL was redacted (issue 23) may hold a key
-- given in the query (?api-key=KEY, ?token=KEY, ?key=sk-...) or the fragment (#KEY) of --base-url:
-- mask them as urls.redact_url does (judge_runs.params: the value and the fragment become ***), and
-- drop the fragment from the call cache's server label as urls.server_label does (the call key is a
-- hash and holds no secret; only the label column is rewritten).
UPDATE judge_runs
SET params = regexp_replace(
    regexp_replace(
        regexp_replace(
            params,
            '([?&][^=&#"\s,]*(key|token|secret|passw|pwd|sig|auth|credential|session|bearer|jwt|cookie|private|client_id)[^=&#"\s,]*=)[^&#"\s,]*',
            '\1***', 'gi'),
        '([?&][^=&#"\s,]*=)(sk|pk|rk|gh[pousr]|xox[abp]|hf)[-_][^&#"\s,]*', '\1***', 'gi'),
    '(://[^"#\s,]*)#[^"\s,]*', '\1#***', 'g')
WHERE params LIKE '%://%' AND (params LIKE '%?%' OR params LIKE '%#%');

UPDATE judge_calls
SET server = regexp_replace(
    regexp_replace(
        regexp_replace(
            server,
            '([?&][^=&#\s,]*(key|token|secret|passw|pwd|sig|auth|credential|session|bearer|jwt|cookie|private|client_id)[^=&#\s,]*=)[^&#\s,]*',
            '\1***', 'gi'),
        '([?&][^=&#\s,]*=)(sk|pk|rk|gh[pousr]|xox[abp]|hf)[-_][^&#\s,]*', '\1***', 'gi'),
    '#[^,]*', '', 'g')
WHERE server LIKE '%?%' OR server LIKE '%#%';
