-- Nothing to do on SQLite: PostgreSQL's 0004 tunes autovacuum for the hot
-- poll_jobs table. Kept so both backends number their migrations alike.
SELECT 1;
