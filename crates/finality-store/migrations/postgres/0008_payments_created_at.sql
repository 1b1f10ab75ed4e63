-- Statistics (`finality stats`, `GET /v1/stats/providers`) read the payments
-- registered in a window; without this index that is a scan of every
-- payment ever registered. One more index entry per registration, none per
-- poll.
CREATE INDEX payments_created_at ON payments (created_at);
