-- Accounts a person can rely on, and teams: verified addresses, single-use
-- links (verification, password reset, change of address), the mail
-- outbox, roles per tenant, invitations, and what a tenant decides about
-- its learners.

-- An address is verified when a link sent to it came back. Accounts the
-- operator made admins were vouched for by the operator.
ALTER TABLE accounts
    ADD COLUMN email_verified_at timestamptz,
    -- The language notices to this account are written in (the one of its
    -- last sign-in); mails a request asks for use the request's language.
    ADD COLUMN lang text NOT NULL DEFAULT 'en' CHECK (lang IN ('en', 'zh-CN'));
UPDATE accounts SET email_verified_at = created_at
 WHERE id IN (SELECT account_id FROM tenant_members);

-- Roles: owner (team, settings, tokens, webhooks, and all an admin does),
-- admin (shares, codes, learners), support (reads the console). One role
-- per member; the operator's admins become owners (they had every power).
ALTER TABLE tenant_members DROP CONSTRAINT tenant_members_role_check;
ALTER TABLE tenant_members DROP CONSTRAINT tenant_members_pkey;
UPDATE tenant_members SET role = 'owner';
ALTER TABLE tenant_members
    ADD CONSTRAINT tenant_members_role_check CHECK (role IN ('owner', 'admin', 'support')),
    ADD PRIMARY KEY (tenant_id, account_id);

-- A tenant always has an owner. A demotion or removal that would leave
-- none fails. The trigger locks the tenant's row before it counts, so two
-- owners demoting each other at once run one after the other and the
-- second sees the first's change (each statement of a plpgsql function
-- reads a fresh snapshot): concurrency cannot leave a tenant ownerless.
CREATE FUNCTION tenant_members_keep_an_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.role = 'owner' AND (TG_OP = 'DELETE' OR NEW.role <> 'owner') THEN
        -- NO KEY UPDATE: serialises team changes without blocking the
        -- rows that reference the tenant (a binding's receipt, a share).
        PERFORM 1 FROM tenants WHERE id = OLD.tenant_id FOR NO KEY UPDATE;
        -- Not FOUND: the tenant itself is being deleted (cascade).
        IF FOUND AND NOT EXISTS (
            SELECT 1 FROM tenant_members WHERE tenant_id = OLD.tenant_id AND role = 'owner'
        ) THEN
            RAISE EXCEPTION 'tenant % would have no owner', OLD.tenant_id
                USING ERRCODE = 'check_violation', CONSTRAINT = 'tenant_keeps_an_owner';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER tenant_members_keep_an_owner
    AFTER UPDATE OR DELETE ON tenant_members
    FOR EACH ROW EXECUTE FUNCTION tenant_members_keep_an_owner();

-- A tenant's own rules. A code binds only to a verified account unless the
-- tenant turns that off (its learners' addresses come from elsewhere).
ALTER TABLE tenants
    ADD COLUMN require_verified_email boolean NOT NULL DEFAULT true;

-- Single-use links mailed to an account. The link's secret is derived from
-- the row's id with a server key when the mail is written out (so neither
-- this table nor the mail outbox holds a usable link); only its SHA-256
-- digest is stored, to find the row when the link comes back. A link is
-- used by a conditional UPDATE (`used_at IS NULL AND expires_at > now()`),
-- so it works once.
CREATE TABLE account_links (
    id          uuid PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    purpose     text NOT NULL CHECK (purpose IN ('verify_email', 'reset_password', 'change_email')),
    -- Where the link was sent: verification holds only while the account
    -- still has this address; a change of address moves the account to it.
    email       text NOT NULL CHECK (email = lower(btrim(email)) AND position('@' IN email) > 1),
    digest      bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX account_links_open ON account_links (account_id, purpose) WHERE used_at IS NULL;

-- Invitations to a tenant's team: single-use, for one address and one
-- role, accepted only by a signed-in account with that address (the link
-- proves the address; accepting verifies it). A newer invitation to the
-- same address replaces the open one.
CREATE TABLE tenant_invitations (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    email        text NOT NULL CHECK (email = lower(btrim(email)) AND position('@' IN email) > 1),
    role         text NOT NULL CHECK (role IN ('owner', 'admin', 'support')),
    digest       bytea NOT NULL UNIQUE,
    invited_by   uuid NOT NULL REFERENCES accounts (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz,
    accepted_by  uuid REFERENCES accounts (id),
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX tenant_invitations_open ON tenant_invitations (tenant_id, email)
    WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- Learners a tenant has suspended: refused every course of that tenant
-- (the settlement transaction checks), nothing elsewhere. Accounts are
-- platform-wide, so one tenant never disables an account for the others.
CREATE TABLE suspended_learners (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id    uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    suspended_by  uuid NOT NULL REFERENCES accounts (id),
    suspended_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id)
);

-- The mail outbox: one row per mail, written in the same transaction as
-- what it reports (a registration, a reset, a binding), delivered by the
-- mail relay with leases, retries and dead letters, like webhook
-- deliveries. The text is written out at delivery, in `lang`, from
-- `template` and `params`.
CREATE TABLE mail_outbox (
    id               uuid PRIMARY KEY,
    tenant_id        uuid REFERENCES tenants (id) ON DELETE CASCADE,
    account_id       uuid REFERENCES accounts (id) ON DELETE SET NULL,
    template         text NOT NULL CHECK (template IN (
        'verify_email', 'reset_password', 'password_changed', 'change_email',
        'email_change_requested', 'email_changed',
        'invitation', 'code_bound', 'code_unbound', 'code_revoked'
    )),
    to_address       text NOT NULL CHECK (position('@' IN to_address) > 1 AND length(to_address) <= 254),
    lang             text NOT NULL CHECK (lang IN ('en', 'zh-CN')),
    params           jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- The single-use link the mail carries (an account link or an
    -- invitation), derived again at delivery.
    link_id          uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    -- Due time; a claimed mail is pushed into the future by its lease.
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz,
    dead_at          timestamptz,
    last_error       text
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND dead_at IS NULL;
CREATE INDEX mail_outbox_dead ON mail_outbox (dead_at) WHERE dead_at IS NOT NULL;
CREATE INDEX mail_outbox_account ON mail_outbox (account_id, created_at DESC);

-- Development only: where mail goes when no SMTP server is configured
-- (`make run`), shown at /dev/mailbox. Production refuses to use it.
CREATE TABLE dev_mailbox (
    id            uuid PRIMARY KEY,
    mail_id       uuid NOT NULL,
    to_address    text NOT NULL,
    subject       text NOT NULL,
    text_body     text NOT NULL,
    html_body     text NOT NULL,
    delivered_at  timestamptz NOT NULL DEFAULT now()
);
