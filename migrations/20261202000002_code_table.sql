-- The console's code table: a share's codes as admins see them, filtered.
-- One definition serves the page (keyset, either direction), its totals and
-- the CSV, so the filter is written once. A single-SELECT SQL function that
-- is STABLE is inlined by the planner: the caller's `c.id > $after ORDER BY
-- id LIMIT 51` still walks auth_codes_by_share.
CREATE FUNCTION code_table(
    p_tenant uuid,
    p_share uuid,
    p_state text,   -- 'unused' | 'bound' | 'revoked' | NULL (any)
    p_batch uuid,   -- NULL: any batch
    p_pattern text, -- an ILIKE pattern on the hint or the learner's email, or NULL
    p_code uuid     -- one code (a pasted full code, found by its digest), or NULL
) RETURNS TABLE (
    id uuid,
    batch_id uuid,
    hint text,
    state text,
    bound_email text,
    first_used_at timestamptz,
    access_count integer
) LANGUAGE sql STABLE AS $$
    SELECT c.id, c.batch_id, c.hint,
           CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
                WHEN c.bound_principal IS NOT NULL THEN 'bound'
                ELSE 'unused' END,
           a.email, c.first_used_at, c.access_count
    FROM auth_codes c LEFT JOIN accounts a ON a.id = c.bound_principal
    WHERE c.tenant_id = p_tenant AND c.share_id = p_share
      AND (p_state IS NULL
           OR (p_state = 'revoked' AND c.revoked_at IS NOT NULL)
           OR (p_state = 'bound' AND c.revoked_at IS NULL AND c.bound_principal IS NOT NULL)
           OR (p_state = 'unused' AND c.revoked_at IS NULL AND c.bound_principal IS NULL))
      AND (p_batch IS NULL OR c.batch_id = p_batch)
      AND (p_pattern IS NULL OR c.hint ILIKE p_pattern OR a.email ILIKE p_pattern)
      AND (p_code IS NULL OR c.id = p_code)
$$;
