// A typed client for finality's HTTP API. The types are generated from
// finality's OpenAPI document (src/schema.ts, `npm run generate`); the calls
// go through openapi-fetch, so every path, parameter and body is checked by
// the compiler against that document. Written by hand: the error type, the
// feed's long-poll iterator (no generator expresses "resume from a stored
// position"), and push verification on the standardwebhooks package.

import createClient from "openapi-fetch";
import { Webhook } from "standardwebhooks";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type Payment = components["schemas"]["PaymentOut"];
export type PaymentIn = components["schemas"]["PaymentIn"];
export type PaymentPage = components["schemas"]["PaymentPage"];
export type Event = components["schemas"]["EventOut"];
export type FeedPage = components["schemas"]["FeedPage"];
export type Status = components["schemas"]["Status"];
export type ResolveIn = components["schemas"]["ResolveIn"];
export type ErrorDetail = components["schemas"]["ErrorDetail"];

/** A final status: the payment will not change again on its own. */
export const FINAL: readonly Status[] = ["succeeded", "failed", "cancelled", "reversed"];

/**
 * Every error answer of finality (4xx, 5xx), typed: branch on `code`
 * (`invalid_field`, `not_found`, `transition_not_allowed`, …); `field`
 * names the request field at fault when one is.
 */
export class FinalityError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly detail: ErrorDetail;

  constructor(status: number, detail: ErrorDetail) {
    super(`${status} ${detail.code}${detail.field ? ` (${detail.field})` : ""}: ${detail.message}`);
    this.name = "FinalityError";
    this.status = status;
    this.code = detail.code;
    this.field = detail.field ?? undefined;
    this.detail = detail;
  }
}

/** Where a feed reader keeps its position between runs (a file, a row). */
export interface PositionStore {
  load(): Promise<string | undefined> | string | undefined;
  save(position: string): Promise<void> | void;
}

export interface ClientOptions {
  /** finality's address, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A bearer token (`FINALITY_API_TOKEN` or a named token's secret). */
  token: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

export interface EventsOptions {
  /** Start after this position (a `next_cursor`); else the store's, else the oldest kept. */
  after?: string;
  /** Saves each page's `next_cursor` once its events were yielded. */
  store?: PositionStore;
  /** How long each request waits at the head of the feed: `30s` (at most `60s`). */
  wait?: string;
  /** Events per request, 1 to 1000. */
  limit?: number;
  /** Stops the iteration (between requests, and aborts a waiting one). */
  signal?: AbortSignal;
  /**
   * Told when the position was from a history of the feed that no longer
   * exists (`409 feed_rewound`: a database failover lost commits, or a
   * restore); the iteration then reads on from `resume_after`, and events
   * may repeat under their ids. Without it, the same happens silently.
   */
  onRewound?: (detail: ErrorDetail) => Promise<void> | void;
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

function unwrap<T>(r: Answer<T>): T {
  if (r.error !== undefined || r.data === undefined) {
    const body = r.error as { error?: ErrorDetail } | undefined;
    const detail: ErrorDetail = body?.error ?? {
      code: "unexpected",
      message: `HTTP ${r.response.status} without finality's error body`,
    };
    throw new FinalityError(r.response.status, detail);
  }
  return r.data;
}

/** The client: one per finality and token. */
export class Finality {
  readonly api: ReturnType<typeof createClient<paths>>;

  constructor(options: ClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/$/, ""),
      headers: { authorization: `Bearer ${options.token}` },
      fetch: options.fetch,
    });
  }

  /**
   * Register a payment to drive to its final status, by `provider_ref` or,
   * when the provider's id is not known (the create call timed out), by
   * `merchant_ref`. Idempotent on `id`.
   */
  async register(payment: PaymentIn): Promise<Payment> {
    return unwrap(await this.api.POST("/v1/payments", { body: payment }));
  }

  async get(id: string): Promise<Payment> {
    return unwrap(await this.api.GET("/v1/payments/{id}", { params: { path: { id } } }));
  }

  /** One page; pass its `next_cursor` as `cursor` for the next. */
  async list(
    query: { status?: Status; provider?: string; limit?: number; cursor?: string } = {},
  ): Promise<PaymentPage> {
    return unwrap(await this.api.GET("/v1/payments", { params: { query } }));
  }

  /** Settle a payment by hand (from review or any open status). */
  async resolve(id: string, body: ResolveIn): Promise<Payment> {
    return unwrap(
      await this.api.POST("/v1/payments/{id}/resolve", { params: { path: { id } }, body }),
    );
  }

  /** Ask the provider now rather than at the next scheduled poll. */
  async pollNow(id: string): Promise<string> {
    return unwrap(await this.api.POST("/v1/payments/{id}/poll", { params: { path: { id } } }))
      .poll;
  }

  /** One page of the feed after `after`, waiting at its head up to `wait`. */
  async feed(
    query: { after?: string; wait?: string; limit?: number } = {},
    signal?: AbortSignal,
  ): Promise<FeedPage> {
    return unwrap(await this.api.GET("/v1/events", { params: { query }, signal }));
  }

  /**
   * Every event from a position on, in commit order, long-polling at the
   * head: `for await (const e of finality.events({ store }))`. The position
   * is saved after each page's events were handed out, so a reader that
   * stops (or crashes) resumes after the last page it finished; an event may
   * come twice across a crash, never be skipped. Deduplicate on `event.id`.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<Event> {
    let after = options.after ?? (await options.store?.load()) ?? undefined;
    const wait = options.wait ?? "30s";
    while (!options.signal?.aborted) {
      let page: FeedPage;
      try {
        page = await this.feed({ after, wait, limit: options.limit }, options.signal);
      } catch (e) {
        if (options.signal?.aborted) return;
        if (e instanceof FinalityError && e.code === "feed_rewound" && e.detail.resume_after) {
          await options.onRewound?.(e.detail);
          after = e.detail.resume_after;
          await options.store?.save(after);
          continue;
        }
        throw e;
      }
      for (const event of page.events) yield event;
      if (page.next_cursor !== after) {
        after = page.next_cursor;
        await options.store?.save(after);
      }
    }
  }

  /**
   * Wait for payments to reach a final status, reading the feed from
   * `after` (the position before they were registered): their final
   * payments by id.
   */
  async waitForFinal(
    ids: Iterable<string>,
    options: EventsOptions & { timeoutMs?: number } = {},
  ): Promise<Map<string, Event>> {
    const open = new Set(ids);
    const done = new Map<string, Event>();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), options.timeoutMs ?? 120_000);
    const signal = options.signal
      ? AbortSignal.any([options.signal, stop.signal])
      : stop.signal;
    try {
      for await (const e of this.events({ ...options, signal })) {
        if (open.has(e.payment_id) && FINAL.includes(e.status)) {
          open.delete(e.payment_id);
          done.set(e.payment_id, e);
          if (open.size === 0) break;
        }
      }
    } finally {
      clearTimeout(timer);
    }
    if (open.size > 0) {
      throw new Error(`not final in time: ${[...open].join(", ")}`);
    }
    return done;
  }
}

/**
 * Verify one of finality's signed pushes (Standard Webhooks: `webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) with the destination's
 * `whsec_…` secret, and return its event. Throws when the signature or the
 * timestamp does not verify: answer 4xx and do not act on it.
 */
export function verifyPush(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
): Event {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v.join(",") : v;
  }
  return new Webhook(secret).verify(body, flat) as Event;
}
