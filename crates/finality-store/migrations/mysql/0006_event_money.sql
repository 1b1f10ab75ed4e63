-- Events carry the money (see PostgreSQL 0026).
ALTER TABLE outbox ADD COLUMN pieces TEXT;
ALTER TABLE outbox ADD COLUMN flag TEXT;
