-- Removing a resource keeps its row (access records point at it: no record
-- is ever lost); only its bytes go. Learners and admins see live rows only.
ALTER TABLE resources ADD COLUMN deleted_at timestamptz;
