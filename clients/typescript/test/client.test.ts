// The client against the real server: `finality serve` and `finality sim
// serve` on loopback (test/harness.ts). Payments registered by provider
// reference and by merchant reference reach their final status, read
// through the feed iterator; one is resolved by hand; a signed push
// verifies (and a tampered one does not); a 422 is a typed error naming
// its field; a reader resumes from its stored position.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Finality, FinalityError, verifyPush, type PositionStore } from "../src/index.js";
import { PUSH_SECRET, TOKEN, providerPayment, start, type Stack } from "./harness.js";

let stack: Stack;
let finality: Finality;

before(async () => {
  stack = await start();
  finality = new Finality({ baseUrl: stack.base, token: TOKEN });
});

after(async () => {
  await stack?.stop();
});

test("payments reach their final status through the feed", async () => {
  const head = (await finality.feed()).next_cursor;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const ref = await providerPayment(stack.sim);
    const p = await finality.register({
      id: `ts_pay_${i}_${ref}`,
      provider: "sim",
      provider_ref: ref,
      amount: 1999,
      currency: "USD",
      metadata: { order: i },
    });
    assert.equal(p.status, "pending");
    ids.push(p.id);
  }
  // By merchant reference: the provider's id was never known here.
  const order = `ts_order_${Date.now()}`;
  await providerPayment(stack.sim, order);
  const byRef = await finality.register({
    id: `ts_by_ref_${order}`,
    provider: "sim",
    merchant_ref: order,
    amount: 1999,
    currency: "USD",
  });
  ids.push(byRef.id);

  const done = await finality.waitForFinal(ids, { after: head, wait: "5s", timeoutMs: 60_000 });
  for (const id of ids) {
    assert.equal(done.get(id)?.status, "succeeded", id);
  }
  assert.deepEqual(done.get(ids[0])?.metadata, { order: 0 });
  const again = await finality.get(ids[0]);
  assert.equal(again.status, "succeeded");
  const page = await finality.list({ status: "succeeded", provider: "sim", limit: 500 });
  assert.ok(ids.every((id) => page.payments.some((p) => p.id === id)));
});

test("a payment in review is resolved by hand", async () => {
  const head = (await finality.feed()).next_cursor;
  // The simulated provider has never heard of it: after its one query it
  // goes to the review queue.
  const p = await finality.register({
    id: `ts_stuck_${Date.now()}`,
    provider: "sim_review",
    provider_ref: `sim_unknown_${Date.now()}`,
    amount: 500,
    currency: "USD",
  });
  for await (const e of finality.events({ after: head, wait: "5s", signal: AbortSignal.timeout(30_000) })) {
    if (e.payment_id === p.id && e.status === "needs_review") break;
  }
  assert.equal((await finality.get(p.id)).status, "needs_review");
  const inReview = await finality.list({ status: "needs_review", provider: "sim_review" });
  assert.ok(inReview.payments.some((x) => x.id === p.id));
  const resolved = await finality.resolve(p.id, {
    status: "failed",
    reason: "customer confirmed the card was declined",
    actor: "ts-client-test",
  });
  assert.equal(resolved.status, "failed");
  assert.equal(resolved.history?.at(-1)?.source, "manual");
  // Resolving it again to another status is refused, as a typed error.
  await assert.rejects(
    finality.resolve(p.id, { status: "succeeded", reason: "again", actor: "ts-client-test" }),
    (e: unknown) => e instanceof FinalityError && e.status === 409,
  );
  // An open payment can be asked about now.
  const open = await finality.register({
    id: `ts_open_${Date.now()}`,
    provider: "sim",
    provider_ref: `sim_unknown_open_${Date.now()}`,
    amount: 500,
    currency: "USD",
  });
  assert.ok(["scheduled", "in_flight"].includes(await finality.pollNow(open.id)));
});

test("finality's pushes verify, and a tampered one does not", async () => {
  const until = Date.now() + 30_000;
  while (stack.pushes.length === 0) {
    if (Date.now() > until) throw new Error("no push arrived");
    await new Promise((r) => setTimeout(r, 100));
  }
  const push = stack.pushes[0];
  const event = verifyPush(PUSH_SECRET, push.headers, push.body);
  assert.equal(event.id, push.headers["webhook-id"]);
  assert.ok(event.payment_id.length > 0);
  assert.throws(() => verifyPush(PUSH_SECRET, push.headers, push.body.replace("payment", "pavment")));
  const other = "whsec_" + Buffer.from("another secret of thirty-two bytes").toString("base64");
  assert.throws(() => verifyPush(other, push.headers, push.body));
});

test("a 422 is a typed error naming the field", async () => {
  await assert.rejects(
    finality.register({ id: "ts_bad_amount", provider: "sim", provider_ref: "x", amount: 0, currency: "USD" }),
    (e: unknown) => {
      assert.ok(e instanceof FinalityError, String(e));
      assert.equal(e.status, 422);
      assert.equal(e.code, "invalid_field");
      assert.equal(e.field, "amount");
      return true;
    },
  );
  await assert.rejects(finality.get("ts_nobody"), (e: unknown) => e instanceof FinalityError && e.code === "not_found");
  const anonymous = new Finality({ baseUrl: stack.base, token: "wrong-token-0123456789" });
  await assert.rejects(anonymous.get("x"), (e: unknown) => e instanceof FinalityError && e.status === 401);
});

test("a feed reader resumes from its stored position", async () => {
  let saved: string | undefined;
  const store: PositionStore = {
    load: () => saved,
    save: (p) => {
      saved = p;
    },
  };
  const first: string[] = [];
  for await (const e of finality.events({ store, wait: "1s", limit: 2 })) {
    first.push(e.id);
    if (first.length === 2) break;
  }
  // Stopped inside its first page: that page is read again, nothing skipped.
  assert.equal(saved, undefined);
  const again: string[] = [];
  for await (const e of finality.events({ store, wait: "1s", limit: 2 })) {
    again.push(e.id);
    if (again.length === 3) break;
  }
  assert.deepEqual(again.slice(0, 2), first);
  assert.ok(saved !== undefined, "the position was saved after a whole page");
  const resumed: string[] = [];
  for await (const e of finality.events({ store, wait: "1s", limit: 1, signal: AbortSignal.timeout(10_000) })) {
    resumed.push(e.id);
    break;
  }
  assert.equal(resumed[0], again[2], "resumed after the page it finished");
});

test("a cursor of a rewound history is a 409, and the iterator resumes", async () => {
  // A cursor this feed's history does not have: of an epoch it never had
  // (as after a database failover that lost commits), and past its head.
  for (const cursor of ["n0such.3", "999999999"]) {
    await assert.rejects(finality.feed({ after: cursor }), (e: unknown) => {
      assert.ok(e instanceof FinalityError, String(e));
      assert.equal(e.status, 409);
      assert.equal(e.code, "feed_rewound");
      assert.equal(e.field, "after");
      assert.equal(e.detail.lost?.through, Number(cursor.split(".").pop()));
      assert.ok(e.detail.resume_after);
      return true;
    });
  }
  const told: string[] = [];
  let first: string | undefined;
  for await (const e of finality.events({
    after: "n0such.3",
    wait: "1s",
    onRewound: (d) => {
      told.push(d.code);
    },
    signal: AbortSignal.timeout(10_000),
  })) {
    first = e.id;
    break;
  }
  assert.deepEqual(told, ["feed_rewound"]);
  assert.equal(first, (await finality.feed({ limit: 1 })).events[0]?.id, "read on from the start");
});
