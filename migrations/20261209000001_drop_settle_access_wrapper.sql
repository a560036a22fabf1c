-- The 14-argument form of `settle_access` (without the session's epoch)
-- served the instances of the release before the session check during a
-- rolling deploy. No running release calls it any more, and the next
-- migration changes the columns the 15-argument form returns, which the
-- wrapper's `SELECT *` would no longer match: it goes.
DROP FUNCTION IF EXISTS settle_access(uuid, uuid, uuid, uuid, text, uuid, boolean, double precision,
                                      uuid, uuid, uuid, uuid, integer, text);
