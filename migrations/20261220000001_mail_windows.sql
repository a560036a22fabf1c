-- The mail relay's throttle (issue 41: "mail to thousands is throttled
-- per tenant and per SMTP server"): how many mails the relays handed to
-- the SMTP server in each window, one row per tenant and minute
-- (`kind` 'tenant') and one per second for the whole server (`kind`
-- 'server', `tenant_id` the nil uuid). `engine::mail::claim_due` leases
-- no more of a tenant's mails in a minute than `mail.tenant_per_minute`,
-- nor of everyone's in a second than `mail.smtp_per_second`, and counts
-- what it leased in the same statement; rows older than an hour are
-- deleted every minute (`engine::mail::limits::forget_windows`).
--
-- Rolling deploys: a new table only; the release before this one never
-- reads or writes it (its relays send unthrottled until they are
-- replaced). Locks: none on an existing table; the same 2 s
-- `lock_timeout` as the migrations before it.
SET LOCAL lock_timeout = '2s';

CREATE TABLE mail_windows (
    kind          text NOT NULL CHECK (kind IN ('tenant', 'server')),
    tenant_id     uuid NOT NULL,
    window_start  timestamptz NOT NULL,
    attempts      integer NOT NULL CHECK (attempts >= 0),
    -- Led by the tenant, as every tenant table's keys are (the server's
    -- rows are the nil tenant's).
    PRIMARY KEY (tenant_id, kind, window_start),
    CHECK ((kind = 'server') = (tenant_id = '00000000-0000-0000-0000-000000000000'))
);

CREATE INDEX mail_windows_age ON mail_windows (window_start);
