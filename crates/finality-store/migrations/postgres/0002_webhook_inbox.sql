-- Webhooks in: every verified event, durable before the provider gets its 2xx.
-- "Insert if absent" is decided by the unique constraint, never by a read.
CREATE TABLE webhook_inbox (
    id              BIGSERIAL PRIMARY KEY,
    provider        TEXT    NOT NULL,
    event_id        TEXT    NOT NULL,
    provider_ref    TEXT,
    observed_status TEXT,            -- mapped; NULL when the provider status is unknown
    provider_status TEXT,
    occurred_at     BIGINT,
    raw_body        BYTEA   NOT NULL,
    headers         JSONB   NOT NULL DEFAULT '{}'::jsonb,
    received_at     BIGINT  NOT NULL,
    state           TEXT    NOT NULL, -- received | applied | ignored | orphaned | failed
    reason          TEXT,             -- why ignored, or the error of the last failure
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,           -- when received/failed rows are (re)processed
    processed_at    BIGINT,
    UNIQUE (provider, event_id)
);
CREATE INDEX webhook_inbox_due ON webhook_inbox (next_attempt_at)
    WHERE state IN ('received', 'failed');
CREATE INDEX webhook_inbox_orphans ON webhook_inbox (provider, provider_ref)
    WHERE state = 'orphaned';
