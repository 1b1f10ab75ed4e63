"""The client against the real server (conftest.py): payments registered by
provider reference and by merchant reference reach their final status, read
through the feed iterator; one is resolved by hand; a signed push verifies
(and a tampered one does not); a 422 is a typed error naming its field; a
reader resumes from its stored position."""

from __future__ import annotations

import base64
import time

import pytest

from conftest import PUSH_SECRET, TOKEN
from finality_client import Finality, FinalityError, verify_push


@pytest.fixture(scope="module")
def finality(stack):
    return Finality(stack.base, TOKEN)


def test_payments_reach_their_final_status_through_the_feed(stack, finality):
    head = finality.feed().next_cursor
    ids = []
    for i in range(3):
        ref = stack.provider_payment()
        p = finality.register(
            id=f"py_pay_{i}_{ref}", provider="sim", provider_ref=ref,
            amount=1999, currency="USD", metadata={"order": i},
        )
        assert str(p.status) == "pending"
        ids.append(p.id)
    order = f"py_order_{time.time_ns()}"
    stack.provider_payment(merchant_ref=order)
    by_ref = finality.register(
        id=f"py_by_ref_{order}", provider="sim", merchant_ref=order, amount=1999, currency="USD"
    )
    ids.append(by_ref.id)

    done = finality.wait_for_final(ids, after=head, timeout=60)
    assert {i: str(e.status) for i, e in done.items()} == {i: "succeeded" for i in ids}
    assert done[ids[0]].metadata.to_dict() == {"order": 0}
    assert str(finality.get(ids[0]).status) == "succeeded"
    page = finality.list(status="succeeded", provider="sim", limit=500)
    listed = {p.id for p in page.payments}
    assert set(ids) <= listed


def test_a_payment_in_review_is_resolved_by_hand(finality):
    head = finality.feed().next_cursor
    # The simulated provider has never heard of it: after its one query it
    # goes to the review queue.
    p = finality.register(
        id=f"py_stuck_{time.time_ns()}", provider="sim_review",
        provider_ref=f"sim_unknown_{time.time_ns()}", amount=500, currency="USD",
    )
    for e in finality.events(after=head, wait="5s", until=time.monotonic() + 30):
        if e.payment_id == p.id and str(e.status) == "needs_review":
            break
    assert str(finality.get(p.id).status) == "needs_review"
    in_review = finality.list(status="needs_review", provider="sim_review")
    assert p.id in {x.id for x in in_review.payments}
    resolved = finality.resolve(
        p.id, status="failed", reason="customer confirmed the card was declined",
        actor="py-client-test",
    )
    assert str(resolved.status) == "failed"
    assert str(resolved.history[-1].source) == "manual"
    with pytest.raises(FinalityError) as e:
        finality.resolve(p.id, status="succeeded", reason="again", actor="py-client-test")
    assert e.value.status == 409
    # An open payment can be asked about now.
    open_one = finality.register(
        id=f"py_open_{time.time_ns()}", provider="sim",
        provider_ref=f"sim_unknown_open_{time.time_ns()}", amount=500, currency="USD",
    )
    assert finality.poll_now(open_one.id) in ("scheduled", "in_flight")


def test_pushes_verify_and_a_tampered_one_does_not(stack):
    until = time.monotonic() + 30
    while not stack.pushes:
        assert time.monotonic() < until, "no push arrived"
        time.sleep(0.1)
    headers, body = stack.pushes[0]
    event = verify_push(PUSH_SECRET, headers, body)
    assert event.id == {k.lower(): v for k, v in headers.items()}["webhook-id"]
    assert event.payment_id
    with pytest.raises(Exception):
        verify_push(PUSH_SECRET, headers, body.replace(b"payment", b"pavment"))
    other = "whsec_" + base64.b64encode(b"another secret of thirty-two bytes").decode()
    with pytest.raises(Exception):
        verify_push(other, headers, body)


def test_a_422_is_a_typed_error_naming_the_field(stack, finality):
    with pytest.raises(FinalityError) as e:
        finality.register(id="py_bad_amount", provider="sim", provider_ref="x", amount=0, currency="USD")
    assert (e.value.status, e.value.code, e.value.field) == (422, "invalid_field", "amount")
    with pytest.raises(FinalityError) as e:
        finality.get("py_nobody")
    assert e.value.code == "not_found"
    with pytest.raises(FinalityError) as e:
        Finality(stack.base, "wrong-token-0123456789").get("x")
    assert e.value.status == 401


def test_a_feed_reader_resumes_from_its_stored_position(finality):
    class Memory:
        position = None

        def load(self):
            return self.position

        def save(self, position):
            self.position = position

    store = Memory()
    first = []
    for e in finality.events(store=store, wait="1s", limit=2):
        first.append(e.id)
        if len(first) == 2:
            break
    # Stopped inside its first page: that page is read again, nothing skipped.
    assert store.position is None
    again = []
    for e in finality.events(store=store, wait="1s", limit=2):
        again.append(e.id)
        if len(again) == 3:
            break
    assert again[:2] == first
    assert store.position is not None, "the position was saved after a whole page"
    resumed = next(finality.events(store=store, wait="1s", limit=1, until=time.monotonic() + 10))
    assert resumed.id == again[2], "resumed after the page it finished"


def test_a_cursor_of_a_rewound_history_is_a_409_and_the_iterator_resumes(finality):
    # A cursor this feed's history does not have: of an epoch it never
    # had (as after a database failover that lost commits), and past its head.
    for cursor in ("n0such.3", "999999999"):
        with pytest.raises(FinalityError) as e:
            finality.feed(after=cursor)
        assert (e.value.status, e.value.code, e.value.field) == (409, "feed_rewound", "after")
        resume = e.value.detail["resume_after"]
        assert e.value.detail["lost"]["through"] == int(cursor.split(".")[-1])
        assert finality.feed(after=resume).next_cursor, "where it says to resume reads"
    told = []
    first = next(
        finality.events(after="n0such.3", wait="1s", on_rewound=told.append, until=time.monotonic() + 10)
    )
    assert told and told[0]["code"] == "feed_rewound"
    assert first.id == finality.feed(limit=1).events[0].id, "read on from the start"
