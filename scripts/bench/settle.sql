-- pgbench (-M prepared): the app's settlement, as the app calls it: one
-- call of `settle_access` (server/engine/src/settlement/settle_access.sql),
-- the very function `server/engine/src/settlement/transaction.rs` calls, so
-- the raw figure and the app's cannot drift apart. A first access (bind +
-- record) for a random pre-made (code, account) pair; a pair drawn twice is
-- a returning learner. `pairs` chooses the share layout (prepare.sql):
-- `layout` 'one' (every code in one share) or 'many' (100 shares). The
-- last argument is the session epoch the app passes: prepare.sql's
-- accounts were never signed out, so theirs is 0.
\set n random(1, :pairs)
SELECT code_id AS code, account_id AS acct, share_id AS share, resource_id AS resource
  FROM bench_pairs WHERE layout = :layout AND n = :n \gset
SELECT outcome FROM settle_access(:tenant, :share, :acct, :resource, md5(random()::text),
                                  :code, true, 21600, gen_random_uuid(), gen_random_uuid(),
                                  gen_random_uuid(), gen_random_uuid(), 4000, NULL,
                                  0);
