-- Status queries that failed in a row without an answer (timeouts, 5xx,
-- refused connections). They say nothing about the payment, so they do not
-- spend its attempts; an answer resets them.
ALTER TABLE poll_jobs ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
