-- The amount and currency a webhook event names, as the provider reported
-- them (minor units; NULL where it reports none): a final status is applied
-- only when they are the payment's registered amount and currency, and
-- otherwise goes to review with both values.
ALTER TABLE webhook_inbox ADD COLUMN reported_amount INTEGER;
ALTER TABLE webhook_inbox ADD COLUMN reported_currency TEXT;
