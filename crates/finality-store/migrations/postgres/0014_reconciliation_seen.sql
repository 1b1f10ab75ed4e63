-- The payments a report being imported listed, so that those it should
-- have listed and did not (final here within the report's period) are
-- found by one anti-join instead of a set held in memory. Scratch data:
-- a run's rows are deleted when it finishes, and an import that dies is
-- done again from the start, so the table is UNLOGGED (no WAL; emptied
-- after a crash, which loses nothing).
CREATE UNLOGGED TABLE reconciliation_seen (
    run_id     BIGINT NOT NULL,
    payment_id TEXT   NOT NULL,
    PRIMARY KEY (run_id, payment_id)
);

-- When an import last showed it was alive (after each stretch of lines): a
-- second import of the same report while the first is alive is refused
-- instead of both writing one run; one silent for ten minutes died and is
-- done again.
ALTER TABLE reconciliation_runs ADD COLUMN alive_at BIGINT;
