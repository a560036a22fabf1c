-- From a sale to a seat (docs/design/orders.md): codes addressed to one
-- person, codes derived from their ids, and the shops' orders that issue
-- them.
--
-- An **addressed code** binds only to an account whose verified address
-- is the code's `addressed_to`. Like an expiry date, that is decided where
-- every binding is written, by a trigger on `auth_codes`, so no path can
-- forget it: the settlement's compare-and-set raises the refusal
-- (SQLSTATE AOREF, as `auth_codes_refuse_expired` does) and nothing
-- stays. Every first binding is checked, an admin's unbind followed by a
-- new binding included; only an approved transfer, which moves a binding
-- from one account to another on the audited path, is the creator's
-- decision and is not.
--
-- A **derived code** (an order's, a mailable batch's) is computed from
-- the server's code key, its id and its own random `salt`, so the mail
-- relay can write it into a mail from the row (no row holds a usable
-- code), and neither the key alone nor the database alone gives it away.
--
-- An **order** is a shop's sale recorded once per `(tenant, source,
-- order_ref)`: a replay of the same order finds this row and answers
-- what the first call did, whoever races whom (the unique key decides).
--
-- Rolling deploys: the release before this one reads none of the new
-- columns and tables, but it cannot read a `codes_sent` mail (its relay
-- fails the round that leased one) nor the refusal
-- `code_addressed_elsewhere` (a 500). Place no order and send no codes by
-- mail until every instance runs this release (docs/operations/deploying.md).
--
-- Locks: each statement takes its table's lock for an instant and scans
-- nothing (the checks are NOT VALID: the columns are new, all NULL; they
-- hold for every row written from now on), waiting at most 2 s for it
-- rather than queue code entry behind a long reader (`server migrate`
-- again later). `auth_codes` comes first, as in a settlement (the code,
-- then the mail outbox): taking them in the other order could deadlock
-- with one, and abort a learner's first access.
SET LOCAL lock_timeout = '2s';

-- Invariant: an addressed code is first bound only to the verified
-- account of its address. Two refusals, worded as the settlement answers
-- them: another account (`code_addressed_elsewhere`: names neither the
-- address nor anyone), or the right address not verified yet
-- (`email_not_verified`: even where the tenant lets unverified accounts
-- bind, since only a verified address proves who holds it). The address
-- a binding is checked against is the one the code had before the
-- statement (a statement that clears the address and binds at once is
-- refused); unlike an expiry date, the audited unbind path gets no
-- exemption when it inserts a bound code.
CREATE FUNCTION auth_codes_refuse_other_addressee() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_address text := NEW.addressed_to;
    v_account record;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        v_address := coalesce(OLD.addressed_to, NEW.addressed_to);
    END IF;
    SELECT a.email, a.email_verified_at IS NOT NULL AS verified INTO v_account
      FROM accounts a WHERE a.id = NEW.bound_principal;
    IF NOT FOUND OR v_account.email <> v_address THEN
        RAISE EXCEPTION 'code_addressed_elsewhere' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
    ELSIF NOT v_account.verified THEN
        RAISE EXCEPTION 'email_not_verified' USING ERRCODE = 'AOREF', DETAIL = 'tried_bind';
    END IF;
    RETURN NEW;
END;
$$;

ALTER TABLE auth_codes ADD COLUMN addressed_to text,
    ADD COLUMN salt bytea,
    ADD CONSTRAINT auth_codes_addressed_to_check
        CHECK (addressed_to = lower(btrim(addressed_to))
               AND position('@' IN addressed_to) > 1
               AND length(addressed_to) <= 254) NOT VALID,
    ADD CONSTRAINT auth_codes_salt_check CHECK (length(salt) = 16) NOT VALID;
CREATE TRIGGER auth_codes_refuse_other_addressee
    BEFORE UPDATE OF bound_principal ON auth_codes
    FOR EACH ROW
    WHEN (OLD.bound_principal IS NULL AND NEW.bound_principal IS NOT NULL
          AND coalesce(OLD.addressed_to, NEW.addressed_to) IS NOT NULL)
    EXECUTE FUNCTION auth_codes_refuse_other_addressee();
CREATE TRIGGER auth_codes_refuse_other_addressee_insert
    BEFORE INSERT ON auth_codes
    FOR EACH ROW
    WHEN (NEW.bound_principal IS NOT NULL AND NEW.addressed_to IS NOT NULL)
    EXECUTE FUNCTION auth_codes_refuse_other_addressee();

CREATE TABLE orders (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    -- Which shop (`stripe`, `gumroad`, or the integrator's own word) and
    -- its order id there.
    source       text NOT NULL CHECK (source ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
    order_ref    text NOT NULL CHECK (length(order_ref) BETWEEN 1 AND 200),
    share_id     uuid NOT NULL,
    batch_id     uuid NOT NULL,
    buyer_email  text NOT NULL
                 CHECK (buyer_email = lower(btrim(buyer_email))
                        AND position('@' IN buyer_email) > 1 AND length(buyer_email) <= 254),
    quantity     integer NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    addressed    boolean NOT NULL,
    -- The mail that carried the codes (NULL: the caller hands them over).
    mail_id      uuid,
    -- The mail's language as the caller asked (NULL: the buyer's
    -- account's, else English, decided in the mail's row and never
    -- answered to the caller: it would tell who has an account).
    lang         text CHECK (lang IN ('en', 'zh-CN', 'zh-TW')),
    created_by   uuid NOT NULL REFERENCES accounts (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    -- Invariant: one order of a shop is issued once.
    UNIQUE (tenant_id, source, order_ref),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES code_batches (tenant_id, id)
);

-- The mail that carries an order's codes. NOT VALID, as in
-- 20261212000001_signup_links.sql: every row already there passed the
-- check this one replaces.
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_template_check,
    ADD CONSTRAINT mail_outbox_template_check CHECK (template IN (
        'verify_email', 'reset_password', 'password_changed', 'change_email',
        'email_change_requested', 'email_changed',
        'invitation', 'code_bound', 'code_unbound', 'code_revoked',
        'leak_suspected', 'code_replaced',
        'transfer_confirm', 'code_transferred_away', 'code_transferred_here', 'transfer_refused',
        'sign_up', 'account_exists', 'codes_sent'
    )) NOT VALID;
