-- Code expiry (issue 17): a batch may expire, and one code may override
-- its batch's date. An unused code past its date is refused like a revoked
-- one; a code bound before its date keeps working for good (expiry is about
-- codes lying unused in a drawer, never about taking access away).
--
-- The rule lives in one place, a trigger on the binding itself: whatever
-- binds a code (today the settlement's compare-and-set in
-- `settle_access`, tomorrow anything else) cannot bind an expired one. It
-- raises the settlement's refusal (SQLSTATE AOREF, message
-- 'code_expired', DETAIL 'tried_bind'), so the whole settlement rolls back
-- and the caller maps it like any other refusal
-- (`server/engine/src/settlement/transaction.rs`). Phase 1 (a typed code)
-- refuses an expired code early too, for a clear message, but only this
-- trigger decides.

ALTER TABLE code_batches ADD COLUMN expires_at timestamptz;
-- NULL: the batch's date (if any) applies.
ALTER TABLE auth_codes ADD COLUMN expires_at timestamptz;

-- When a code stops being usable: its own date, else its batch's.
CREATE FUNCTION code_expires_at(p_tenant uuid, p_batch uuid, p_own timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT coalesce(p_own, (SELECT b.expires_at FROM code_batches b
                             WHERE b.tenant_id = p_tenant AND b.id = p_batch))
$$;

-- Invariant: an expired code is never bound.
CREATE FUNCTION auth_codes_refuse_expired() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_expires timestamptz;
BEGIN
    v_expires := code_expires_at(NEW.tenant_id, NEW.batch_id, NEW.expires_at);
    IF v_expires IS NOT NULL AND v_expires <= clock_timestamp() THEN
        RAISE EXCEPTION 'code_expired' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER auth_codes_refuse_expired
    BEFORE UPDATE OF bound_principal ON auth_codes
    FOR EACH ROW
    WHEN (OLD.bound_principal IS NULL AND NEW.bound_principal IS NOT NULL)
    EXECUTE FUNCTION auth_codes_refuse_expired();
-- Nothing inserts a bound code today; if anything ever does, the same rule.
CREATE TRIGGER auth_codes_refuse_expired_insert
    BEFORE INSERT ON auth_codes
    FOR EACH ROW
    WHEN (NEW.bound_principal IS NOT NULL)
    EXECUTE FUNCTION auth_codes_refuse_expired();

-- The code table (see 20261202000002_code_table.sql) with each code's
-- date and a fifth state: 'expired', an unused code past its date (a bound
-- code is 'bound' whatever its date says: it keeps working).
DROP FUNCTION code_table(uuid, uuid, text, uuid, text, uuid);
CREATE FUNCTION code_table(
    p_tenant uuid,
    p_share uuid,
    p_state text,   -- 'unused' | 'bound' | 'revoked' | 'expired' | NULL (any)
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
    access_count integer,
    expires_at timestamptz
) LANGUAGE sql STABLE AS $$
    SELECT c.id, c.batch_id, c.hint,
           CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
                WHEN c.bound_principal IS NOT NULL THEN 'bound'
                WHEN coalesce(c.expires_at, b.expires_at) <= now() THEN 'expired'
                ELSE 'unused' END,
           a.email, c.first_used_at, c.access_count,
           coalesce(c.expires_at, b.expires_at)
    FROM auth_codes c
    JOIN code_batches b ON b.tenant_id = c.tenant_id AND b.id = c.batch_id
    LEFT JOIN accounts a ON a.id = c.bound_principal
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
      AND (p_pattern IS NULL OR c.hint ILIKE p_pattern OR a.email ILIKE p_pattern)
      AND (p_code IS NULL OR c.id = p_code)
$$;
