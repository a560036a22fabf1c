-- One round trip for an opening (issue 18): `settle_access` also checks
-- the session. It takes the session's epoch (`p_session_epoch`) and, before
-- anything else, answers 'session_ended' when the account no longer has it
-- ("sign out everywhere", a password change or reset moved it on; or the
-- account is gone) and 'account_disabled' when it is disabled. The opening
-- then needs no read of the account of its own: the session, the share and
-- the resource are all checked in this one call.
--
-- Otherwise this is the definition of 20261203000002_access_periods.sql,
-- which says what it does and answers, with the account read once, first.
-- The form without the epoch (14 arguments) stays, as a wrapper at the end
-- of this file, for the instances of the previous release still running
-- during a rolling deploy (they read the account themselves before calling
-- it); a later migration drops it.

-- **The settlement transaction**: the definition in force.
CREATE OR REPLACE FUNCTION settle_access(
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
    expires_at timestamptz
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_previous record;
    v_code record;
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
        RETURN QUERY SELECT 'session_ended', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    ELSIF NOT v_account.active THEN
        RETURN QUERY SELECT 'account_disabled', NULL::uuid, false, false, false, false, NULL::timestamptz;
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
            RETURN QUERY SELECT 'request_id_reused', NULL::uuid, false, false, false, false, NULL::timestamptz;
            RETURN;
        END IF;
        SELECT c.bound_principal, c.revoked_at IS NOT NULL AS revoked,
               binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS access_ends
          INTO v_code
          FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
         WHERE c.tenant_id = p_tenant AND c.id = v_previous.code_id FOR SHARE OF c;
        IF v_code.revoked THEN
            RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, false, NULL::timestamptz;
        ELSIF v_code.bound_principal IS DISTINCT FROM p_principal THEN
            RETURN QUERY SELECT 'code_required', NULL::uuid, false, false, false, false, NULL::timestamptz;
        ELSIF v_code.access_ends IS NOT NULL AND v_code.access_ends <= clock_timestamp() THEN
            RETURN QUERY SELECT 'access_ended', NULL::uuid, false, false, false, false, v_code.access_ends;
        ELSIF v_previous.expires_at <= clock_timestamp() THEN
            RETURN QUERY SELECT 'request_id_reused', NULL::uuid, false, false, false, false, NULL::timestamptz;
        ELSE
            RETURN QUERY SELECT 'granted', v_previous.code_id, v_previous.bound_now, true, true, false,
                                v_previous.expires_at;
        END IF;
        RETURN;
    END IF;

    -- The share's quota is read and debited under this lock (shared): a
    -- change of quota waits for settlements in flight, and they for it.
    PERFORM pg_advisory_xact_lock_shared(share_quota_lock_key(p_share));
    SELECT s.status, s.valid_from, s.valid_until, s.per_learner_limit, s.quota, s.access_days INTO v_share
      FROM shares s WHERE s.tenant_id = p_tenant AND s.id = p_share;
    IF NOT FOUND OR v_share.status IN ('draft', 'archived') THEN
        RETURN QUERY SELECT 'not_available', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    ELSIF v_share.status = 'paused' THEN
        RETURN QUERY SELECT 'paused', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    ELSIF v_share.valid_from IS NOT NULL AND clock_timestamp() < v_share.valid_from THEN
        RETURN QUERY SELECT 'not_open_yet', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    ELSIF v_share.valid_until IS NOT NULL AND clock_timestamp() >= v_share.valid_until THEN
        RETURN QUERY SELECT 'closed', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    END IF;
    -- FOR SHARE: a resource being removed is either gone before this access
    -- is counted, or removed only after it commits.
    PERFORM 1 FROM resources r
      WHERE r.tenant_id = p_tenant AND r.share_id = p_share AND r.id = p_resource
        AND r.deleted_at IS NULL
      FOR SHARE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'resource_not_found', NULL::uuid, false, false, false, false, NULL::timestamptz;
        RETURN;
    END IF;

    -- The account (read first, with the session): not suspended by this
    -- tenant.
    IF v_account.suspended THEN
        RETURN QUERY SELECT 'learner_suspended', NULL::uuid, false, false, false, false, NULL::timestamptz;
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
            RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, false, NULL::timestamptz;
            RETURN;
        END IF;
        -- The access period is over: the binding stays (the code is never
        -- usable again); `expires_at` says when it ended.
        IF v_code.access_ends IS NOT NULL AND v_code.access_ends <= clock_timestamp() THEN
            RETURN QUERY SELECT 'access_ended', NULL::uuid, false, false, false, false, v_code.access_ends;
            RETURN;
        END IF;
        v_code_id := v_code.id;
    ELSE
        IF p_pending_code IS NULL THEN
            RETURN QUERY SELECT 'code_required', NULL::uuid, false, false, false, false, NULL::timestamptz;
            RETURN;
        END IF;
        -- The binding went away since the settler looked (an unbind): a
        -- request from another site still never binds.
        IF NOT p_may_count THEN
            RETURN QUERY SELECT 'open_from_course_page', NULL::uuid, false, false, false, false, NULL::timestamptz;
            RETURN;
        END IF;
        -- Verifying keeps the pending code: the learner comes back after
        -- clicking the mailed link and this succeeds.
        IF NOT v_account.may_bind THEN
            RETURN QUERY SELECT 'email_not_verified', NULL::uuid, false, false, false, false, NULL::timestamptz;
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
                RETURN QUERY SELECT 'wrong_share', NULL::uuid, false, false, false, true, NULL::timestamptz;
                RETURN;
            ELSIF v_code.revoked OR v_code.bound_principal IS NULL THEN
                RETURN QUERY SELECT 'code_revoked', NULL::uuid, false, false, false, true, NULL::timestamptz;
                RETURN;
            ELSIF v_code.bound_principal <> p_principal THEN
                RETURN QUERY SELECT 'code_bound', NULL::uuid, false, false, false, true, NULL::timestamptz;
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
        PERFORM settle_access_within(p_budget_ms);
        RETURN QUERY SELECT 'granted', v_code_id, v_bound_now, false, false, v_tried_bind, v_live;
        RETURN;
    END IF;
    -- No live grant: a new access, unless this request may not count one.
    IF NOT p_may_count THEN
        IF v_bound_now THEN
            RAISE EXCEPTION 'open_from_course_page' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
        END IF;
        RETURN QUERY SELECT 'open_from_course_page', NULL::uuid, false, false, false, v_tried_bind, NULL::timestamptz;
        RETURN;
    END IF;

    -- Debit the learner: conditional, never past the limit.
    UPDATE auth_codes c SET access_count = c.access_count + 1
     WHERE c.tenant_id = p_tenant AND c.id = v_code_id
       AND (v_share.per_learner_limit IS NULL OR c.access_count < v_share.per_learner_limit);
    IF NOT FOUND THEN
        IF v_bound_now THEN
            RAISE EXCEPTION 'learner_limit_reached' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
        END IF;
        RETURN QUERY SELECT 'learner_limit_reached', NULL::uuid, false, false, false, v_tried_bind, NULL::timestamptz;
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
                       binding_access_ends((SELECT c.first_used_at FROM auth_codes c
                                             WHERE c.tenant_id = p_tenant AND c.id = v_code_id),
                                           (SELECT c.access_until FROM auth_codes c
                                             WHERE c.tenant_id = p_tenant AND c.id = v_code_id),
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
    RETURN QUERY SELECT 'granted', v_code_id, v_bound_now, true, false, v_tried_bind, v_expires;
END;
$$;

-- The previous release's form (14 arguments, no session epoch), for its
-- instances still running during a rolling deploy: they checked the
-- session themselves, so it passes the account's current epoch. Only the
-- definition above decides anything.
CREATE OR REPLACE FUNCTION settle_access(
    p_tenant uuid, p_share uuid, p_principal uuid, p_resource uuid, p_request_id text,
    p_pending_code uuid, p_may_count boolean, p_grant_ttl_secs double precision,
    p_record_id uuid, p_bound_event uuid, p_access_event uuid, p_mail_id uuid,
    p_budget_ms integer, p_fault text
) RETURNS TABLE (
    outcome text, code_id uuid, bound_now boolean, counted boolean,
    replayed boolean, tried_bind boolean, expires_at timestamptz
) LANGUAGE sql AS $$
    SELECT * FROM settle_access(p_tenant, p_share, p_principal, p_resource, p_request_id,
                                p_pending_code, p_may_count, p_grant_ttl_secs, p_record_id,
                                p_bound_event, p_access_event, p_mail_id, p_budget_ms, p_fault,
                                (SELECT a.session_epoch FROM accounts a WHERE a.id = p_principal))
$$;
