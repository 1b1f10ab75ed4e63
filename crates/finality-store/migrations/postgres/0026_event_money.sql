-- Events carry the money (docs/EVENTS.md, schema 3): each outbox row keeps
-- the payment's counted sub-objects as they were when the event was
-- written (`pieces`, a JSON list as in `payments.pieces`, NULL when none
-- was counted), so an event replayed a week later still says the counters
-- after its own transition, not today's. `flag` is the flag (JSON) a
-- `payment.flagged` or `payment.flag_resolved` event is about.
ALTER TABLE outbox ADD COLUMN pieces TEXT;
ALTER TABLE outbox ADD COLUMN flag TEXT;
