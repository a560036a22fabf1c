-- Leak signal: other accounts trying a code that is already bound. Counted
-- in phase 1 (code entry), where nothing else is written; the console
-- shows the codes that keep being tried so the admin can act.
ALTER TABLE auth_codes
    ADD COLUMN foreign_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN last_foreign_attempt_at timestamptz;
CREATE INDEX auth_codes_tried_by_others ON auth_codes (tenant_id, last_foreign_attempt_at DESC)
    WHERE foreign_attempts > 0;
