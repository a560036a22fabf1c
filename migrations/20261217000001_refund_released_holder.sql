-- The learner a refund released: a refund that takes back a bound seat
-- unbinds the code as it revokes it (the buyer may buy again), and the
-- code keeps who held it here, for the order view (`former_holder`).
-- Written only by `engine::refunds`; NULL on every other code.
ALTER TABLE auth_codes ADD COLUMN released_from uuid REFERENCES accounts (id);
