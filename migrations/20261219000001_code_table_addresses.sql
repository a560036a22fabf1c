-- The code table (20261203000001_code_expiry.sql) with two more columns
-- for the console (issue 41): the address a code is addressed to
-- (`auth_codes.addressed_to`: it binds only to that verified account),
-- and the email of the learner a refund released from it
-- (`auth_codes.released_from`). A search matches the address too, so
-- "where is ann's code" finds it before she redeems it.
--
-- Rolling deploys: the release before this one selects the columns it
-- knows by name; the two new ones are ignored by it. The function is
-- dropped and created in this migration's one transaction: callers see
-- the old one until it commits, then the new one. Locks: none on a table;
-- the same 2 s `lock_timeout` as the migrations before it.
SET LOCAL lock_timeout = '2s';

DROP FUNCTION code_table(uuid, uuid, text, uuid, text, uuid);
CREATE FUNCTION code_table(
    p_tenant uuid,
    p_share uuid,
    p_state text,   -- 'unused' | 'bound' | 'revoked' | 'expired' | NULL (any)
    p_batch uuid,   -- NULL: any batch
    p_pattern text, -- an ILIKE pattern on the hint, the learner's email or the address, or NULL
    p_code uuid     -- one code (a pasted full code, found by its digest), or NULL
) RETURNS TABLE (
    id uuid,
    batch_id uuid,
    hint text,
    state text,
    bound_email text,
    first_used_at timestamptz,
    access_count integer,
    expires_at timestamptz,
    addressed_to text,
    former_email text
) LANGUAGE sql STABLE AS $$
    SELECT c.id, c.batch_id, c.hint,
           CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
                WHEN c.bound_principal IS NOT NULL THEN 'bound'
                WHEN coalesce(c.expires_at, b.expires_at) <= now() THEN 'expired'
                ELSE 'unused' END,
           a.email, c.first_used_at, c.access_count,
           coalesce(c.expires_at, b.expires_at),
           c.addressed_to, f.email
    FROM auth_codes c
    JOIN code_batches b ON b.tenant_id = c.tenant_id AND b.id = c.batch_id
    LEFT JOIN accounts a ON a.id = c.bound_principal
    LEFT JOIN accounts f ON f.id = c.released_from
    WHERE c.tenant_id = p_tenant AND c.share_id = p_share
      AND (p_state IS NULL
           OR (p_state = 'revoked' AND c.revoked_at IS NOT NULL)
           OR (p_state = 'bound' AND c.revoked_at IS NULL AND c.bound_principal IS NOT NULL)
           OR (p_state = 'unused' AND c.revoked_at IS NULL AND c.bound_principal IS NULL
               AND (coalesce(c.expires_at, b.expires_at) IS NULL
                    OR coalesce(c.expires_at, b.expires_at) > now()))
           OR (p_state = 'expired' AND c.revoked_at IS NULL AND c.bound_principal IS NULL
               AND coalesce(c.expires_at, b.expires_at) <= now()))
      AND (p_batch IS NULL OR c.batch_id = p_batch)
      AND (p_pattern IS NULL OR c.hint ILIKE p_pattern OR a.email ILIKE p_pattern
           OR c.addressed_to ILIKE p_pattern)
      AND (p_code IS NULL OR c.id = p_code)
$$;
