-- Imported codes (issue 17): codes a shop or an LMS already sold, brought in
-- as a batch of their own. They are stored like ours (only an HMAC digest
-- and a hint, `auth_codes_digest` keeps every code of the platform unique);
-- what differs is how they are read: any 4 to 64 letters and digits,
-- upper-cased, separators dropped (`codeformat::read`, the one reader of
-- both the import and the look-up).

-- 'issued': drawn here; 'imported': brought in from a file or the API.
ALTER TABLE code_batches
    ADD COLUMN source text NOT NULL DEFAULT 'issued' CHECK (source IN ('issued', 'imported')),
    -- The alphabet the creator declared for a foreign format (NULL: ours).
    ADD COLUMN alphabet text CHECK (alphabet ~ '^[A-Z0-9]{2,36}$'),
    -- What the import did, kept for the creator to come back to:
    -- {"lines", "imported", "rejected", "reasons": {reason: n},
    --  "first_rejected": [{"line", "reason"}] (at most 1,000)}.
    ADD COLUMN import_report jsonb,
    ADD CONSTRAINT code_batches_import_has_report
        CHECK ((source = 'imported') = (import_report IS NOT NULL));

-- Whether learners of this share may type a foreign code: set when the
-- first foreign code is imported into it. Shares without one keep the
-- strict reading, which names a typo in one of our codes before any
-- attempt counts.
ALTER TABLE shares ADD COLUMN foreign_codes boolean NOT NULL DEFAULT false;
