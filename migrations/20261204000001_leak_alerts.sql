-- Leak alerts (issue 17): the leak signal (20261129000006_leak_signal.sql,
-- other accounts typing a code that is already bound) now reaches someone.
-- When a bound code has been tried by others `leak_alert_threshold()`
-- times, the tenant's owners get a mail and the webhook outbox a
-- `code.leak_suspected` event, at most once per code per day while the
-- tries go on. The console's "revoke and replace" then gives the rightful
-- learner a new code bound to them, and the leaked text stops working.

-- When the owners were last told about this code (NULL: never).
ALTER TABLE auth_codes ADD COLUMN leak_alerted_at timestamptz;

ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_template_check,
    ADD CONSTRAINT mail_outbox_template_check CHECK (template IN (
        'verify_email', 'reset_password', 'password_changed', 'change_email',
        'email_change_requested', 'email_changed',
        'invitation', 'code_bound', 'code_unbound', 'code_revoked',
        'leak_suspected', 'code_replaced'
    ));

-- The two new webhook events (code.replaced: a code replaced by a new one;
-- code.leak_suspected: this alert) can be subscribed to.
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check,
    ADD CONSTRAINT webhook_endpoints_events_check CHECK (
        cardinality(events) >= 1
        AND events <@ ARRAY['code.bound', 'code.unbound', 'code.revoked', 'code.replaced',
                            'code.leak_suspected', 'access.recorded', 'batch.issued']
    );

-- How many tries of a bound code by accounts other than its learner make
-- it worth an alert. Tries are counted, not accounts: one try can be the
-- learner's own second account, three tries are worth a look either way.
-- The count goes on for the binding's life (an unbind resets it and the
-- alert date), so once past three, every day with a try is a day with an
-- alert.
CREATE FUNCTION leak_alert_threshold() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 3';

-- Counts one try of a bound code by another account and decides, under the
-- code's row lock, whether this try raises the day's alert: the rule "at
-- most once per code per day" lives here and nowhere else. Returns one row
-- when an alert is due (the caller writes the event and the owners' mails
-- in the same transaction), none otherwise. Revoked and unbound codes are
-- never alerted about (nothing is left to protect).
CREATE FUNCTION note_foreign_attempt(p_tenant uuid, p_code uuid)
RETURNS TABLE (share_id uuid, hint text, attempts integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_code record;
    v_alert boolean;
BEGIN
    SELECT c.share_id, c.hint, c.foreign_attempts + 1 AS attempts, c.leak_alerted_at,
           c.bound_principal IS NOT NULL AND c.revoked_at IS NULL AS live
      INTO v_code
      FROM auth_codes c
     WHERE c.tenant_id = p_tenant AND c.id = p_code
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_alert := v_code.live
        AND v_code.attempts >= leak_alert_threshold()
        AND (v_code.leak_alerted_at IS NULL OR v_code.leak_alerted_at <= now() - interval '1 day');
    UPDATE auth_codes c
       SET foreign_attempts = v_code.attempts,
           last_foreign_attempt_at = now(),
           leak_alerted_at = CASE WHEN v_alert THEN now() ELSE c.leak_alerted_at END
     WHERE c.tenant_id = p_tenant AND c.id = p_code;
    IF v_alert THEN
        RETURN QUERY SELECT v_code.share_id, v_code.hint, v_code.attempts;
    END IF;
END;
$$;

-- Invariant (20261203000001_code_expiry.sql): an expired code is never
-- bound. One exception, on the audited path only: "revoke and replace"
-- inserts the replacement already bound, carrying the binding the learner
-- made (first use, count, extension) when the old code was still in date.
-- Nothing new is bound there, so the date was checked when it mattered;
-- the replacement keeps the old code's own date and batch, so the
-- reconciler's "no code was bound after its expiry date" reads the same
-- dates as before.
CREATE OR REPLACE FUNCTION auth_codes_refuse_expired() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_expires timestamptz;
BEGIN
    IF TG_OP = 'INSERT' AND coalesce(current_setting('admitone.unbind', true), '') = 'on' THEN
        RETURN NEW;
    END IF;
    v_expires := code_expires_at(NEW.tenant_id, NEW.batch_id, NEW.expires_at);
    IF v_expires IS NOT NULL AND v_expires <= clock_timestamp() THEN
        RAISE EXCEPTION 'code_expired' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
    END IF;
    RETURN NEW;
END;
$$;
