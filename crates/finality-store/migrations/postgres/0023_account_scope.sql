-- Every fact has an owner (docs/ACCOUNTS.md, "Isolation"). A payment's
-- references are unique within its scope, (provider, account), not across
-- the provider's accounts: two merchants may both have an `order-1001`.
-- The provider's own account is stored as '' rather than NULL, so the
-- unique indexes and every `account = $n` lookup treat it as a value.
UPDATE payments SET account = '' WHERE account IS NULL;
ALTER TABLE payments ALTER COLUMN account SET DEFAULT '';
ALTER TABLE payments ALTER COLUMN account SET NOT NULL;
DROP INDEX payments_provider_ref;
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, account, provider_ref);
DROP INDEX payments_merchant_ref;
CREATE UNIQUE INDEX payments_merchant_ref ON payments (provider, account, merchant_ref)
    WHERE merchant_ref IS NOT NULL;

-- The account that named or verified each webhook ('' the provider's own):
-- it is matched only against payments of that account. A verified webhook
-- of an account not configured (or disabled) is kept `parked` until the
-- account is added.
ALTER TABLE webhook_inbox ADD COLUMN account TEXT NOT NULL DEFAULT '';
-- ... and deduplicated within it: two accounts' events may share an id.
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_provider_event_id_key;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_provider_event_id_key
    UNIQUE (provider, account, event_id);
CREATE INDEX webhook_inbox_parked ON webhook_inbox (provider, account)
    WHERE state = 'parked';

-- An archived payment's account: a late webhook finds its tombstone only
-- within its own account.
ALTER TABLE archived_payments ADD COLUMN account TEXT NOT NULL DEFAULT '';

-- Announced settlement reports per account: Adyen numbers each merchant
-- account's batches on their own, so two accounts' batch N are two files.
ALTER TABLE settlement_files ADD COLUMN account TEXT NOT NULL DEFAULT '';
ALTER TABLE settlement_files DROP CONSTRAINT settlement_files_pkey;
ALTER TABLE settlement_files ADD PRIMARY KEY (provider, account, name);
