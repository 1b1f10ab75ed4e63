-- finality schema, SQLite (the embedded default, WAL). Same shape as the
-- PostgreSQL schema; timestamps are INTEGER milliseconds from the Clock.

CREATE TABLE payments (
    id            TEXT PRIMARY KEY NOT NULL,
    provider      TEXT    NOT NULL,
    provider_ref  TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    amount        INTEGER NOT NULL CHECK (amount > 0),
    currency      TEXT    NOT NULL,
    metadata      TEXT    NOT NULL DEFAULT '{}',
    status        TEXT    NOT NULL,
    status_source TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    finalized_at  INTEGER
);
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, provider_ref);
CREATE INDEX payments_status_id ON payments (status, id);

CREATE TABLE poll_jobs (
    payment_id    TEXT PRIMARY KEY NOT NULL REFERENCES payments (id) ON DELETE CASCADE,
    provider      TEXT    NOT NULL,
    provider_ref  TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    registered_at INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_poll_at  INTEGER,
    due_at        INTEGER,
    locked_by     TEXT,
    locked_until  INTEGER,
    lock_token    INTEGER,
    last_error    TEXT
);
CREATE INDEX poll_jobs_due ON poll_jobs (next_poll_at) WHERE next_poll_at IS NOT NULL;

CREATE TABLE status_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id  TEXT    NOT NULL REFERENCES payments (id),
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    event_id    TEXT,
    reason      TEXT,
    actor       TEXT,
    observed_at INTEGER NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX status_history_payment ON status_history (payment_id, id);

CREATE TABLE poll_attempts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id      TEXT    NOT NULL,
    provider        TEXT    NOT NULL,
    worker          TEXT    NOT NULL,
    started_at      INTEGER NOT NULL,
    latency_ms      INTEGER NOT NULL,
    outcome         TEXT    NOT NULL,
    provider_status TEXT,
    error_class     TEXT,
    error           TEXT
);
CREATE INDEX poll_attempts_payment ON poll_attempts (payment_id, id);

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id        TEXT    NOT NULL UNIQUE,
    payment_id      TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    previous_status TEXT,
    source          TEXT    NOT NULL,
    occurred_at     INTEGER NOT NULL
);
CREATE INDEX outbox_payment ON outbox (payment_id, id);
