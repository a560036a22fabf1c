-- **The settlement transaction**: the PL/pgSQL function `settle_access`,
-- the one place a code is bound and an access counted. This file is its
-- definition in force, and the only one to read: the migration that
-- installs it (`migrations/…_settle_access.sql`) is a link to this file,
-- and `transaction.rs` beside it is its one caller
-- (`Settler::transaction`), which maps its answers to `SettlementError`.
-- How to change it: `migrations/README.md`.
--
-- Arguments: the tenant, share, account (`p_principal`) and resource of
-- the opening; the request id (a retry reuses it); the code kept pending
-- in the session (`p_pending_code`, NULL for a returning learner); whether
-- this request may count a new access (`p_may_count`: false for a request
-- from another site); a grant's lifetime; the ids of the rows it may write
-- (the access record, the two outbox events, the receipt mail); a time
-- budget in ms; a fault point (tests only, NULL otherwise); and the
-- session's epoch.
--
-- Returns one row. `outcome` is 'granted' or why not (a word of
-- `Answer` in `answer.rs`); for a grant, the code, whether this call
-- bound it (`bound_now`), counted a new access (`counted`) or answered a
-- retry from its first record (`replayed`), the grant's end (`expires_at`;
-- for 'access_ended', when the access period ended), and the learner's
-- binding as it stands after the call (`hint`, `bound_at`, `access_count`,
-- `access_ends`), so that the opening needs no second read.
-- `tried_bind`: a compare-and-set was attempted (the concurrency suite
-- counts them).
--
-- Raises: a refusal found after something was written (SQLSTATE AOREF, the
-- outcome as its message, DETAIL 'tried_bind' when a bind was attempted),
-- so that nothing stays; a unique violation when a concurrent attempt won
-- (the caller starts over); SQLSTATE 55P03 past the time budget (every
-- lock wait is bounded by it, and so is the call before it answers a
-- write: `settle_access_within`); SQLSTATE AOFLT at a test's fault point.
--
-- The order of the checks is the contract: the session first (even a
-- retry's first answer needs a live session), then a retry's first record,
-- the share, the resource, the account, an existing binding, the bind, a
-- live grant, the learner's limit, the record and the events, the quota.

-- The definition before this one goes first, so that a change of the
-- columns it returns needs nothing special (CREATE OR REPLACE cannot change
-- them). Calls in flight finish with the definition they started with.
DROP FUNCTION IF EXISTS settle_access(uuid, uuid, uuid, uuid, text, uuid, boolean, double precision,
                                      uuid, uuid, uuid, uuid, integer, text, bigint);

CREATE FUNCTION settle_access(
    p_tenant uuid,
    p_share uuid,
    p_principal uuid,
    p_resource uuid,
    p_request_id text,
    p_pending_code uuid,
    p_may_count boolean,
    p_grant_ttl_secs double precision,
    p_record_id uuid,
    p_bound_event uuid,
    p_access_event uuid,
    p_mail_id uuid,
    p_budget_ms integer,
    p_fault text,
    p_session_epoch bigint
) RETURNS TABLE (
    outcome text,
    code_id uuid,
    bound_now boolean,
    counted boolean,
    replayed boolean,
    tried_bind boolean,
    expires_at timestamptz,
    hint text,
    bound_at timestamptz,
    access_count integer,
    access_ends timestamptz
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_previous record;
    v_code record;
    v_binding record;
    v_share record;
    v_account record;
    v_code_id uuid;
    v_bound_now boolean := false;
    v_tried_bind boolean := false;
    v_live timestamptz;
    v_expires timestamptz;
    v_slot smallint;
    v_other smallint;
    v_debited boolean := false;
BEGIN
    IF p_budget_ms IS NOT NULL THEN
        PERFORM set_config('lock_timeout', p_budget_ms || 'ms', true);
    END IF;
    -- The session first, before anything is answered (a retry's first
    -- result included): the account still exists at the epoch the session
    -- was signed in with. "Sign out everywhere", a password change or a
    -- reset moved the epoch on; the caller ends the session.
    -- The same read says whether the account may bind (a verified address,
    -- unless the tenant does not ask) and whether this tenant suspended
    -- it; those are answered below, in their turn.
    SELECT a.disabled_at IS NULL AS active,
           a.email_verified_at IS NOT NULL OR NOT coalesce(t.require_verified_email, true) AS may_bind,
           EXISTS (SELECT 1 FROM suspended_learners l
                    WHERE l.tenant_id = p_tenant AND l.account_id = a.id) AS suspended
      INTO v_account
      FROM accounts a LEFT JOIN tenants t ON t.id = p_tenant
     WHERE a.id = p_principal AND a.session_epoch = p_session_epoch;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'session_ended', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    ELSIF NOT v_account.active THEN
        RETURN QUERY SELECT 'account_disabled', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;
    -- A retry of an attempt that committed gets its first result, but only
    -- while that result still holds: the grant is live, the code is still
    -- this learner's and not revoked.
    SELECT a.code_id, a.resource_id, a.bound_now, a.expires_at INTO v_previous
      FROM access_records a
     WHERE a.tenant_id = p_tenant AND a.principal_id = p_principal AND a.request_id = p_request_id;
    IF FOUND THEN
        IF v_previous.resource_id <> p_resource THEN
            RETURN QUERY SELECT 'request_id_reused', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        SELECT c.bound_principal, c.revoked_at IS NOT NULL AS revoked, c.hint, c.first_used_at,
               c.access_count, binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS access_ends
          INTO v_code
          FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
         WHERE c.tenant_id = p_tenant AND c.id = v_previous.code_id FOR SHARE OF c;
        IF v_code.revoked THEN
            RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        ELSIF v_code.bound_principal IS DISTINCT FROM p_principal THEN
            RETURN QUERY SELECT 'code_required', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        ELSIF v_code.access_ends IS NOT NULL AND v_code.access_ends <= clock_timestamp() THEN
            RETURN QUERY SELECT 'access_ended', NULL::uuid, false, false, false, false, v_code.access_ends,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        ELSIF v_previous.expires_at <= clock_timestamp() THEN
            RETURN QUERY SELECT 'request_id_reused', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        ELSE
            RETURN QUERY SELECT 'granted', v_previous.code_id, v_previous.bound_now, true, true, false,
                                v_previous.expires_at,
                                v_code.hint, v_code.first_used_at, v_code.access_count, v_code.access_ends;
        END IF;
        RETURN;
    END IF;

    -- The share's quota is read and debited under this lock (shared): a
    -- change of quota waits for settlements in flight, and they for it.
    PERFORM pg_advisory_xact_lock_shared(share_quota_lock_key(p_share));
    SELECT s.status, s.valid_from, s.valid_until, s.per_learner_limit, s.quota, s.access_days INTO v_share
      FROM shares s WHERE s.tenant_id = p_tenant AND s.id = p_share;
    IF NOT FOUND OR v_share.status IN ('draft', 'archived') THEN
        RETURN QUERY SELECT 'not_available', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    ELSIF v_share.status = 'paused' THEN
        RETURN QUERY SELECT 'paused', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    ELSIF v_share.valid_from IS NOT NULL AND clock_timestamp() < v_share.valid_from THEN
        RETURN QUERY SELECT 'not_open_yet', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    ELSIF v_share.valid_until IS NOT NULL AND clock_timestamp() >= v_share.valid_until THEN
        RETURN QUERY SELECT 'closed', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;
    -- FOR SHARE: a resource being removed is either gone before this access
    -- is counted, or removed only after it commits.
    PERFORM 1 FROM resources r
      WHERE r.tenant_id = p_tenant AND r.share_id = p_share AND r.id = p_resource
        AND r.deleted_at IS NULL
      FOR SHARE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'resource_not_found', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;

    -- The account (read first, with the session): not suspended by this
    -- tenant.
    IF v_account.suspended THEN
        RETURN QUERY SELECT 'learner_suspended', NULL::uuid, false, false, false, false, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;

    -- An existing binding decides; it is locked so that one learner's
    -- concurrent settlements in a share run one after another.
    SELECT c.id, c.revoked_at IS NOT NULL AS revoked,
           binding_access_ends(c.first_used_at, c.access_until, v_share.access_days) AS access_ends
      INTO v_code
      FROM auth_codes c
     WHERE c.tenant_id = p_tenant AND c.share_id = p_share AND c.bound_principal = p_principal
     FOR UPDATE;
    IF FOUND THEN
        IF v_code.revoked THEN
            RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        -- The access period is over: the binding stays (the code is never
        -- usable again); `expires_at` says when it ended.
        IF v_code.access_ends IS NOT NULL AND v_code.access_ends <= clock_timestamp() THEN
            RETURN QUERY SELECT 'access_ended', NULL::uuid, false, false, false, false, v_code.access_ends,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        v_code_id := v_code.id;
    ELSE
        IF p_pending_code IS NULL THEN
            RETURN QUERY SELECT 'code_required', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        -- The binding went away since the settler looked (an unbind): a
        -- request from another site still never binds.
        IF NOT p_may_count THEN
            RETURN QUERY SELECT 'open_from_course_page', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        -- Verifying keeps the pending code: the learner comes back after
        -- clicking the mailed link and this succeeds.
        IF NOT v_account.may_bind THEN
            RETURN QUERY SELECT 'email_not_verified', NULL::uuid, false, false, false, false, NULL::timestamptz,
                                NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
            RETURN;
        END IF;
        v_tried_bind := true;
        -- The compare-and-set. A unique violation (this learner bound
        -- another code concurrently) is raised: the caller starts over.
        UPDATE auth_codes c SET bound_principal = p_principal, first_used_at = now()
         WHERE c.tenant_id = p_tenant AND c.share_id = p_share AND c.id = p_pending_code
           AND c.bound_principal IS NULL AND c.revoked_at IS NULL
        RETURNING c.id INTO v_code_id;
        IF FOUND THEN
            v_bound_now := true;
        ELSE
            -- Lost the compare-and-set: read why, in this fresh statement.
            SELECT c.bound_principal, c.revoked_at IS NOT NULL AS revoked INTO v_code
              FROM auth_codes c
             WHERE c.tenant_id = p_tenant AND c.share_id = p_share AND c.id = p_pending_code
             FOR UPDATE;
            IF NOT FOUND THEN
                RETURN QUERY SELECT 'wrong_share', NULL::uuid, false, false, false, true, NULL::timestamptz,
                                    NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
                RETURN;
            ELSIF v_code.revoked OR v_code.bound_principal IS NULL THEN
                RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, true, NULL::timestamptz,
                                    NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
                RETURN;
            ELSIF v_code.bound_principal <> p_principal THEN
                RETURN QUERY SELECT 'code_bound', NULL::uuid, false, false, false, true, NULL::timestamptz,
                                    NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
                RETURN;
            END IF;
            v_code_id := p_pending_code;
        END IF;
    END IF;
    IF p_fault = 'after_bind' THEN
        RAISE EXCEPTION 'injected fault at after_bind' USING ERRCODE = 'AOFLT';
    END IF;

    -- A live grant of this resource: no new access to count.
    SELECT max(a.expires_at) INTO v_live FROM access_records a
     WHERE a.tenant_id = p_tenant AND a.share_id = p_share AND a.principal_id = p_principal
       AND a.resource_id = p_resource AND a.expires_at > now();
    IF v_live IS NOT NULL THEN
        SELECT c.hint, c.first_used_at, c.access_count, c.access_until INTO v_binding
          FROM auth_codes c WHERE c.tenant_id = p_tenant AND c.id = v_code_id;
        PERFORM settle_access_within(p_budget_ms);
        RETURN QUERY SELECT 'granted', v_code_id, v_bound_now, false, false, v_tried_bind, v_live,
                            v_binding.hint, v_binding.first_used_at, v_binding.access_count,
                            binding_access_ends(v_binding.first_used_at, v_binding.access_until,
                                                v_share.access_days);
        RETURN;
    END IF;
    -- No live grant: a new access, unless this request may not count one.
    IF NOT p_may_count THEN
        IF v_bound_now THEN
            RAISE EXCEPTION 'open_from_course_page' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
        END IF;
        RETURN QUERY SELECT 'open_from_course_page', NULL::uuid, false, false, false, v_tried_bind, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;

    -- Debit the learner: conditional, never past the limit. The binding as
    -- it now stands comes back with it.
    UPDATE auth_codes c SET access_count = c.access_count + 1
     WHERE c.tenant_id = p_tenant AND c.id = v_code_id
       AND (v_share.per_learner_limit IS NULL OR c.access_count < v_share.per_learner_limit)
    RETURNING c.hint, c.first_used_at, c.access_count, c.access_until INTO v_binding;
    IF NOT FOUND THEN
        IF v_bound_now THEN
            RAISE EXCEPTION 'learner_limit_reached' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
        END IF;
        RETURN QUERY SELECT 'learner_limit_reached', NULL::uuid, false, false, false, v_tried_bind, NULL::timestamptz,
                            NULL::text, NULL::timestamptz, NULL::integer, NULL::timestamptz;
        RETURN;
    END IF;
    IF p_fault = 'after_learner_debit' THEN
        RAISE EXCEPTION 'injected fault at after_learner_debit' USING ERRCODE = 'AOFLT';
    END IF;

    -- The record (unique per request id: a concurrent retry of this attempt
    -- that recorded first raises a unique violation; the caller starts over
    -- and answers from its record).
    -- A grant never outlives the learner's access period (least() skips
    -- a NULL end: for good).
    v_expires := least(clock_timestamp() + make_interval(secs => p_grant_ttl_secs),
                       binding_access_ends(v_binding.first_used_at, v_binding.access_until,
                                           v_share.access_days));
    INSERT INTO access_records
        (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
    VALUES (p_tenant, p_record_id, p_share, v_code_id, p_principal, p_resource, p_request_id,
            v_bound_now, v_expires)
    RETURNING access_records.expires_at INTO v_expires;
    IF p_fault = 'after_record' THEN
        RAISE EXCEPTION 'injected fault at after_record' USING ERRCODE = 'AOFLT';
    END IF;

    -- The events (the webhook outbox) and the learner's receipt.
    IF v_bound_now THEN
        INSERT INTO outbox (tenant_id, id, event_type, payload)
        VALUES (p_tenant, p_bound_event, 'code.bound',
                jsonb_build_object('share_id', p_share, 'code_id', v_code_id, 'principal', p_principal));
        INSERT INTO mail_outbox (id, tenant_id, account_id, template, to_address, lang, params)
        SELECT p_mail_id, p_tenant, a.id, 'code_bound', a.email, a.lang,
               jsonb_build_object('course', s.title, 'course_slug', s.slug, 'tenant', t.name)
          FROM accounts a
          JOIN shares s ON s.tenant_id = p_tenant AND s.id = p_share
          JOIN tenants t ON t.id = p_tenant
         WHERE a.id = p_principal;
    END IF;
    INSERT INTO outbox (tenant_id, id, event_type, payload)
    VALUES (p_tenant, p_access_event, 'access.recorded',
            jsonb_build_object('share_id', p_share, 'code_id', v_code_id, 'principal', p_principal,
                               'resource_id', p_resource, 'access_id', p_record_id));

    -- The share's quota last, in the learner's slot or any with room.
    IF v_share.quota IS NOT NULL THEN
        v_slot := (hashtextextended(p_principal::text, 0) & 15)::smallint;
        UPDATE share_quota_slots q SET used = q.used + 1
         WHERE q.tenant_id = p_tenant AND q.share_id = p_share AND q.slot = v_slot AND q.used < q.cap;
        v_debited := FOUND;
        IF NOT v_debited THEN
            FOR v_other IN
                SELECT q.slot FROM share_quota_slots q
                 WHERE q.tenant_id = p_tenant AND q.share_id = p_share AND q.used < q.cap
                 ORDER BY (q.slot - v_slot + 16) % 16
            LOOP
                UPDATE share_quota_slots q SET used = q.used + 1
                 WHERE q.tenant_id = p_tenant AND q.share_id = p_share AND q.slot = v_other
                   AND q.used < q.cap;
                IF FOUND THEN
                    v_debited := true;
                    EXIT;
                END IF;
            END LOOP;
        END IF;
        IF NOT v_debited THEN
            RAISE EXCEPTION 'quota_exhausted' USING ERRCODE = 'AOREF',
                DETAIL = CASE WHEN v_tried_bind THEN 'tried_bind' ELSE '' END;
        END IF;
    END IF;
    IF p_fault = 'after_share_debit' THEN
        RAISE EXCEPTION 'injected fault at after_share_debit' USING ERRCODE = 'AOFLT';
    END IF;
    PERFORM settle_access_within(p_budget_ms);
    RETURN QUERY SELECT 'granted', v_code_id, v_bound_now, true, false, v_tried_bind, v_expires,
                        v_binding.hint, v_binding.first_used_at, v_binding.access_count,
                        binding_access_ends(v_binding.first_used_at, v_binding.access_until,
                                            v_share.access_days);
END;
$$;
