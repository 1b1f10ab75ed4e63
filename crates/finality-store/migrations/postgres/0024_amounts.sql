-- Money counted in the provider's own pieces (docs/AMOUNTS.md): the
-- sub-objects a webhook names (a capture, a refund, an authorisation
-- attempt, a dispute; a JSON list, NULL when none) and those counted for
-- each payment (keyed by kind and the provider's id inside the list, so a
-- duplicate never counts twice). Kept as JSON text beside the row they
-- belong to: read and written under the payment's own lock, with no table
-- of their own to join, archive or keep in step.
ALTER TABLE webhook_inbox ADD COLUMN reported_pieces TEXT;
ALTER TABLE payments ADD COLUMN pieces TEXT;
