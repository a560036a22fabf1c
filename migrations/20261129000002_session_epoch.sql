-- Logout-all. Every session records the account's session_epoch when it was
-- signed in; "sign out everywhere" and a password change increment it, which
-- invalidates every session signed in before, atomically and durably (a
-- Redis failover cannot bring a revoked session back). Sessions check it on
-- every authenticated request, together with disabled_at.
ALTER TABLE accounts ADD COLUMN session_epoch bigint NOT NULL DEFAULT 0;
