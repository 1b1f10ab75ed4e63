-- Data lifecycle (docs/LIFECYCLE.md): what retention removes is archived
-- first, and what it removed leaves a trace.
--
-- A final payment archived and deleted keeps one small row here, so that
-- `GET /v1/payments/{id}` answers 410 with where it went (never a silent
-- 404) and a late webhook for it goes to review instead of waiting as an
-- orphan.
CREATE TABLE archived_payments (
    id           TEXT   PRIMARY KEY,
    provider     TEXT   NOT NULL,
    provider_ref TEXT,
    merchant_ref TEXT,
    status       TEXT   NOT NULL,
    finalized_at INTEGER NOT NULL,
    archived_at  INTEGER NOT NULL,
    archive      TEXT   NOT NULL  -- the file, relative to the archive directory
);
CREATE INDEX archived_payments_ref ON archived_payments (provider, provider_ref);
CREATE INDEX archived_payments_merchant_ref ON archived_payments (provider, merchant_ref);

-- Days brought back by `finality archive restore`, kept from retention
-- until `until` (otherwise the next run would archive them again).
CREATE TABLE archive_holds (
    kind  TEXT   NOT NULL,
    day   TEXT   NOT NULL,  -- YYYY-MM-DD, UTC
    until INTEGER NOT NULL,
    PRIMARY KEY (kind, day)
);

-- When a webhook's raw body and headers were dropped (archived first);
-- the row itself stays for deduplication as long as providers redeliver.
ALTER TABLE webhook_inbox ADD COLUMN body_dropped_at INTEGER;

-- Final payments in the order retention takes them. Partial: open
-- payments (the hot ones) are not in it.
CREATE INDEX IF NOT EXISTS payments_finalized ON payments (finalized_at, id) WHERE finalized_at IS NOT NULL;

-- Where retention's scan of webhook bodies has reached (the rows stay
-- after their bodies go, so the scan cannot start from the first row
-- each run); a restore moves it back.
CREATE TABLE lifecycle_cursors (
    kind     TEXT    PRIMARY KEY,
    after_id INTEGER NOT NULL
);
