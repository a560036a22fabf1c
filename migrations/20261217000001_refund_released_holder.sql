-- The learner a refund released: a refund that takes back a bound seat
-- unbinds the code as it revokes it (the buyer may buy again), and the
-- code keeps who held it here, for the order view (`former_holder`).
-- Written only by a refund (`engine::refunds`) and by an unbind of a
-- refunded order's code during its grace (`code_actions::unbind_in`);
-- NULL on every other code.
--
-- Rolling deploys: the release before this one names no such column; a
-- refund it makes meanwhile leaves `released_from` NULL (the audit log's
-- `code.unbound` row still says who held the code). Locks: `auth_codes`
-- for an instant (a nullable column with no default: no rewrite; the
-- foreign key has no row to check), then `accounts` for as long; the same
-- 2 s `lock_timeout` as the migrations before it, so that code entry never
-- queues behind it: if it times out, run `server migrate` again.
SET LOCAL lock_timeout = '2s';

ALTER TABLE auth_codes ADD COLUMN released_from uuid REFERENCES accounts (id);
