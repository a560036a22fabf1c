-- Codes sent by mail (docs/design/orders.md#codes-sent-by-mail): a batch
-- issued `mailable` has codes derived from their ids (as an order's are),
-- so its unused codes can be mailed later, one to each address of a list;
-- `code_mailings` records who got which.
--
-- Invariants: an address gets at most one code of a batch (its primary
-- key: sending the same list again mails no one twice) and a code goes to
-- at most one address (`code_mailings_code`).
--
-- A column with a constant default and a new table: no rewrite, no scan;
-- the release before this one reads neither.
SET LOCAL lock_timeout = '2s';

-- The table first, its key on `auth_codes` declared first: the codes'
-- table is locked before the batches', as a settlement locks them (a
-- binding, then its batch's expiry read), so the two never deadlock.
CREATE TABLE code_mailings (
    tenant_id   uuid NOT NULL,
    batch_id    uuid NOT NULL,
    email       text NOT NULL
                CHECK (email = lower(btrim(email)) AND position('@' IN email) > 1
                       AND length(email) <= 254),
    code_id     uuid NOT NULL,
    -- The mail that carried the code (the mail outbox's row: its state is
    -- the recipient's "queued", "sent" or "failed").
    mail_id     uuid NOT NULL,
    created_by  uuid NOT NULL REFERENCES accounts (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, batch_id, email),
    FOREIGN KEY (tenant_id, code_id) REFERENCES auth_codes (tenant_id, id),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES code_batches (tenant_id, id)
);
CREATE UNIQUE INDEX code_mailings_code ON code_mailings (tenant_id, code_id);

ALTER TABLE code_batches ADD COLUMN mailable boolean NOT NULL DEFAULT false;
