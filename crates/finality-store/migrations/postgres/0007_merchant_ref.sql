-- A payment can be registered with only the merchant's reference (the
-- provider's create call timed out before it answered with its id). The
-- provider's id is then found by the adapter, or by a webhook that names
-- both, and recorded; until then `provider_ref` is NULL. At least one of the
-- two is always known.
ALTER TABLE payments ALTER COLUMN provider_ref DROP NOT NULL;
ALTER TABLE payments ADD COLUMN merchant_ref TEXT;
-- NOT VALID: every existing row has a provider_ref (the column was NOT
-- NULL), so scanning them under this migration's lock would prove nothing;
-- new and updated rows are checked all the same.
ALTER TABLE payments ADD CONSTRAINT payments_some_ref
    CHECK (provider_ref IS NOT NULL OR merchant_ref IS NOT NULL) NOT VALID;
CREATE UNIQUE INDEX payments_merchant_ref ON payments (provider, merchant_ref)
    WHERE merchant_ref IS NOT NULL;

ALTER TABLE poll_jobs ALTER COLUMN provider_ref DROP NOT NULL;
ALTER TABLE poll_jobs ADD COLUMN merchant_ref TEXT;

-- Webhooks name the merchant's reference too where the provider sends it,
-- so an event can find a payment registered by it alone.
ALTER TABLE webhook_inbox ADD COLUMN merchant_ref TEXT;
CREATE INDEX webhook_inbox_orphans_merchant ON webhook_inbox (provider, merchant_ref)
    WHERE state = 'orphaned' AND merchant_ref IS NOT NULL;
