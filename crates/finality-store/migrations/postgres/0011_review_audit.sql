-- Every manual action (a resolve, a poll asked for by hand, a console
-- sign-in) with who did it, from where and what came of it. Written in the
-- same transaction as a resolve's status change, so neither exists without
-- the other. Append-only: nothing in finality updates or deletes a row.
CREATE TABLE audit_log (
    id          BIGSERIAL PRIMARY KEY,
    at          BIGINT NOT NULL,
    actor       TEXT   NOT NULL,  -- the API token's name, never the caller's say-so
    role        TEXT   NOT NULL,
    action      TEXT   NOT NULL,  -- resolve | poll_now | sign_in | …
    payment_id  TEXT,
    detail      JSONB  NOT NULL,
    outcome     TEXT   NOT NULL,
    remote_addr TEXT
);
CREATE INDEX audit_log_payment ON audit_log (payment_id, id) WHERE payment_id IS NOT NULL;

-- A payment's page lists the webhooks received for it, by the provider's
-- reference. This index serves the orphan lookups too, so it replaces the
-- partial one: one index more on each insert, not two (measured: see
-- docs/PERFORMANCE.md). The few rows naming only a merchant reference have
-- a partial index of their own.
CREATE INDEX webhook_inbox_payment_ref ON webhook_inbox (provider, provider_ref);
DROP INDEX webhook_inbox_orphans;
CREATE INDEX webhook_inbox_merchant_only ON webhook_inbox (provider, merchant_ref)
    WHERE provider_ref IS NULL;
-- The console lists failed and orphaned rows, newest first; they are few.
CREATE INDEX webhook_inbox_trouble ON webhook_inbox (state, id)
    WHERE state IN ('failed', 'orphaned');
