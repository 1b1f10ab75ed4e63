"""A typed client for finality's HTTP API.

The requests and models are generated from finality's OpenAPI document by
openapi-python-client (``finality_client._generated``; ``python
generate.py`` regenerates them). Written by hand, where a generator cannot
express it: the typed error, the feed's long-poll iterator that resumes from
a stored position, and the check of finality's signed pushes (Standard
Webhooks' own package).

    from finality_client import Finality
    finality = Finality("http://127.0.0.1:8080", token)
    finality.register(id="order-1", provider="stripe", provider_ref="pi_123",
                      amount=1999, currency="USD")
    for event in finality.events(store=position_file):
        ...
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from standardwebhooks.webhooks import Webhook

from ._generated.api.events import read_feed
from ._generated.api.payments import (
    get_payment,
    list_payments,
    poll_now,
    register_payment,
    resolve_payment,
)
from ._generated.client import AuthenticatedClient
from ._generated.models import (
    EventOut,
    FeedPage,
    PaymentIn,
    PaymentOut,
    PaymentPage,
    ResolveIn,
    Status,
)
from ._generated.types import UNSET, Response

__all__ = [
    "FINAL",
    "EventOut",
    "FeedPage",
    "Finality",
    "FinalityError",
    "PaymentOut",
    "PaymentPage",
    "PositionStore",
    "Status",
    "verify_push",
]

#: Final statuses: the payment will not change again on its own.
FINAL = frozenset({"succeeded", "failed", "cancelled", "reversed"})


class FinalityError(Exception):
    """Every error answer of finality (4xx, 5xx): branch on ``code``
    (``invalid_field``, ``not_found``, ``transition_not_allowed``, …);
    ``field`` names the request field at fault when one is."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        detail: dict[str, Any] | None = None,
    ):
        super().__init__(f"{status} {code}{f' ({field})' if field else ''}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        #: The whole error object (``feed_rewound`` adds ``lost`` and
        #: ``resume_after``).
        self.detail = detail or {}


class PositionStore(Protocol):
    """Where a feed reader keeps its position between runs."""

    def load(self) -> str | None: ...

    def save(self, position: str) -> None: ...


def _ok(resp: Response, want: type) -> Any:
    if isinstance(resp.parsed, want):
        return resp.parsed
    try:
        detail = json.loads(resp.content)["error"]
        raise FinalityError(
            int(resp.status_code),
            detail["code"],
            detail["message"],
            detail.get("field"),
            detail,
        )
    except (ValueError, KeyError, TypeError):
        raise FinalityError(
            int(resp.status_code), "unexpected", resp.content.decode("utf-8", "replace")[:200]
        ) from None


def _opt(v: Any) -> Any:
    return UNSET if v is None else v


class Finality:
    """One per finality and token. ``api`` is the generated client, for
    every other call (``finality_client._generated.api.*``)."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 70.0):
        self.api = AuthenticatedClient(
            base_url=base_url.rstrip("/"),
            token=token,
            timeout=timeout,
            raise_on_unexpected_status=False,
        )

    def register(
        self,
        *,
        id: str,
        provider: str,
        amount: int,
        currency: str,
        provider_ref: str | None = None,
        merchant_ref: str | None = None,
        kind: str | None = None,
        account: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> PaymentOut:
        """Register a payment to drive to its final status, by
        ``provider_ref`` or, when the provider's id is not known (the create
        call timed out), by ``merchant_ref``. Idempotent on ``id``."""
        body: dict[str, Any] = {
            "id": id,
            "provider": provider,
            "amount": amount,
            "currency": currency,
        }
        for k, v in (
            ("provider_ref", provider_ref),
            ("merchant_ref", merchant_ref),
            ("kind", kind),
            ("account", account),
            ("metadata", dict(metadata) if metadata is not None else None),
        ):
            if v is not None:
                body[k] = v
        resp = register_payment.sync_detailed(client=self.api, body=PaymentIn.from_dict(body))
        return _ok(resp, PaymentOut)

    def get(self, id: str) -> PaymentOut:
        return _ok(get_payment.sync_detailed(id, client=self.api), PaymentOut)

    def list(
        self,
        *,
        status: str | None = None,
        provider: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> PaymentPage:
        """One page; pass its ``next_cursor`` as ``cursor`` for the next."""
        resp = list_payments.sync_detailed(
            client=self.api,
            status=_opt(Status(status) if status else None),
            provider=_opt(provider),
            limit=_opt(limit),
            cursor=_opt(cursor),
        )
        return _ok(resp, PaymentPage)

    def resolve(
        self, id: str, *, status: str, reason: str, actor: str | None = None, note: str | None = None
    ) -> PaymentOut:
        """Settle a payment by hand (from review or any open status)."""
        body: dict[str, Any] = {"status": status, "reason": reason}
        if actor is not None:
            body["actor"] = actor
        if note is not None:
            body["note"] = note
        resp = resolve_payment.sync_detailed(id, client=self.api, body=ResolveIn.from_dict(body))
        return _ok(resp, PaymentOut)

    def poll_now(self, id: str) -> str:
        """Ask the provider now rather than at the next scheduled poll."""
        from ._generated.models import PollAnswer

        return _ok(poll_now.sync_detailed(id, client=self.api), PollAnswer).poll

    def feed(self, *, after: str | None = None, wait: str | None = None, limit: int | None = None) -> FeedPage:
        """One page of the feed after ``after``, waiting at its head up to ``wait``."""
        resp = read_feed.sync_detailed(
            client=self.api, after=_opt(after), wait=_opt(wait), limit=_opt(limit)
        )
        return _ok(resp, FeedPage)

    def events(
        self,
        *,
        after: str | None = None,
        store: PositionStore | None = None,
        wait: str = "30s",
        limit: int | None = None,
        until: float | None = None,
        on_rewound: Callable[[dict[str, Any]], None] | None = None,
    ) -> Iterator[EventOut]:
        """Every event from a position on, in commit order, long-polling at
        the head. The position is saved after each page's events were handed
        out, so a reader that stops (or crashes) resumes after the last page
        it finished: an event may come twice across a crash, never be
        skipped. Deduplicate on ``event.id``. ``until``: a ``time.monotonic()``
        after which the iteration ends. A position from a history of the
        feed that no longer exists (``409 feed_rewound``: a database
        failover lost commits, or a restore) is replaced by the
        ``resume_after`` the server names, after ``on_rewound`` is told
        (with the error's detail); events may then repeat under their ids."""
        position = after if after is not None else (store.load() if store else None)
        while until is None or time.monotonic() < until:
            try:
                page = self.feed(after=position, wait=wait, limit=limit)
            except FinalityError as e:
                resume = e.detail.get("resume_after")
                if e.code != "feed_rewound" or not isinstance(resume, str):
                    raise
                if on_rewound is not None:
                    on_rewound(e.detail)
                position = resume
                if store is not None:
                    store.save(position)
                continue
            yield from page.events
            if page.next_cursor != position:
                position = page.next_cursor
                if store is not None:
                    store.save(position)

    def wait_for_final(
        self, ids: Iterable[str], *, after: str | None = None, timeout: float = 120.0, wait: str = "5s"
    ) -> dict[str, EventOut]:
        """Read the feed from ``after`` (the position before the payments
        were registered) until each of ``ids`` has a final status."""
        open_ids = set(ids)
        done: dict[str, EventOut] = {}
        for event in self.events(after=after, wait=wait, until=time.monotonic() + timeout):
            if event.payment_id in open_ids and str(event.status) in FINAL:
                open_ids.discard(event.payment_id)
                done[event.payment_id] = event
                if not open_ids:
                    return done
        raise TimeoutError(f"not final in {timeout} s: {sorted(open_ids)}")


def verify_push(secret: str, headers: Mapping[str, str], body: bytes | str) -> EventOut:
    """Verify one of finality's signed pushes (Standard Webhooks:
    ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``) with the
    destination's ``whsec_…`` secret and return its event. Raises when the
    signature or timestamp does not verify: answer 4xx and do not act on it."""
    flat = {k.lower(): v for k, v in headers.items()}
    data = body.decode() if isinstance(body, bytes) else body
    payload = Webhook(secret).verify(data, flat)
    return EventOut.from_dict(payload)
