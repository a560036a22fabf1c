-- Transfer requests: a learner who holds a code asks to move it to another
-- account they control. The target confirms from a link mailed to its
-- address (signed in with that address), then the tenant's admins approve
-- or refuse. Approval moves the binding in one transaction on the audited
-- unbind path (`admitone.unbind`, see auth_codes_keep_binding): the
-- trigger and the unique indexes stay as they are. See engine::transfers.
CREATE TABLE transfer_requests (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    share_id        uuid NOT NULL,
    code_id         uuid NOT NULL,
    -- The learner who held the code when asking.
    from_account    uuid NOT NULL REFERENCES accounts (id),
    -- The address the confirmation link went to (lower case, as accounts
    -- store it), and the account that confirmed with it.
    to_email        text NOT NULL CHECK (length(to_email) BETWEEN 3 AND 254),
    to_account      uuid REFERENCES accounts (id),
    -- The learner's own words for the admins (may be empty).
    note            text NOT NULL DEFAULT '' CHECK (length(note) <= 500),
    status          text NOT NULL CHECK (status IN
                        ('awaiting_target', 'awaiting_admin', 'approved', 'refused', 'cancelled')),
    -- The confirmation link's digest (the link itself is derived, never
    -- stored: engine::accounts::links) and how long it works.
    digest          bytea NOT NULL,
    link_expires_at timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    confirmed_at    timestamptz,
    decided_at      timestamptz,
    decided_by      uuid REFERENCES accounts (id),
    -- The admin's reason (required to refuse, optional to approve).
    decision_reason text CHECK (length(decision_reason) <= 500),
    -- Approved only: this was the code's `ordinal`-th transfer, under the
    -- per-code limit `code_limit` in force at the time.
    ordinal         smallint,
    code_limit      smallint,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id),
    FOREIGN KEY (tenant_id, code_id) REFERENCES auth_codes (tenant_id, id),
    CHECK (to_account IS DISTINCT FROM from_account),
    CHECK (status IN ('awaiting_target', 'cancelled') OR to_account IS NOT NULL),
    CHECK (status IN ('awaiting_target', 'awaiting_admin') = (decided_at IS NULL)),
    CHECK ((status = 'approved') = (ordinal IS NOT NULL AND code_limit IS NOT NULL)),
    -- Invariant: no code is moved more times than the limit said.
    CONSTRAINT transfer_requests_within_limit CHECK (ordinal IS NULL OR ordinal BETWEEN 1 AND code_limit)
);
CREATE UNIQUE INDEX transfer_requests_digest ON transfer_requests (digest);
-- A code has at most one open request.
CREATE UNIQUE INDEX transfer_requests_open ON transfer_requests (tenant_id, code_id)
    WHERE status IN ('awaiting_target', 'awaiting_admin');
-- Invariant: a code's approved transfers are numbered 1, 2, … once each.
CREATE UNIQUE INDEX transfer_requests_ordinal ON transfer_requests (tenant_id, code_id, ordinal)
    WHERE status = 'approved';
-- The console's list: a tenant's requests by status, newest first.
CREATE INDEX transfer_requests_by_status ON transfer_requests (tenant_id, status, created_at DESC);
-- The reconciler's look-up: a bound code's approved transfers to its learner.
CREATE INDEX transfer_requests_approved ON transfer_requests (tenant_id, code_id, to_account)
    WHERE status = 'approved';

-- The four mails of a transfer: the link to the target's address, the
-- approval to each account, the refusal (to both).
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_template_check,
    ADD CONSTRAINT mail_outbox_template_check CHECK (template IN (
        'verify_email', 'reset_password', 'password_changed', 'change_email',
        'email_change_requested', 'email_changed',
        'invitation', 'code_bound', 'code_unbound', 'code_revoked',
        'leak_suspected', 'code_replaced',
        'transfer_confirm', 'code_transferred_away', 'code_transferred_here', 'transfer_refused'
    ));

-- The webhook event of an approved transfer can be subscribed to.
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check,
    ADD CONSTRAINT webhook_endpoints_events_check CHECK (
        cardinality(events) >= 1
        AND events <@ ARRAY['code.bound', 'code.unbound', 'code.revoked', 'code.replaced',
                            'code.transferred', 'code.leak_suspected', 'access.recorded',
                            'batch.issued']
    );

-- The reconciler's look-up of the replacement that carried a binding
-- ("a binding is its learner's own, an approved transfer's or a
-- replacement's"): one index probe, not a walk of the tenant's audit log.
CREATE INDEX audit_log_replacements ON audit_log (tenant_id, (details->>'replacement'))
    WHERE action = 'code.replaced';
