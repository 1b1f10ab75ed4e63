-- The payments a report being imported listed, so that those it should
-- have listed and did not (final here within the report's period) are
-- found by one anti-join instead of a set held in memory. A run's rows are
-- deleted when it finishes.
CREATE TABLE reconciliation_seen (
    run_id     INTEGER NOT NULL,
    payment_id TEXT    NOT NULL,
    PRIMARY KEY (run_id, payment_id)
) WITHOUT ROWID;

-- When an import last showed it was alive (after each stretch of lines): a
-- second import of the same report while the first is alive is refused
-- instead of both writing one run; one silent for ten minutes died and is
-- done again.
ALTER TABLE reconciliation_runs ADD COLUMN alive_at BIGINT;
