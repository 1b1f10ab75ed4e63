-- The hot table churns: every claim and every reschedule writes a new row
-- version (next_poll_at is indexed, so the update cannot be HOT). With the
-- default trigger (20% of the table dead) a small table under heavy churn is
-- vacuumed only at autovacuum's next wake-up anyway, so the trigger is set
-- by count instead, and the vacuum is not throttled: it is a small table.
-- How often autovacuum wakes (autovacuum_naptime, 1 min by default) is a
-- server setting; docs/PERFORMANCE.md shows the table under churn.
ALTER TABLE poll_jobs SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.05
);
