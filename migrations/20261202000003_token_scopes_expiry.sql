-- API tokens for the whole public API: an `integrations` scope (webhooks and
-- tokens themselves, what a shop's setup script manages) and an optional
-- expiry after which the token is refused like a revoked one.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes_check
    CHECK (cardinality(scopes) >= 1 AND scopes <@ ARRAY['read', 'write', 'integrations']);
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_expiry_after_creation
    CHECK (expires_at IS NULL OR expires_at > created_at);
-- The token that made a token through the API (none: made in the console).
-- Revoking a token revokes every token it made, and theirs.
ALTER TABLE api_tokens ADD COLUMN parent_id uuid;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_parent_fkey
    FOREIGN KEY (tenant_id, parent_id) REFERENCES api_tokens (tenant_id, id);
CREATE INDEX api_tokens_by_parent ON api_tokens (tenant_id, parent_id) WHERE parent_id IS NOT NULL;
