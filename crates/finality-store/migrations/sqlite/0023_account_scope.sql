-- Every fact has an owner (see the PostgreSQL migration). SQLite cannot
-- add NOT NULL or a default to an existing column; the trigger gives a
-- payment inserted without an account (a hand-written INSERT) the
-- provider's own, '' (finality writes '' itself), so the unique indexes
-- below hold: the UPDATE it makes is checked against them, and a clash
-- fails the INSERT.
UPDATE payments SET account = '' WHERE account IS NULL;
CREATE TRIGGER payments_account_own AFTER INSERT ON payments
    WHEN NEW.account IS NULL
BEGIN
    UPDATE payments SET account = '' WHERE rowid = NEW.rowid;
END;
DROP INDEX payments_provider_ref;
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, account, provider_ref);
DROP INDEX payments_merchant_ref;
CREATE UNIQUE INDEX payments_merchant_ref ON payments (provider, account, merchant_ref)
    WHERE merchant_ref IS NOT NULL;

-- A webhook's account is part of its identity: deduplicated by
-- (provider, account, event_id). SQLite cannot change a table's UNIQUE
-- constraint, so the inbox is rebuilt the way SQLite documents
-- (https://www.sqlite.org/lang_altertable.html, "other kinds of table
-- schema changes"); no table references it. Its AUTOINCREMENT position is
-- carried over, so no id of a row retention deleted is given again.
CREATE TABLE webhook_inbox_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    provider          TEXT    NOT NULL,
    event_id          TEXT    NOT NULL,
    provider_ref      TEXT,
    observed_status   TEXT,
    provider_status   TEXT,
    occurred_at       INTEGER,
    raw_body          BLOB    NOT NULL,
    headers           TEXT    NOT NULL DEFAULT '{}',
    received_at       INTEGER NOT NULL,
    state             TEXT    NOT NULL,
    reason            TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   INTEGER,
    processed_at      INTEGER,
    merchant_ref      TEXT,
    source            TEXT    NOT NULL DEFAULT 'webhook',
    body_dropped_at   INTEGER,
    reported_amount   INTEGER,
    reported_currency TEXT,
    account           TEXT    NOT NULL DEFAULT '',
    UNIQUE (provider, account, event_id)
);
INSERT INTO webhook_inbox_new (id, provider, event_id, provider_ref, observed_status,
    provider_status, occurred_at, raw_body, headers, received_at, state, reason, attempts,
    next_attempt_at, processed_at, merchant_ref, source, body_dropped_at, reported_amount,
    reported_currency)
    SELECT id, provider, event_id, provider_ref, observed_status, provider_status,
           occurred_at, raw_body, headers, received_at, state, reason, attempts,
           next_attempt_at, processed_at, merchant_ref, source, body_dropped_at,
           reported_amount, reported_currency FROM webhook_inbox;
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'webhook_inbox_new', seq FROM sqlite_sequence WHERE name = 'webhook_inbox'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'webhook_inbox_new');
UPDATE sqlite_sequence SET seq = MAX(COALESCE(seq, 0), COALESCE((SELECT seq
    FROM sqlite_sequence WHERE name = 'webhook_inbox'), 0)) WHERE name = 'webhook_inbox_new';
DROP TABLE webhook_inbox;
ALTER TABLE webhook_inbox_new RENAME TO webhook_inbox;
CREATE INDEX webhook_inbox_due ON webhook_inbox (next_attempt_at)
    WHERE state IN ('received', 'failed');
CREATE INDEX webhook_inbox_orphans_merchant ON webhook_inbox (provider, merchant_ref)
    WHERE state = 'orphaned' AND merchant_ref IS NOT NULL;
CREATE INDEX webhook_inbox_payment_ref ON webhook_inbox (provider, provider_ref);
CREATE INDEX webhook_inbox_merchant_only ON webhook_inbox (provider, merchant_ref)
    WHERE provider_ref IS NULL;
CREATE INDEX webhook_inbox_trouble ON webhook_inbox (state, id)
    WHERE state IN ('failed', 'orphaned');
CREATE INDEX webhook_inbox_parked ON webhook_inbox (provider, account)
    WHERE state = 'parked';

ALTER TABLE archived_payments ADD COLUMN account TEXT NOT NULL DEFAULT '';

-- Announced settlement reports per account (see PostgreSQL 0023): a new
-- primary key, so the (small) table is rebuilt.
CREATE TABLE settlement_files_new (
    provider     TEXT   NOT NULL,
    account      TEXT   NOT NULL DEFAULT '',
    name         TEXT   NOT NULL,
    url          TEXT   NOT NULL,
    announced_at BIGINT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      BIGINT NOT NULL,
    outcome      TEXT,
    detail       TEXT,
    run_id       BIGINT,
    done_at      BIGINT,
    PRIMARY KEY (provider, account, name)
);
INSERT INTO settlement_files_new (provider, name, url, announced_at, attempts, next_at,
    outcome, detail, run_id, done_at)
    SELECT provider, name, url, announced_at, attempts, next_at, outcome, detail, run_id,
           done_at FROM settlement_files;
DROP TABLE settlement_files;
ALTER TABLE settlement_files_new RENAME TO settlement_files;
CREATE INDEX settlement_files_due ON settlement_files (provider, next_at)
    WHERE outcome IS NULL;
