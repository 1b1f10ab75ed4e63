-- A payment can be registered with only the merchant's reference (see the
-- PostgreSQL migration). SQLite cannot drop a NOT NULL constraint, so
-- `payments` and `poll_jobs` are rebuilt the way SQLite documents
-- (https://www.sqlite.org/lang_altertable.html, "other kinds of table schema
-- changes"). sqlx runs every SQLite migration inside a transaction, where
-- foreign keys cannot be switched off, and dropping `payments` with them on
-- would cascade into `poll_jobs`. So the children are rebuilt first,
-- pointing at `payments_new`: when the old `payments` is dropped nothing
-- references it, and renaming `payments_new` rewrites their references
-- (SQLite >= 3.26). `status_history` is copied for that reason alone.

CREATE TABLE payments_new (
    id            TEXT PRIMARY KEY NOT NULL,
    provider      TEXT    NOT NULL,
    provider_ref  TEXT,
    merchant_ref  TEXT,
    kind          TEXT    NOT NULL,
    amount        INTEGER NOT NULL CHECK (amount > 0),
    currency      TEXT    NOT NULL,
    metadata      TEXT    NOT NULL DEFAULT '{}',
    status        TEXT    NOT NULL,
    status_source TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    finalized_at  INTEGER,
    CHECK (provider_ref IS NOT NULL OR merchant_ref IS NOT NULL)
);
INSERT INTO payments_new (id, provider, provider_ref, kind, amount, currency, metadata,
                          status, status_source, created_at, updated_at, finalized_at)
    SELECT id, provider, provider_ref, kind, amount, currency, metadata,
           status, status_source, created_at, updated_at, finalized_at FROM payments;
CREATE TABLE poll_jobs_new (
    payment_id    TEXT PRIMARY KEY NOT NULL REFERENCES payments_new (id) ON DELETE CASCADE,
    provider      TEXT    NOT NULL,
    provider_ref  TEXT,
    merchant_ref  TEXT,
    kind          TEXT    NOT NULL,
    registered_at INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_poll_at  INTEGER,
    due_at        INTEGER,
    locked_by     TEXT,
    locked_until  INTEGER,
    lock_token    INTEGER,
    last_error    TEXT,
    errors        INTEGER NOT NULL DEFAULT 0
);
INSERT INTO poll_jobs_new (payment_id, provider, provider_ref, kind, registered_at, attempts,
                           next_poll_at, due_at, locked_by, locked_until, lock_token,
                           last_error, errors)
    SELECT payment_id, provider, provider_ref, kind, registered_at, attempts,
           next_poll_at, due_at, locked_by, locked_until, lock_token, last_error, errors
    FROM poll_jobs;
DROP TABLE poll_jobs;

CREATE TABLE status_history_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id  TEXT    NOT NULL REFERENCES payments_new (id),
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    event_id    TEXT,
    reason      TEXT,
    actor       TEXT,
    observed_at INTEGER NOT NULL,
    at          INTEGER NOT NULL
);
INSERT INTO status_history_new (id, payment_id, from_status, to_status, source, event_id,
                                reason, actor, observed_at, at)
    SELECT id, payment_id, from_status, to_status, source, event_id, reason, actor,
           observed_at, at FROM status_history;
DROP TABLE status_history;

DROP TABLE payments;
ALTER TABLE payments_new RENAME TO payments;
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, provider_ref);
CREATE UNIQUE INDEX payments_merchant_ref ON payments (provider, merchant_ref)
    WHERE merchant_ref IS NOT NULL;
CREATE INDEX payments_status_id ON payments (status, id);

ALTER TABLE poll_jobs_new RENAME TO poll_jobs;
CREATE INDEX poll_jobs_due ON poll_jobs (next_poll_at) WHERE next_poll_at IS NOT NULL;
ALTER TABLE status_history_new RENAME TO status_history;
CREATE INDEX status_history_payment ON status_history (payment_id, id);

ALTER TABLE webhook_inbox ADD COLUMN merchant_ref TEXT;
CREATE INDEX webhook_inbox_orphans_merchant ON webhook_inbox (provider, merchant_ref)
    WHERE state = 'orphaned' AND merchant_ref IS NOT NULL;
