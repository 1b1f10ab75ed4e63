-- An early look (a poll brought forward by a webhook that failed its
-- signature check) never spends an attempt: `resume_at` holds the time the
-- job was due by its schedule while the early look is pending (NULL when
-- none is), and the look's completion puts the job back there uncounted.
-- `early_looks` bounds how many a payment gets in its life.
ALTER TABLE poll_jobs ADD COLUMN resume_at BIGINT;
ALTER TABLE poll_jobs ADD COLUMN early_looks INTEGER NOT NULL DEFAULT 0;
