-- no-transaction
-- "The course waits for you" (20261215000001_orders_and_addressed_codes.sql):
-- a learner's unbound addressed codes, found by the verified address.
-- Built CONCURRENTLY (outside a transaction, hence the directive above):
-- a plain CREATE INDEX would hold every binding on `auth_codes` while it
-- read the whole table. IF NOT EXISTS: a build that failed half way
-- leaves an invalid index behind, which `server migrate` cannot repair
-- by itself; docs/operations/deploying.md says to drop it and run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_codes_addressed ON auth_codes (addressed_to)
    WHERE addressed_to IS NOT NULL AND bound_principal IS NULL;
