//! One error type for every handler: client errors carry a code, a message
//! and the field at fault; server errors are logged in full and answered
//! with an opaque 500.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 422: a field is missing or invalid.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// 400: the body is not JSON at all.
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    NotFound(String),
    /// 410: the payment was archived by retention; where to find it.
    #[error("{message}")]
    Gone {
        message: String,
        archive: String,
        archived_at: String,
    },
    /// 409: conflicts with what is already stored.
    #[error("{message}")]
    Conflict {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    #[error("missing or invalid bearer token")]
    Unauthorized,
    /// 403: the token is valid, its role does not allow this.
    #[error("{0}")]
    Forbidden(Refused),
    /// 401 on a webhook: it could not be proven authentic.
    #[error("webhook rejected ({0}); nothing was stored")]
    BadSignature(&'static str),
    #[error("request body larger than {0} bytes")]
    TooLarge(usize),
    /// 503: the database is unreachable or cannot take writes; nothing of
    /// the request was stored, and it may be retried (providers do).
    #[error("the database is unavailable ({reason}); nothing was stored, retry later")]
    Unavailable {
        /// A few words (unreachable, disk full, read-only…).
        reason: &'static str,
        /// The full error, for the log only.
        detail: String,
    },
    /// 429: too many failures (or uploads) from this caller; retry after
    /// `retry_after` seconds.
    #[error("{message}")]
    TooMany { message: String, retry_after: u64 },
    /// 409 `feed_rewound`: the reader's cursor is from a feed history that
    /// no longer exists (a failover lost commits, a restore): positions
    /// after `lost_after` up to `lost_through` were given again to other
    /// events; read on from `resume_after`.
    #[error("{message}")]
    FeedRewound {
        message: String,
        lost_after: i64,
        lost_through: i64,
        resume_after: String,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status this error answers with.
    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Malformed(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Gone { .. } => StatusCode::GONE,
            ApiError::Conflict { .. } | ApiError::FeedRewound { .. } => StatusCode::CONFLICT,
            ApiError::Unauthorized | ApiError::BadSignature(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        ApiError::Invalid {
            field: field.into(),
            message: message.to_string(),
        }
    }
}

impl From<finality_store::StoreError> for ApiError {
    fn from(e: finality_store::StoreError) -> Self {
        if let Some(reason) = e.unavailable_reason() {
            ApiError::Unavailable {
                reason,
                detail: e.to_string(),
            }
        } else {
            ApiError::Internal(e.to_string())
        }
    }
}

impl From<finality_core::money::FieldError> for ApiError {
    fn from(e: finality_core::money::FieldError) -> Self {
        ApiError::invalid(e.field, e.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, field) = match &self {
            ApiError::Invalid { field, .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_field",
                Some(field.clone()),
            ),
            ApiError::Malformed(_) => (StatusCode::BAD_REQUEST, "malformed_json", None),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", None),
            ApiError::Gone {
                message,
                archive,
                archived_at,
            } => {
                let body = json!({"error": {"code": "archived", "message": message,
                    "archive": archive, "archived_at": archived_at}});
                return (StatusCode::GONE, Json(body)).into_response();
            }
            ApiError::Conflict { code, field, .. } => (StatusCode::CONFLICT, *code, field.clone()),
            ApiError::FeedRewound {
                message,
                lost_after,
                lost_through,
                resume_after,
            } => {
                let body = json!({"error": {"code": "feed_rewound", "message": message,
                    "field": "after",
                    "lost": {"after": lost_after, "through": lost_through},
                    "resume_after": resume_after}});
                return (StatusCode::CONFLICT, Json(body)).into_response();
            }
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized", None),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", None),
            ApiError::BadSignature(_) => (StatusCode::UNAUTHORIZED, "invalid_signature", None),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large", None),
            ApiError::Unavailable { detail, .. } => {
                tracing::warn!(error = %detail, "database unavailable");
                let body = json!({"error": {"code": "unavailable", "message": self.to_string()}});
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(axum::http::header::RETRY_AFTER, "5")],
                    Json(body),
                )
                    .into_response();
            }
            ApiError::TooMany { retry_after, .. } => {
                let body =
                    json!({"error": {"code": "too_many_requests", "message": self.to_string()}});
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(axum::http::header::RETRY_AFTER, retry_after.to_string())],
                    Json(body),
                )
                    .into_response();
            }
            ApiError::Internal(detail) => {
                tracing::error!(error = %detail, "internal error");
                let body = json!({"error": {"code": "internal", "message": "internal error; see the server log"}});
                return (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
            }
        };
        let mut err = json!({"code": code, "message": self.to_string()});
        if let Some(f) = field {
            err["field"] = json!(f);
        }
        let mut resp = (status, Json(json!({ "error": err }))).into_response();
        if let ApiError::Forbidden(r) = self {
            resp.extensions_mut().insert(r);
        }
        resp
    }
}

/// An action a caller's role does not allow: who asked (as authenticated),
/// with which role, for what. A 403 answer carries it as an extension for
/// the audit layer (`refusals::audit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub actor: String,
    pub role: String,
    pub doing: &'static str,
    /// What the caller is told.
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `Query<T>` whose refusal is the API's own 422 naming `query` (axum's
/// own is a 400 in plain text, which the OpenAPI document does not list):
/// the one way a handler takes its query string.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for ApiQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(q)| ApiQuery(q))
            .map_err(|e| ApiError::invalid("query", e.body_text()))
    }
}
