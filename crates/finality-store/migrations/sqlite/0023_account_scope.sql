-- Every fact has an owner (see the PostgreSQL migration). SQLite cannot
-- add NOT NULL or a default to an existing column; the trigger refuses a
-- payment whose account is NULL instead (finality writes '' for the
-- provider's own), so the unique indexes below hold.
UPDATE payments SET account = '' WHERE account IS NULL;
CREATE TRIGGER payments_account_not_null BEFORE INSERT ON payments
    WHEN NEW.account IS NULL
BEGIN
    SELECT RAISE(ABORT, 'payments.account must not be NULL (the provider''s own account is '''')');
END;
DROP INDEX payments_provider_ref;
CREATE UNIQUE INDEX payments_provider_ref ON payments (provider, account, provider_ref);
DROP INDEX payments_merchant_ref;
CREATE UNIQUE INDEX payments_merchant_ref ON payments (provider, account, merchant_ref)
    WHERE merchant_ref IS NOT NULL;

ALTER TABLE webhook_inbox ADD COLUMN account TEXT NOT NULL DEFAULT '';
CREATE INDEX webhook_inbox_parked ON webhook_inbox (provider, account)
    WHERE state = 'parked';

ALTER TABLE archived_payments ADD COLUMN account TEXT NOT NULL DEFAULT '';
