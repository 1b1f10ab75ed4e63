-- PostgreSQL's 0017 makes the sequencer's one function call return the rows
-- it numbered (for the in-memory feed tail). SQLite's sequencer reads them
-- inside its own transaction (crates/finality-store feed.rs). Kept so both
-- backends' migrations are numbered alike.
SELECT 1;
