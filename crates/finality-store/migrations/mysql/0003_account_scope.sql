-- Every fact has an owner (see the PostgreSQL migration 0023).
UPDATE payments SET account = '' WHERE account IS NULL;
ALTER TABLE payments
    MODIFY account VARCHAR(255) NOT NULL DEFAULT '',
    DROP INDEX payments_provider_ref,
    ADD UNIQUE INDEX payments_provider_ref (provider, account, provider_ref),
    DROP INDEX payments_merchant_ref,
    ADD UNIQUE INDEX payments_merchant_ref (provider, account, merchant_ref);

-- PostgreSQL: a partial index WHERE state = 'parked'; here on the state.
-- Deduplicated within the account: two accounts' events may share an id.
ALTER TABLE webhook_inbox
    ADD COLUMN account VARCHAR(255) NOT NULL DEFAULT '',
    ADD INDEX webhook_inbox_parked (state, provider, account),
    DROP INDEX webhook_inbox_provider_event_id_key,
    ADD CONSTRAINT webhook_inbox_provider_event_id_key UNIQUE (provider, account, event_id);

ALTER TABLE archived_payments ADD COLUMN account VARCHAR(255) NOT NULL DEFAULT '';

-- Announced settlement reports per account (see PostgreSQL 0023).
ALTER TABLE settlement_files
    ADD COLUMN account VARCHAR(255) NOT NULL DEFAULT '',
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (provider, account, name);
