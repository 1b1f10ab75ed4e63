-- Money counted in the provider's own pieces (see PostgreSQL 0024).
ALTER TABLE webhook_inbox ADD COLUMN reported_pieces TEXT;
ALTER TABLE payments ADD COLUMN pieces TEXT;
