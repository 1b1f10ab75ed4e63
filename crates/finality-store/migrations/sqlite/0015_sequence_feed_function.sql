-- PostgreSQL's 0015 runs the feed sequencer's round as one function call.
-- SQLite has one writer in process and no round trips to save: its
-- sequencer runs the same statements in a transaction (crates/finality-store
-- feed.rs). Kept so both backends' migrations are numbered alike.
SELECT 1;
