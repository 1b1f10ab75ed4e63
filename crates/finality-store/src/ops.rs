//! The store implementation shared by both backends.
//!
//! sqlx types every query by its database, so one generic body would need a
//! wall of trait bounds per bound value; a macro instantiated once per
//! backend keeps a single copy of the SQL and the logic instead. Every
//! statement here is valid on PostgreSQL and SQLite alike (`$N` parameters,
//! `ON CONFLICT DO NOTHING`, `RETURNING`); the few that differ are passed in.

/// Generates the shared functions and the `Store` impl inside a backend
/// module. The backend provides `$store` with fields `pool` and `wake` and a
/// method `begin_write()` that starts a transaction holding the write lock
/// the backend needs.
macro_rules! sql_store {
    (
        db = $db:ty,
        conn = $conn:ty,
        row = $row:ty,
        store = $store:ty,
        lock_payment = $lock_payment:expr,
        lock_job = $lock_job:expr,
        claim = $claim:expr,
        lock_inbox = $lock_inbox:expr,
        inbox_claim = $inbox_claim:expr,
        lock_feed = $lock_feed:expr,
        notify = $notify:expr,
        complete_batch = $complete_batch:path,
        writers = $writers:expr,
        lock_bucket = $lock_bucket:expr,
    ) => {
        use $crate::error::{DbContext, Result};
        use $crate::model::*;
        use finality_core::{contradicts_success, decide, Decision, Kind, Source, Status, Timestamp};
        use sqlx::Row;

        const PAYMENT_COLUMNS: &str = "id, provider, provider_ref, merchant_ref, kind, amount, currency, metadata, \
             status, status_source, created_at, updated_at, finalized_at";

        fn corrupt(table: &'static str, detail: impl ToString) -> $crate::StoreError {
            $crate::StoreError::Corrupt {
                table,
                detail: detail.to_string(),
            }
        }

        fn col<'r, T>(row: &'r $row, name: &'static str, table: &'static str) -> Result<T>
        where
            T: sqlx::Decode<'r, $db> + sqlx::Type<$db>,
        {
            row.try_get::<T, _>(name).map_err(|e| corrupt(table, e))
        }

        fn parse<T: std::str::FromStr>(v: &str, table: &'static str) -> Result<T>
        where
            T::Err: std::fmt::Display,
        {
            v.parse::<T>().map_err(|e| corrupt(table, e))
        }

        fn payment_from_row(r: &$row) -> Result<Payment> {
            let t = "payments";
            let source: Option<String> = col(r, "status_source", t)?;
            let metadata: sqlx::types::Json<serde_json::Value> = col(r, "metadata", t)?;
            Ok(Payment {
                id: col(r, "id", t)?,
                provider: col(r, "provider", t)?,
                provider_ref: col(r, "provider_ref", t)?,
                merchant_ref: col(r, "merchant_ref", t)?,
                kind: parse(&col::<String>(r, "kind", t)?, t)?,
                amount: col(r, "amount", t)?,
                currency: col(r, "currency", t)?,
                metadata: metadata.0,
                status: parse(&col::<String>(r, "status", t)?, t)?,
                status_source: source.map(|s| parse(&s, t)).transpose()?,
                created_at: Timestamp(col(r, "created_at", t)?),
                updated_at: Timestamp(col(r, "updated_at", t)?),
                finalized_at: col::<Option<i64>>(r, "finalized_at", t)?.map(Timestamp),
            })
        }

        async fn fetch_payment(conn: &mut $conn, id: &str) -> Result<Option<Payment>> {
            let sql = format!("SELECT {PAYMENT_COLUMNS} FROM payments WHERE id = $1");
            let row = sqlx::query(&sql)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .op("reading a payment")?;
            row.as_ref().map(payment_from_row).transpose()
        }

        /// Register a payment inside the caller's own transaction: the payment
        /// and its first poll commit or roll back with the caller's data.
        pub async fn register_in(
            conn: &mut $conn,
            p: &NewPayment,
            now: Timestamp,
            first_poll_at: Timestamp,
        ) -> Result<Registered> {
            let provider_ref = p.provider_ref.as_ref().map(|r| r.as_str());
            let merchant_ref = p.merchant_ref.as_ref().map(|r| r.as_str());
            let inserted = sqlx::query(
                "INSERT INTO payments (id, provider, provider_ref, merchant_ref, kind, amount, currency, \
                 metadata, status, created_at, updated_at) \
                 VALUES ($1, $2, $3, $9, $4, $5, $6, $7, 'pending', $8, $8) ON CONFLICT DO NOTHING",
            )
            .bind(p.id.as_str())
            .bind(&p.provider)
            .bind(provider_ref)
            .bind(p.kind.as_str())
            .bind(p.amount.minor)
            .bind(p.amount.currency.as_str())
            .bind(sqlx::types::Json(&p.metadata))
            .bind(now.0)
            .bind(merchant_ref)
            .execute(&mut *conn)
            .await
            .op("registering a payment")?;
            if inserted.rows_affected() == 1 {
                sqlx::query(
                    "INSERT INTO poll_jobs (payment_id, provider, provider_ref, merchant_ref, kind, \
                     registered_at, next_poll_at) VALUES ($1, $2, $3, $7, $4, $5, $6)",
                )
                .bind(p.id.as_str())
                .bind(&p.provider)
                .bind(provider_ref)
                .bind(p.kind.as_str())
                .bind(now.0)
                .bind(first_poll_at.0)
                .bind(merchant_ref)
                .execute(&mut *conn)
                .await
                .op("scheduling the first poll")?;
                // Webhooks that beat the registration are applied now.
                sqlx::query(
                    "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $3 \
                     WHERE provider = $1 AND state = 'orphaned' \
                     AND (provider_ref = $2 OR merchant_ref = $4)",
                )
                .bind(&p.provider)
                .bind(provider_ref)
                .bind(now.0)
                .bind(merchant_ref)
                .execute(&mut *conn)
                .await
                .op("handing orphaned webhooks to processing")?;
                if let Some(sql) = $notify {
                    sqlx::query(sql).execute(&mut *conn).await.op("notifying workers")?;
                }
                return Ok(Registered::Created(Payment {
                    id: p.id.as_str().to_string(),
                    provider: p.provider.clone(),
                    provider_ref: provider_ref.map(str::to_string),
                    merchant_ref: merchant_ref.map(str::to_string),
                    kind: p.kind,
                    amount: p.amount.minor,
                    currency: p.amount.currency.as_str().to_string(),
                    metadata: p.metadata.clone(),
                    status: Status::Pending,
                    status_source: None,
                    created_at: now,
                    updated_at: now,
                    finalized_at: None,
                }));
            }
            match fetch_payment(conn, p.id.as_str()).await? {
                Some(existing) if existing.same_body(p) => Ok(Registered::Existing(existing)),
                Some(existing) => Ok(Registered::Conflict(existing)),
                None => {
                    let other: Option<(String, Option<String>)> = sqlx::query_as(
                        "SELECT id, provider_ref FROM payments WHERE provider = $1 \
                         AND (provider_ref = $2 OR merchant_ref = $3)",
                    )
                    .bind(&p.provider)
                    .bind(provider_ref)
                    .bind(merchant_ref)
                    .fetch_optional(&mut *conn)
                    .await
                    .op("finding the payment that holds a reference")?;
                    let (other_id, other_ref) = other.unwrap_or_default();
                    let field = if provider_ref.is_some() && other_ref.as_deref() == provider_ref {
                        "provider_ref"
                    } else {
                        "merchant_ref"
                    };
                    Ok(Registered::RefTaken { other_id, field })
                }
            }
        }

        /// Lock the payment row for the rest of the transaction.
        async fn lock_payment(conn: &mut $conn, id: &str) -> Result<Option<(Status, Kind)>> {
            let row: Option<(String, String)> = sqlx::query_as($lock_payment)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .op("locking a payment")?;
            row.map(|(s, k)| Ok((parse(&s, "payments")?, parse(&k, "payments")?)))
                .transpose()
        }

        struct Transition<'a> {
            payment_id: &'a str,
            kind: Kind,
            from: Status,
            to: Status,
            source: Source,
            event_id: Option<&'a str>,
            reason: Option<&'a str>,
            actor: Option<&'a str>,
            observed_at: Timestamp,
            now: Timestamp,
        }

        /// Write one transition: status, history, outbox, and the poll job
        /// (deleted when final, parked when in review). The caller holds the
        /// payment lock and has checked the transition table.
        async fn write_transition(conn: &mut $conn, t: &Transition<'_>) -> Result<()> {
            write_status(conn, t).await?;
            if t.to.is_final() {
                sqlx::query("DELETE FROM poll_jobs WHERE payment_id = $1")
                    .bind(t.payment_id)
                    .execute(&mut *conn)
                    .await
                    .op("dropping the poll job of a final payment")?;
            } else if t.to == Status::NeedsReview {
                park_job(conn, t.payment_id, None).await?;
            }
            Ok(())
        }

        /// Status, history and outbox of one transition (no job change).
        async fn write_status(conn: &mut $conn, t: &Transition<'_>) -> Result<()> {
            let finalized = t.to.is_final().then_some(t.now.0);
            sqlx::query(
                "UPDATE payments SET status = $2, status_source = $3, updated_at = $4, \
                 finalized_at = COALESCE(finalized_at, $5) WHERE id = $1",
            )
            .bind(t.payment_id)
            .bind(t.to.as_str())
            .bind(t.source.as_str())
            .bind(t.now.0)
            .bind(finalized)
            .execute(&mut *conn)
            .await
            .op("writing a status")?;
            sqlx::query(
                "INSERT INTO status_history (payment_id, from_status, to_status, source, event_id, \
                 reason, actor, observed_at, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(t.payment_id)
            .bind(t.from.as_str())
            .bind(t.to.as_str())
            .bind(t.source.as_str())
            .bind(t.event_id)
            .bind(t.reason)
            .bind(t.actor)
            .bind(t.observed_at.0)
            .bind(t.now.0)
            .execute(&mut *conn)
            .await
            .op("appending status history")?;
            sqlx::query(
                "INSERT INTO outbox (event_id, payment_id, type, status, previous_status, source, occurred_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(format!("evt_{}", uuid::Uuid::new_v4().simple()))
            .bind(t.payment_id)
            .bind(format!("{}.{}", t.kind.as_str(), t.to.as_str()))
            .bind(t.to.as_str())
            .bind(t.from.as_str())
            .bind(t.source.as_str())
            .bind(t.now.0)
            .execute(&mut *conn)
            .await
            .op("writing the outbox event")?;
            Ok(())
        }

        /// Stop polling a payment until someone asks ("poll now").
        async fn park_job(conn: &mut $conn, id: &str, last_error: Option<&str>) -> Result<()> {
            sqlx::query(
                "UPDATE poll_jobs SET next_poll_at = NULL, due_at = NULL, locked_by = NULL, \
                 locked_until = NULL, lock_token = NULL, last_error = COALESCE($2, last_error) \
                 WHERE payment_id = $1",
            )
            .bind(id)
            .bind(last_error)
            .execute(&mut *conn)
            .await
            .op("parking a poll job")?;
            Ok(())
        }

        /// `apply` inside an open transaction.
        pub(crate) async fn apply_in(
            conn: &mut $conn,
            r: &Report,
            now: Timestamp,
        ) -> Result<ApplyOutcome> {
            let Some((current, kind)) = lock_payment(conn, &r.payment_id).await? else {
                return Ok(ApplyOutcome::NotFound);
            };
            match decide(kind, current, r.status) {
                Decision::Unchanged => Ok(ApplyOutcome::Unchanged),
                Decision::Ignore(why) => Ok(ApplyOutcome::Ignored {
                    current,
                    reason: why.as_str(),
                }),
                Decision::Apply(to) => {
                    write_transition(
                        conn,
                        &Transition {
                            payment_id: &r.payment_id,
                            kind,
                            from: current,
                            to,
                            source: r.source,
                            event_id: r.event_id.as_deref(),
                            reason: r.reason.as_deref(),
                            actor: r.actor.as_deref(),
                            observed_at: r.observed_at,
                            now,
                        },
                    )
                    .await?;
                    Ok(ApplyOutcome::Applied { from: current, to })
                }
            }
        }

        async fn insert_attempt(conn: &mut $conn, a: &NewAttempt) -> Result<()> {
            sqlx::query(
                "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, \
                 outcome, provider_status, error_class, error) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&a.payment_id)
            .bind(&a.provider)
            .bind(&a.worker)
            .bind(a.started_at.0)
            .bind(a.latency_ms)
            .bind(&a.outcome)
            .bind(&a.provider_status)
            .bind(&a.error_class)
            .bind(&a.error)
            .execute(&mut *conn)
            .await
            .op("recording a provider call")?;
            Ok(())
        }

        /// `complete` inside an open transaction.
        async fn complete_in(conn: &mut $conn, c: &Completion) -> Result<CompleteOutcome> {
            // The call happened whatever the fence says: always record it.
            if let Some(a) = &c.attempt {
                insert_attempt(conn, a).await?;
            }
            let Some((current, kind)) = lock_payment(conn, &c.payment_id).await? else {
                return Ok(CompleteOutcome::LeaseLost);
            };
            let fenced: Option<i32> = sqlx::query_scalar($lock_job)
                .bind(&c.payment_id)
                .bind(c.lock_token)
                .fetch_optional(&mut *conn)
                .await
                .op("checking a lease")?;
            if fenced.is_none() {
                return Ok(CompleteOutcome::LeaseLost);
            }
            let plan = $crate::plan::plan_completion(c, kind, current);
            for step in &plan.steps {
                let t = Transition {
                    payment_id: &c.payment_id,
                    kind,
                    from: step.from,
                    to: step.to,
                    source: Source::StatusQuery,
                    event_id: None,
                    reason: step.reason.as_deref(),
                    actor: None,
                    observed_at: c.now,
                    now: c.now,
                };
                write_status(conn, &t).await?;
            }
            match &plan.job {
                $crate::plan::JobAction::Delete => {
                    sqlx::query("DELETE FROM poll_jobs WHERE payment_id = $1")
                        .bind(&c.payment_id)
                        .execute(&mut *conn)
                        .await
                        .op("dropping the poll job of a final payment")?;
                }
                $crate::plan::JobAction::Reschedule {
                    next_poll_at,
                    attempts,
                    errors,
                    reset_errors,
                    last_error,
                } => {
                    sqlx::query(
                        "UPDATE poll_jobs SET next_poll_at = $2, attempts = attempts + $3, \
                         errors = CASE WHEN $6 THEN $5 ELSE errors + $5 END, \
                         due_at = NULL, locked_by = NULL, locked_until = NULL, lock_token = NULL, \
                         last_error = $4 WHERE payment_id = $1",
                    )
                    .bind(&c.payment_id)
                    .bind(next_poll_at.0)
                    .bind(*attempts)
                    .bind(last_error)
                    .bind(*errors)
                    .bind(*reset_errors)
                    .execute(&mut *conn)
                    .await
                    .op("rescheduling a poll")?;
                }
                $crate::plan::JobAction::Park {
                    attempts,
                    errors,
                    reason,
                } => {
                    sqlx::query(
                        "UPDATE poll_jobs SET attempts = attempts + $2, errors = errors + $3 \
                         WHERE payment_id = $1",
                    )
                        .bind(&c.payment_id)
                        .bind(*attempts)
                        .bind(*errors)
                        .execute(&mut *conn)
                        .await
                        .op("counting the last poll")?;
                    park_job(conn, &c.payment_id, reason.as_deref()).await?;
                }
            }
            let applied = plan.steps.iter().map(|s| (s.from, s.to)).collect();
            Ok(CompleteOutcome::Done { applied })
        }

        /// A batch of completions in one transaction, row by row, in
        /// payment-id order (so two batches never lock in opposite orders).
        #[allow(dead_code)]
        async fn complete_each(conn: &mut $conn, cs: &[Completion]) -> Result<Vec<CompleteOutcome>> {
            let mut order: Vec<usize> = (0..cs.len()).collect();
            order.sort_by(|a, b| cs[*a].payment_id.cmp(&cs[*b].payment_id));
            let mut out = vec![CompleteOutcome::LeaseLost; cs.len()];
            for i in order {
                out[i] = complete_in(conn, &cs[i]).await?;
            }
            Ok(out)
        }

        fn job_from_row(r: &$row) -> Result<ClaimedJob> {
            let t = "poll_jobs";
            Ok(ClaimedJob {
                payment_id: col(r, "payment_id", t)?,
                provider: col(r, "provider", t)?,
                provider_ref: col(r, "provider_ref", t)?,
                merchant_ref: col(r, "merchant_ref", t)?,
                kind: parse(&col::<String>(r, "kind", t)?, t)?,
                registered_at: Timestamp(col(r, "registered_at", t)?),
                attempts: u32::try_from(col::<i32>(r, "attempts", t)?).unwrap_or(0),
                errors: u32::try_from(col::<i32>(r, "errors", t)?).unwrap_or(0),
                due_at: Timestamp(col(r, "due_at", t)?),
                lock_token: col(r, "lock_token", t)?,
            })
        }

        fn history_from_row(r: &$row) -> Result<HistoryEntry> {
            let t = "status_history";
            let from: Option<String> = col(r, "from_status", t)?;
            Ok(HistoryEntry {
                from: from.map(|s| parse(&s, t)).transpose()?,
                to: parse(&col::<String>(r, "to_status", t)?, t)?,
                source: parse(&col::<String>(r, "source", t)?, t)?,
                event_id: col(r, "event_id", t)?,
                reason: col(r, "reason", t)?,
                actor: col(r, "actor", t)?,
                observed_at: Timestamp(col(r, "observed_at", t)?),
                at: Timestamp(col(r, "at", t)?),
            })
        }

        fn attempt_from_row(r: &$row) -> Result<AttemptRecord> {
            let t = "poll_attempts";
            Ok(AttemptRecord {
                id: col(r, "id", t)?,
                attempt: NewAttempt {
                    payment_id: col(r, "payment_id", t)?,
                    provider: col(r, "provider", t)?,
                    worker: col(r, "worker", t)?,
                    started_at: Timestamp(col(r, "started_at", t)?),
                    latency_ms: col(r, "latency_ms", t)?,
                    outcome: col(r, "outcome", t)?,
                    provider_status: col(r, "provider_status", t)?,
                    error_class: col(r, "error_class", t)?,
                    error: col(r, "error", t)?,
                },
            })
        }

        fn event_from_row(r: &$row) -> Result<OutboxEvent> {
            let t = "outbox";
            let prev: Option<String> = col(r, "previous_status", t)?;
            Ok(OutboxEvent {
                seq: col(r, "id", t)?,
                event_id: col(r, "event_id", t)?,
                payment_id: col(r, "payment_id", t)?,
                event_type: col(r, "type", t)?,
                status: parse(&col::<String>(r, "status", t)?, t)?,
                previous_status: prev.map(|s| parse(&s, t)).transpose()?,
                source: parse(&col::<String>(r, "source", t)?, t)?,
                occurred_at: Timestamp(col(r, "occurred_at", t)?),
            })
        }

        const INBOX_COLUMNS: &str = "id, provider, event_id, provider_ref, merchant_ref, observed_status, \
             provider_status, occurred_at, received_at, state, reason, attempts";

        fn inbox_from_row(r: &$row) -> Result<InboxEvent> {
            let t = "webhook_inbox";
            let observed: Option<String> = col(r, "observed_status", t)?;
            Ok(InboxEvent {
                id: col(r, "id", t)?,
                provider: col(r, "provider", t)?,
                event_id: col(r, "event_id", t)?,
                provider_ref: col(r, "provider_ref", t)?,
                merchant_ref: col(r, "merchant_ref", t)?,
                observed: observed.map(|s| parse(&s, t)).transpose()?,
                provider_status: col(r, "provider_status", t)?,
                occurred_at: col::<Option<i64>>(r, "occurred_at", t)?.map(Timestamp),
                received_at: Timestamp(col(r, "received_at", t)?),
                state: parse(&col::<String>(r, "state", t)?, t)?,
                reason: col(r, "reason", t)?,
                attempts: u32::try_from(col::<i32>(r, "attempts", t)?).unwrap_or(0),
            })
        }

        async fn find_payment_by_ref(
            conn: &mut $conn,
            provider: &str,
            provider_ref: &str,
        ) -> Result<Option<String>> {
            sqlx::query_scalar("SELECT id FROM payments WHERE provider = $1 AND provider_ref = $2")
                .bind(provider)
                .bind(provider_ref)
                .fetch_optional(&mut *conn)
                .await
                .op("finding a payment by provider reference")
        }

        async fn set_inbox_state(
            conn: &mut $conn,
            id: i64,
            state: InboxState,
            reason: Option<&str>,
            now: Timestamp,
        ) -> Result<()> {
            sqlx::query(
                "UPDATE webhook_inbox SET state = $2, reason = $3, processed_at = $4, \
                 next_attempt_at = NULL WHERE id = $1",
            )
            .bind(id)
            .bind(state.as_str())
            .bind(reason)
            .bind(now.0)
            .execute(&mut *conn)
            .await
            .op("recording a webhook's outcome")?;
            Ok(())
        }

        enum ByMerchantRef {
            Found(String),
            None,
            /// A payment has the merchant reference but tracks another
            /// provider object: the event is not about it.
            Other(String),
        }

        /// The payment registered with this merchant reference, recording
        /// the provider's id the event names when the payment had none.
        async fn adopt_by_merchant_ref(
            conn: &mut $conn,
            provider: &str,
            merchant_ref: &str,
            provider_ref: Option<&str>,
        ) -> Result<ByMerchantRef> {
            let row: Option<(String, Option<String>)> = sqlx::query_as(
                "SELECT id, provider_ref FROM payments WHERE provider = $1 AND merchant_ref = $2",
            )
            .bind(provider)
            .bind(merchant_ref)
            .fetch_optional(&mut *conn)
            .await
            .op("finding a payment by merchant reference")?;
            let Some((id, known)) = row else {
                return Ok(ByMerchantRef::None);
            };
            match (known, provider_ref) {
                (None, Some(found)) => {
                    // Not found by provider reference above, so no other
                    // payment holds it: safe to record.
                    write_provider_ref(conn, &id, found).await?;
                    Ok(ByMerchantRef::Found(id))
                }
                (Some(known), Some(named)) if known != named => Ok(ByMerchantRef::Other(format!(
                    "event is about `{named}` but payment {id} (merchant reference \
                     `{merchant_ref}`) tracks `{known}`: not applied"
                ))),
                _ => Ok(ByMerchantRef::Found(id)),
            }
        }

        async fn write_provider_ref(conn: &mut $conn, id: &str, provider_ref: &str) -> Result<()> {
            for sql in [
                "UPDATE payments SET provider_ref = $2 WHERE id = $1 AND provider_ref IS NULL",
                "UPDATE poll_jobs SET provider_ref = $2 WHERE payment_id = $1 AND provider_ref IS NULL",
            ] {
                sqlx::query(sql)
                    .bind(id)
                    .bind(provider_ref)
                    .execute(&mut *conn)
                    .await
                    .op("recording a provider reference")?;
            }
            Ok(())
        }

        /// `record_provider_ref` inside an open transaction.
        async fn record_provider_ref_in(
            conn: &mut $conn,
            id: &str,
            lock_token: i64,
            provider_ref: &str,
        ) -> Result<RefRecorded> {
            if lock_payment(conn, id).await?.is_none() {
                return Ok(RefRecorded::LeaseLost);
            }
            let fenced: Option<i32> = sqlx::query_scalar($lock_job)
                .bind(id)
                .bind(lock_token)
                .fetch_optional(&mut *conn)
                .await
                .op("checking a lease")?;
            if fenced.is_none() {
                return Ok(RefRecorded::LeaseLost);
            }
            let (provider, known): (String, Option<String>) =
                sqlx::query_as("SELECT provider, provider_ref FROM payments WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await
                    .op("reading a payment's references")?;
            match known {
                Some(k) if k == provider_ref => return Ok(RefRecorded::Same),
                Some(existing) => return Ok(RefRecorded::Different { existing }),
                None => {}
            }
            if let Some(other_id) = find_payment_by_ref(conn, &provider, provider_ref).await? {
                return Ok(RefRecorded::Taken { other_id });
            }
            write_provider_ref(conn, id, provider_ref).await?;
            Ok(RefRecorded::Recorded)
        }

        /// `inbox_process` inside an open transaction: inbox row first, then
        /// the payment (inside `apply_in`), then its poll job.
        async fn inbox_process_in(
            conn: &mut $conn,
            ev: &InboxEvent,
            now: Timestamp,
        ) -> Result<InboxOutcome> {
            let fenced: Option<i64> = sqlx::query_scalar($lock_inbox)
                .bind(ev.id)
                .bind(i32::try_from(ev.attempts).unwrap_or(i32::MAX))
                .fetch_optional(&mut *conn)
                .await
                .op("locking a webhook")?;
            if fenced.is_none() {
                return Ok(InboxOutcome::LeaseLost);
            }
            let payment = match &ev.provider_ref {
                Some(r) => find_payment_by_ref(conn, &ev.provider, r).await?,
                None => None,
            };
            let payment = match (payment, &ev.merchant_ref) {
                (Some(id), _) => Some(id),
                (None, Some(m)) => {
                    match adopt_by_merchant_ref(conn, &ev.provider, m, ev.provider_ref.as_deref()).await? {
                        ByMerchantRef::Found(id) => Some(id),
                        ByMerchantRef::None => None,
                        ByMerchantRef::Other(why) => {
                            set_inbox_state(conn, ev.id, InboxState::Ignored, Some(&why), now).await?;
                            return Ok(InboxOutcome::Ignored { reason: why });
                        }
                    }
                }
                (None, None) => None,
            };
            let Some(payment_id) = payment else {
                let why = "no payment tracks this provider reference yet";
                set_inbox_state(conn, ev.id, InboxState::Orphaned, Some(why), now).await?;
                return Ok(InboxOutcome::Orphaned);
            };
            let Some(status) = ev.observed else {
                let why = format!(
                    "unknown provider status `{}`: recorded, not applied",
                    ev.provider_status.as_deref().unwrap_or("")
                );
                set_inbox_state(conn, ev.id, InboxState::Ignored, Some(&why), now).await?;
                return Ok(InboxOutcome::Ignored { reason: why });
            };
            // The provider's own words go into the history (a reversal
            // says `CAPTURE_FAILED`, `charge.refunded`, …).
            let report = Report {
                payment_id: payment_id.clone(),
                status,
                source: Source::Webhook,
                event_id: Some(ev.event_id.clone()),
                observed_at: ev.occurred_at.unwrap_or(ev.received_at),
                reason: ev.provider_status.as_ref().map(|w| format!("provider: {w}")),
                actor: None,
            };
            let (state, reason, out) = match apply_in(conn, &report, now).await? {
                ApplyOutcome::Applied { from, to } => (
                    InboxState::Applied,
                    None,
                    InboxOutcome::Applied { payment_id, from, to },
                ),
                ApplyOutcome::Unchanged => {
                    let why = format!("duplicate: payment is already {status}");
                    (InboxState::Ignored, Some(why.clone()), InboxOutcome::Ignored { reason: why })
                }
                // Never "ignored: already final" for a failure after success:
                // it may be money leaving, or a stale report; a human decides.
                ApplyOutcome::Ignored { current, .. } if contradicts_success(current, status) => {
                    let why = format!(
                        "the provider reports {status} (`{}`) after the payment succeeded: not \
                         applied, kept for review",
                        ev.provider_status.as_deref().unwrap_or("")
                    );
                    (InboxState::Review, Some(why.clone()), InboxOutcome::Review { reason: why })
                }
                ApplyOutcome::Ignored { current, reason } => {
                    let why = format!("{reason}: payment is {current}, event says {status}");
                    (InboxState::Ignored, Some(why.clone()), InboxOutcome::Ignored { reason: why })
                }
                ApplyOutcome::NotFound => {
                    let why = "no payment tracks this provider reference yet".to_string();
                    (InboxState::Orphaned, Some(why), InboxOutcome::Orphaned)
                }
            };
            set_inbox_state(conn, ev.id, state, reason.as_deref(), now).await?;
            Ok(out)
        }

        #[async_trait::async_trait]
        impl $crate::Store for $store {
            async fn migrate(&self) -> Result<()> {
                self.run_migrations().await
            }

            async fn register(
                &self,
                p: &NewPayment,
                now: Timestamp,
                first_poll_at: Timestamp,
            ) -> Result<Registered> {
                let mut tx = self.begin_write().await?;
                let out = register_in(&mut tx, p, now, first_poll_at).await?;
                tx.commit().await.op("committing a registration")?;
                if matches!(out, Registered::Created(_)) {
                    self.wake.bump();
                }
                Ok(out)
            }

            async fn apply(&self, report: &Report, now: Timestamp) -> Result<ApplyOutcome> {
                let mut tx = self.begin_write().await?;
                let out = apply_in(&mut tx, report, now).await?;
                tx.commit().await.op("committing a status change")?;
                if matches!(out, ApplyOutcome::Applied { .. }) {
                    self.wake.bump();
                }
                Ok(out)
            }

            async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>> {
                let token: i64 = rand::random::<i64>() & i64::MAX;
                let rows = sqlx::query($claim)
                    .bind(req.now.0)
                    .bind(i64::from(req.limit))
                    .bind(req.lease_until.0)
                    .bind(&req.worker)
                    .bind(token)
                    .fetch_all(&self.pool)
                    .await
                    .op("claiming due polls")?;
                rows.iter().map(job_from_row).collect()
            }

            async fn complete(&self, c: &Completion) -> Result<CompleteOutcome> {
                let mut tx = self.begin_write().await?;
                let out = complete_in(&mut tx, c).await?;
                tx.commit().await.op("committing a poll result")?;
                if matches!(&out, CompleteOutcome::Done { applied } if !applied.is_empty()) {
                    self.wake.bump();
                }
                Ok(out)
            }

            async fn complete_batch(&self, cs: &[Completion]) -> Result<Vec<CompleteOutcome>> {
                let mut tx = self.begin_write().await?;
                let out = $complete_batch(&mut tx, cs).await?;
                tx.commit().await.op("committing a batch of poll results")?;
                if out.iter().any(|o| matches!(o, CompleteOutcome::Done { applied } if !applied.is_empty())) {
                    self.wake.bump();
                }
                Ok(out)
            }

            async fn poll_now(&self, id: &str, now: Timestamp) -> Result<PollNow> {
                let mut tx = self.begin_write().await?;
                let Some((status, _)) = lock_payment(&mut tx, id).await? else {
                    return Ok(PollNow::NotFound);
                };
                if status.is_final() {
                    return Ok(PollNow::AlreadyFinal);
                }
                // A leased job stays with its worker: making it due would let a
                // second worker poll the same payment at the same time.
                let moved = sqlx::query(
                    "UPDATE poll_jobs SET next_poll_at = $2, due_at = NULL \
                     WHERE payment_id = $1 AND (locked_until IS NULL OR locked_until <= $2)",
                )
                .bind(id)
                .bind(now.0)
                .execute(&mut *tx)
                .await
                .op("making a poll due now")?;
                let out = if moved.rows_affected() == 1 {
                    PollNow::Scheduled
                } else {
                    PollNow::InFlight
                };
                if out == PollNow::Scheduled {
                    if let Some(sql) = $notify {
                        sqlx::query(sql).execute(&mut *tx).await.op("notifying workers")?;
                    }
                }
                tx.commit().await.op("committing poll now")?;
                self.wake.bump();
                Ok(out)
            }

            async fn get(&self, id: &str) -> Result<Option<PaymentView>> {
                let mut conn = self.pool.acquire().await.op("acquiring a connection")?;
                let Some(payment) = fetch_payment(&mut conn, id).await? else {
                    return Ok(None);
                };
                let poll = sqlx::query(
                    "SELECT attempts, errors, next_poll_at, locked_by, last_error FROM poll_jobs WHERE payment_id = $1",
                )
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .op("reading a poll job")?
                .map(|r| -> Result<PollState> {
                    Ok(PollState {
                        attempts: u32::try_from(col::<i32>(&r, "attempts", "poll_jobs")?).unwrap_or(0),
                        errors: u32::try_from(col::<i32>(&r, "errors", "poll_jobs")?).unwrap_or(0),
                        next_poll_at: col::<Option<i64>>(&r, "next_poll_at", "poll_jobs")?.map(Timestamp),
                        locked_by: col(&r, "locked_by", "poll_jobs")?,
                        last_error: col(&r, "last_error", "poll_jobs")?,
                    })
                })
                .transpose()?;
                let history = sqlx::query(
                    "SELECT from_status, to_status, source, event_id, reason, actor, observed_at, at \
                     FROM status_history WHERE payment_id = $1 ORDER BY id",
                )
                .bind(id)
                .fetch_all(&mut *conn)
                .await
                .op("reading status history")?
                .iter()
                .map(history_from_row)
                .collect::<Result<Vec<_>>>()?;
                Ok(Some(PaymentView {
                    payment,
                    poll,
                    history,
                }))
            }

            async fn list(&self, f: &ListFilter) -> Result<Vec<Payment>> {
                let sql = format!(
                    "SELECT {PAYMENT_COLUMNS} FROM payments \
                     WHERE (CAST($1 AS TEXT) IS NULL OR status = $1) \
                       AND (CAST($2 AS TEXT) IS NULL OR provider = $2) \
                       AND (CAST($3 AS TEXT) IS NULL OR id > $3) \
                     ORDER BY id LIMIT $4"
                );
                sqlx::query(&sql)
                    .bind(f.status.map(Status::as_str))
                    .bind(&f.provider)
                    .bind(&f.after_id)
                    .bind(i64::from(f.limit))
                    .fetch_all(&self.pool)
                    .await
                    .op("listing payments")?
                    .iter()
                    .map(payment_from_row)
                    .collect()
            }

            async fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
                sqlx::query(
                    "SELECT id, payment_id, provider, worker, started_at, latency_ms, outcome, \
                     provider_status, error_class, error FROM poll_attempts WHERE payment_id = $1 ORDER BY id",
                )
                .bind(id)
                .fetch_all(&self.pool)
                .await
                .op("reading provider calls")?
                .iter()
                .map(attempt_from_row)
                .collect()
            }

            async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
                sqlx::query(
                    "SELECT id, event_id, payment_id, type, status, previous_status, source, occurred_at \
                     FROM outbox WHERE id > $1 ORDER BY id LIMIT $2",
                )
                .bind(seq)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .op("reading the outbox")?
                .iter()
                .map(event_from_row)
                .collect()
            }

            async fn next_due_at(&self) -> Result<Option<Timestamp>> {
                let v: Option<i64> = sqlx::query_scalar(
                    "SELECT MIN(next_poll_at) FROM poll_jobs WHERE next_poll_at IS NOT NULL",
                )
                .fetch_one(&self.pool)
                .await
                .op("finding the next due poll")?;
                Ok(v.map(Timestamp))
            }

            async fn status_counts(&self) -> Result<Vec<(Status, i64)>> {
                let rows: Vec<(String, i64)> =
                    sqlx::query_as("SELECT status, COUNT(*) FROM payments GROUP BY status ORDER BY status")
                        .fetch_all(&self.pool)
                        .await
                        .op("counting payments by status")?;
                rows.into_iter()
                    .map(|(s, n)| Ok((parse(&s, "payments")?, n)))
                    .collect()
            }

            async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>> {
                let mut tx = self.begin_write().await?;
                let mut fresh = Vec::with_capacity(events.len());
                for e in events {
                    let due = (e.state == InboxState::Received).then_some(now.0);
                    let r = sqlx::query(
                        "INSERT INTO webhook_inbox (provider, event_id, provider_ref, merchant_ref, \
                         observed_status, provider_status, occurred_at, raw_body, headers, received_at, \
                         state, reason, next_attempt_at) \
                         VALUES ($1, $2, $3, $13, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(&e.provider)
                    .bind(&e.event_id)
                    .bind(&e.provider_ref)
                    .bind(e.observed.map(Status::as_str))
                    .bind(&e.provider_status)
                    .bind(e.occurred_at.map(|t| t.0))
                    .bind(&e.raw_body)
                    .bind(sqlx::types::Json(&e.headers))
                    .bind(now.0)
                    .bind(e.state.as_str())
                    .bind(&e.reason)
                    .bind(due)
                    .bind(&e.merchant_ref)
                    .execute(&mut *tx)
                    .await
                    .op("storing a webhook")?;
                    fresh.push(r.rows_affected() == 1);
                }
                tx.commit().await.op("committing webhooks")?;
                if fresh.iter().any(|f| *f) {
                    self.wake.bump();
                }
                Ok(fresh)
            }

            async fn inbox_claim(
                &self,
                now: Timestamp,
                limit: u32,
                lease_until: Timestamp,
            ) -> Result<Vec<InboxEvent>> {
                sqlx::query($inbox_claim)
                    .bind(now.0)
                    .bind(i64::from(limit))
                    .bind(lease_until.0)
                    .fetch_all(&self.pool)
                    .await
                    .op("claiming webhooks to process")?
                    .iter()
                    .map(inbox_from_row)
                    .collect()
            }

            async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome> {
                let mut tx = self.begin_write().await?;
                let out = inbox_process_in(&mut tx, ev, now).await?;
                tx.commit().await.op("committing a webhook's effect")?;
                if matches!(out, InboxOutcome::Applied { .. }) {
                    self.wake.bump();
                }
                Ok(out)
            }

            async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()> {
                sqlx::query(
                    "UPDATE webhook_inbox SET state = 'failed', reason = $3, next_attempt_at = $4 \
                     WHERE id = $1 AND attempts = $2 AND state IN ('received', 'failed')",
                )
                .bind(ev.id)
                .bind(i32::try_from(ev.attempts).unwrap_or(i32::MAX))
                .bind(error)
                .bind(retry_at.0)
                .execute(&self.pool)
                .await
                .op("recording a webhook failure")?;
                Ok(())
            }

            async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64> {
                let r = sqlx::query(
                    "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $1 \
                     WHERE state = 'orphaned' AND EXISTS (SELECT 1 FROM payments p \
                       WHERE p.provider = webhook_inbox.provider \
                       AND (p.provider_ref = webhook_inbox.provider_ref \
                            OR p.merchant_ref = webhook_inbox.merchant_ref))",
                )
                .bind(now.0)
                .execute(&self.pool)
                .await
                .op("adopting orphaned webhooks")?;
                Ok(r.rows_affected())
            }

            async fn record_provider_ref(
                &self,
                payment_id: &str,
                lock_token: i64,
                provider_ref: &str,
            ) -> Result<RefRecorded> {
                let mut tx = self.begin_write().await?;
                let out = record_provider_ref_in(&mut tx, payment_id, lock_token, provider_ref).await?;
                tx.commit().await.op("committing a provider reference")?;
                Ok(out)
            }

            async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>> {
                let sql = format!("SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 AND event_id = $2");
                sqlx::query(&sql)
                    .bind(provider)
                    .bind(event_id)
                    .fetch_optional(&self.pool)
                    .await
                    .op("reading a webhook")?
                    .as_ref()
                    .map(inbox_from_row)
                    .transpose()
            }

            async fn inbox_next_due(&self) -> Result<Option<Timestamp>> {
                let v: Option<i64> = sqlx::query_scalar(
                    "SELECT MIN(next_attempt_at) FROM webhook_inbox WHERE state IN ('received', 'failed')",
                )
                .fetch_one(&self.pool)
                .await
                .op("finding the next webhook to process")?;
                Ok(v.map(Timestamp))
            }

            async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>> {
                let rows: Vec<(String, i64)> =
                    sqlx::query_as("SELECT state, COUNT(*) FROM webhook_inbox GROUP BY state ORDER BY state")
                        .fetch_all(&self.pool)
                        .await
                        .op("counting webhooks by state")?;
                rows.into_iter()
                    .map(|(s, n)| Ok((parse(&s, "webhook_inbox")?, n)))
                    .collect()
            }

            async fn find_by_ref(&self, provider: &str, provider_ref: &str) -> Result<Option<String>> {
                sqlx::query_scalar(
                    "SELECT id FROM payments WHERE provider = $1 AND provider_ref = $2 \
                     UNION ALL SELECT id FROM payments WHERE provider = $1 AND merchant_ref = $2",
                )
                .bind(provider)
                .bind(provider_ref)
                .fetch_optional(&self.pool)
                .await
                .op("finding a payment by reference")
            }

            async fn sequence_feed(&self, limit: u32) -> Result<u64> {
                let mut tx = self.begin_write().await?;
                let last: i64 = sqlx::query_scalar($lock_feed)
                    .fetch_one(&mut *tx)
                    .await
                    .op("locking the feed sequencer")?;
                let n = sqlx::query(
                    "UPDATE outbox SET feed_seq = $1 + t.rn \
                     FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM outbox \
                           WHERE feed_seq IS NULL ORDER BY id LIMIT $2) AS t \
                     WHERE outbox.id = t.id",
                )
                .bind(last)
                .bind(i64::from(limit))
                .execute(&mut *tx)
                .await
                .op("assigning feed positions")?
                .rows_affected();
                if n > 0 {
                    sqlx::query("UPDATE feed_state SET last_seq = last_seq + $1 WHERE id = 1")
                        .bind(i64::try_from(n).unwrap_or(i64::MAX))
                        .execute(&mut *tx)
                        .await
                        .op("advancing the feed")?;
                }
                tx.commit().await.op("committing feed positions")?;
                if n > 0 {
                    self.wake.bump();
                }
                Ok(n)
            }

            async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
                sqlx::query(
                    "SELECT feed_seq AS id, event_id, payment_id, type, status, previous_status, source, \
                     occurred_at FROM outbox WHERE feed_seq > $1 ORDER BY feed_seq LIMIT $2",
                )
                .bind(cursor)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .op("reading the event feed")?
                .iter()
                .map(event_from_row)
                .collect()
            }

            async fn destination(&self, name: &str) -> Result<DestinationState> {
                sqlx::query("INSERT INTO event_destinations (name) VALUES ($1) ON CONFLICT DO NOTHING")
                    .bind(name)
                    .execute(&self.pool)
                    .await
                    .op("creating a destination cursor")?;
                let r = sqlx::query(
                    "SELECT name, delivered_seq, attempts, failing_since, next_attempt_at, last_error \
                     FROM event_destinations WHERE name = $1",
                )
                .bind(name)
                .fetch_one(&self.pool)
                .await
                .op("reading a destination cursor")?;
                let t = "event_destinations";
                Ok(DestinationState {
                    name: col(&r, "name", t)?,
                    delivered_seq: col(&r, "delivered_seq", t)?,
                    attempts: u32::try_from(col::<i32>(&r, "attempts", t)?).unwrap_or(0),
                    failing_since: col::<Option<i64>>(&r, "failing_since", t)?.map(Timestamp),
                    next_attempt_at: col::<Option<i64>>(&r, "next_attempt_at", t)?.map(Timestamp),
                    last_error: col(&r, "last_error", t)?,
                })
            }

            async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool> {
                let r = sqlx::query(
                    "UPDATE event_destinations SET delivered_seq = $3, attempts = 0, failing_since = NULL, \
                     next_attempt_at = NULL, last_error = NULL WHERE name = $1 AND delivered_seq = $2",
                )
                .bind(name)
                .bind(from)
                .bind(to)
                .execute(&self.pool)
                .await
                .op("advancing a destination cursor")?;
                Ok(r.rows_affected() == 1)
            }

            async fn destination_failed(&self, st: &DestinationState) -> Result<()> {
                sqlx::query(
                    "UPDATE event_destinations SET attempts = $3, failing_since = $4, next_attempt_at = $5, \
                     last_error = $6 WHERE name = $1 AND delivered_seq = $2",
                )
                .bind(&st.name)
                .bind(st.delivered_seq)
                .bind(i32::try_from(st.attempts).unwrap_or(i32::MAX))
                .bind(st.failing_since.map(|t| t.0))
                .bind(st.next_attempt_at.map(|t| t.0))
                .bind(&st.last_error)
                .execute(&self.pool)
                .await
                .op("recording a delivery failure")?;
                Ok(())
            }

            async fn record_delivery(&self, a: &DeliveryAttempt) -> Result<()> {
                sqlx::query(
                    "INSERT INTO delivery_attempts (destination, event_id, feed_seq, at, status_code, latency_ms, error) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(&a.destination)
                .bind(&a.event_id)
                .bind(a.feed_seq)
                .bind(a.at.0)
                .bind(a.status_code.map(i32::from))
                .bind(a.latency_ms)
                .bind(&a.error)
                .execute(&self.pool)
                .await
                .op("recording a delivery attempt")?;
                Ok(())
            }

            async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>> {
                let rows = sqlx::query(
                    "SELECT destination, event_id, feed_seq, at, status_code, latency_ms, error \
                     FROM delivery_attempts WHERE destination = $1 ORDER BY id LIMIT $2",
                )
                .bind(destination)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .op("reading delivery attempts")?;
                let t = "delivery_attempts";
                rows.iter()
                    .map(|r| {
                        Ok(DeliveryAttempt {
                            destination: col(r, "destination", t)?,
                            event_id: col(r, "event_id", t)?,
                            feed_seq: col(r, "feed_seq", t)?,
                            at: Timestamp(col(r, "at", t)?),
                            status_code: col::<Option<i32>>(r, "status_code", t)?
                                .and_then(|c| u16::try_from(c).ok()),
                            latency_ms: col(r, "latency_ms", t)?,
                            error: col(r, "error", t)?,
                        })
                    })
                    .collect()
            }

            async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64> {
                let r = sqlx::query("DELETE FROM outbox WHERE feed_seq <= $1 AND occurred_at < $2")
                    .bind(max_seq)
                    .bind(before.0)
                    .execute(&self.pool)
                    .await
                    .op("pruning delivered events")?;
                Ok(r.rows_affected())
            }

            async fn take_tokens(
                &self,
                provider: &str,
                bucket: Bucket,
                want: u32,
                now: Timestamp,
            ) -> Result<(u32, f64)> {
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO rate_buckets (provider, tokens, updated_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (provider) DO NOTHING",
                )
                .bind(provider)
                .bind(bucket.burst)
                .bind(now.0)
                .execute(&mut *tx)
                .await
                .op("creating a rate bucket")?;
                let (tokens, updated_at): (f64, i64) = sqlx::query_as($lock_bucket)
                    .bind(provider)
                    .fetch_one(&mut *tx)
                    .await
                    .op("locking a rate bucket")?;
                let (granted, left) = bucket.take(tokens, Timestamp(updated_at), now, want);
                sqlx::query(
                    "UPDATE rate_buckets SET tokens = $2, updated_at = $3 WHERE provider = $1",
                )
                .bind(provider)
                .bind(left)
                .bind(now.0.max(updated_at))
                .execute(&mut *tx)
                .await
                .op("taking rate tokens")?;
                tx.commit().await.op("committing rate tokens")?;
                Ok((granted, left))
            }

            fn parallel_writers(&self) -> usize {
                $writers
            }

            fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
                self.start_listener();
                self.wake.subscribe()
            }
        }
    };
}
