-- One token bucket per rate-limited provider (see the PostgreSQL migration;
-- on SQLite there is one node, but the same code path keeps one behaviour).
CREATE TABLE rate_buckets (
    provider   TEXT PRIMARY KEY,
    tokens     REAL NOT NULL,
    updated_at INTEGER NOT NULL
);
