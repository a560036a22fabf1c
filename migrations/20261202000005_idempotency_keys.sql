-- Idempotency-Key on the JSON API's creates: the claim of a key, so that a
-- retry never creates a second share, resource, token or webhook endpoint.
-- Only the request's digest and the created object's id are kept here; the
-- answer itself (it may carry a secret shown once) is held in Redis for 15
-- minutes. Rows older than a day are removed when their key is used again.
CREATE TABLE idempotency_keys (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    actor_id       uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- The caller's key, prefixed with which login sent it (an API token's
    -- id, or the session), so another login of the member never replays
    -- this one's answer.
    key            text NOT NULL CHECK (length(key) BETWEEN 1 AND 320),
    request_digest bytea NOT NULL,
    -- The attempt that holds the claim: only it completes or releases it.
    attempt        uuid NOT NULL,
    created_id     uuid,
    claimed_at     timestamptz NOT NULL DEFAULT now(),
    completed_at   timestamptz,
    PRIMARY KEY (tenant_id, actor_id, key),
    CHECK ((created_id IS NULL) = (completed_at IS NULL))
);
