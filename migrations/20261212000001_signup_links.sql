-- Registration starts from an address alone. The form answers the same
-- way whether the address has an account or not ("we sent you a mail"),
-- and so does the mail's timing; what the mail says differs: a new
-- address gets a link to finish the account (name and password), an
-- address that has an account gets a note telling its owner so. No
-- account exists until the link comes back, so nobody can register
-- somebody else's address, and nobody learns from the form whether an
-- address is taken.
--
-- A signup link belongs to an address, not to an account (there is none
-- yet). Like `account_links`, only the digest of its secret is stored,
-- and it is used once by a conditional UPDATE; `next_path` is where the
-- person was going when they registered (a path on this site).
CREATE TABLE signup_links (
    id          uuid PRIMARY KEY,
    email       text NOT NULL CHECK (email = lower(btrim(email)) AND position('@' IN email) > 1),
    lang        text NOT NULL CHECK (lang IN ('en', 'zh-CN', 'zh-TW')),
    next_path   text CHECK (next_path IS NULL OR (left(next_path, 1) = '/' AND left(next_path, 2) <> '//')),
    digest      bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
-- Finishing one link closes the address's other open ones.
CREATE INDEX signup_links_open ON signup_links (email) WHERE used_at IS NULL;

-- The two mails a registration sends: the link to a new address, the note
-- to an address that has an account. NOT VALID: every row already there
-- passed the check this one replaces, whose words are all in it, so no
-- scan of the (never pruned) outbox under this migration's exclusive lock;
-- every row written from now on is checked.
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_template_check,
    ADD CONSTRAINT mail_outbox_template_check CHECK (template IN (
        'verify_email', 'reset_password', 'password_changed', 'change_email',
        'email_change_requested', 'email_changed',
        'invitation', 'code_bound', 'code_unbound', 'code_revoked',
        'leak_suspected', 'code_replaced',
        'transfer_confirm', 'code_transferred_away', 'code_transferred_here', 'transfer_refused',
        'sign_up', 'account_exists'
    )) NOT VALID;
