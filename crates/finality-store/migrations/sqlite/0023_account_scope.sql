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

ALTER TABLE webhook_inbox ADD COLUMN account TEXT NOT NULL DEFAULT '';
CREATE INDEX webhook_inbox_parked ON webhook_inbox (provider, account)
    WHERE state = 'parked';

ALTER TABLE archived_payments ADD COLUMN account TEXT NOT NULL DEFAULT '';
