-- no-transaction
-- "The course waits for you" (20261215000001_orders_and_addressed_codes.sql):
-- a learner's unbound addressed codes, found by the verified address.
-- Built CONCURRENTLY (outside a transaction, hence the directive above):
-- a plain CREATE INDEX would hold every binding on `auth_codes` while it
-- read the whole table. A build that was interrupted leaves an invalid
-- index of this name behind, and running this again then fails on it
-- (no IF NOT EXISTS, which would record the migration over an invalid
-- index): drop it (`DROP INDEX CONCURRENTLY auth_codes_addressed`) and run
-- `server migrate` again (docs/operations/deploying.md).
CREATE INDEX CONCURRENTLY auth_codes_addressed ON auth_codes (addressed_to)
    WHERE addressed_to IS NOT NULL AND bound_principal IS NULL;
