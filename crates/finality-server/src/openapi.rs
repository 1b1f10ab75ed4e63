//! The HTTP contract as a document: OpenAPI 3.1, generated from the
//! handlers themselves (`utoipa`), so a `/v1` route cannot exist without
//! its description; served at `/v1/openapi.json` and rendered in the console.

use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The body of every error answer (4xx and 5xx): a stable `code` to branch
/// on, a `message` for people, and the request `field` at fault when one is.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// See [`ErrorBody`].
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    /// `invalid_field`, `malformed_json`, `not_found`, `unauthorized`,
    /// `forbidden`, `id_conflict`, `transition_not_allowed`, `already_final`,
    /// `too_large`, `unavailable`, `internal`, `archived`, `feed_rewound`, …
    pub code: String,
    pub message: String,
    /// The request field at fault (`amount`, `status`, `cursor`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// `archived` (410): the archive file holding the payment, relative
    /// to the archive directory (`finality archive restore` takes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// `archived` (410): when it was archived (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    /// `feed_rewound` (409): the positions whose events the reader may
    /// have read and that this feed's history no longer has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostRange>,
    /// `feed_rewound` (409): the cursor to read on from (events from it on
    /// may repeat ones read before, under the same ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_after: Option<String>,
}

/// Feed positions after `after`, up to and including `through`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LostRange {
    pub after: i64,
    pub through: i64,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// Every operation that can answer 401 can also answer 429: failed
/// authentications are counted per address and per token name (see
/// `throttle`), and a source over its limit is answered 429 before its
/// token is looked at. Added here once rather than on every handler, so a
/// new route cannot forget it.
pub(crate) struct ThrottledAuth;

impl Modify for ThrottledAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        for item in doc.paths.paths.values_mut() {
            let ops = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for op in ops.into_iter().flatten() {
                let r = &mut op.responses.responses;
                if r.contains_key("401") && !r.contains_key("429") {
                    let answer = ResponseBuilder::new()
                        .description(
                            "Too many failed authentications from this address or for this \
token name; retry after `Retry-After`",
                        )
                        .content(
                            "application/json",
                            ContentBuilder::new()
                                .schema(Some(Ref::from_schema_name("ErrorBody")))
                                .build(),
                        )
                        .build();
                    r.insert("429".into(), RefOr::T(answer));
                }
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "finality",
        description = "Drives payments, refunds and payouts to their final status with the \
provider. Every `/v1` route needs `Authorization: Bearer <token>`; a token has a name and a role \
(`service`: register and read; `reviewer`: read, resolve, poll now, audit; `admin`: everything), \
and the name is recorded as the actor of every manual action. Errors are `ErrorBody`. Lists page \
by an opaque `cursor`: pass the `next_cursor` of one page to get the next; `null` means the last \
page. Any route may also answer 408 (body too slow), 413 (body over 1 MiB), 431 (headers over \
32 KiB) and 503 (database unavailable; nothing was stored, retry)."
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(ErrorBody, ErrorDetail, Cursor)),
    tags(
        (name = "payments", description = "Register, read and settle payments"),
        (name = "events", description = "The feed of status changes"),
        (name = "accounts", description = "A provider's accounts (connected accounts, merchant accounts, apps), added at run time"),
        (name = "operations", description = "Statistics, the audit trail, the sweep's runs, this document"),
    )
)]
pub struct ApiDoc;

/// A list's position: pass the `next_cursor` of one page as `cursor` to get
/// the next; omit it for the first page. Opaque: do not build one.
#[derive(ToSchema)]
#[allow(dead_code)] // exists for its schema: every list parameter refers to it
pub struct Cursor(String);

pub(crate) fn router() -> utoipa_axum::router::OpenApiRouter<crate::App> {
    utoipa_axum::router::OpenApiRouter::new().routes(utoipa_axum::routes!(document))
}

/// The whole document, built once from the routes.
pub fn document_json() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        crate::api_doc()
            .to_pretty_json()
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    })
}

/// This document (no token needed).
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi_document", tag = "operations", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of `/v1`",
        content_type = "application/json", body = Object)))]
async fn document() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}

#[cfg(test)]
mod tests {
    /// `docs/openapi.json` is this document, so a reader sees the contract
    /// without running anything; `FINALITY_UPDATE_DOCS=1` rewrites it.
    #[test]
    fn docs_copy_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        let now = format!("{}\n", super::document_json());
        if std::env::var_os("FINALITY_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == now,
            "docs/openapi.json is stale: run `FINALITY_UPDATE_DOCS=1 cargo test -p finality-server --lib`"
        );
    }
}
