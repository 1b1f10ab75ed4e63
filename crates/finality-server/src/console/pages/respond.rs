//! How a console page answers: rendered, an error page, a redirect; the form it posted; the caller's address; the frame around every page.

use crate::auth::remote_addr;
use crate::console::session::Session;
use crate::console::views::*;
use crate::ApiError;
use askama::Template;
use axum::extract::FromRequestParts;
use axum::http::header::{CACHE_CONTROL, LOCATION};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

/// The statuses a person may settle a payment as, by name.
pub(crate) fn final_names() -> Vec<&'static str> {
    finality_core::Status::FINAL
        .map(finality_core::Status::as_str)
        .to_vec()
}

/// Rows per page of the queue and of the audit trail.
pub(crate) const PAGE: u32 = 50;

/// Most payments one bulk resolve takes.
pub(crate) const BULK_MAX: usize = 200;

pub(crate) fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => ([(CACHE_CONTROL, "no-store")], Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "console template failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be drawn; see the log",
            )
                .into_response()
        }
    }
}

pub(crate) fn error_page(status: StatusCode, message: impl Into<String>, back: &str) -> Response {
    let page = ErrorPage {
        status: format!(
            "{} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ),
        message: message.into(),
        back: back.into(),
    };
    let mut r = render(&page);
    *r.status_mut() = status;
    r
}

/// What a person may read of an error: the API's message, except for an
/// internal error, which is logged in full and shown as a pointer to the log.
pub(crate) fn public_message(e: &ApiError) -> String {
    match e {
        ApiError::Internal(detail) => {
            tracing::error!(error = %detail, "internal error in the console");
            "internal error; see the server log".to_string()
        }
        ApiError::Unavailable { detail, .. } => {
            tracing::warn!(error = %detail, "database unavailable");
            e.to_string()
        }
        other => other.to_string(),
    }
}

/// An API error as a page: the same status and message the API would give.
pub(crate) fn api_error(e: ApiError, back: &str) -> Response {
    let mut resp = error_page(e.status_code(), public_message(&e), back);
    if let ApiError::Forbidden(r) = e {
        // Audited by the same layer as the API's refusals.
        resp.extensions_mut().insert(r);
    }
    resp
}

pub(crate) fn redirect(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to.to_string())]).into_response()
}

pub(crate) fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A submitted form: repeated fields (`ids`) kept, in order.
pub(crate) struct Form(pub(crate) Vec<(String, String)>);

impl Form {
    pub(crate) fn parse(body: &[u8]) -> Form {
        Form(form_urlencoded::parse(body).into_owned().collect())
    }
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().trim().to_string()
    }
    pub(crate) fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// The caller's address, for the sign-in's audit record.
pub struct Remote(pub(crate) Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for Remote {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Remote(remote_addr(parts)))
    }
}

pub(crate) fn chrome(s: &Session, nav: &'static str, flash: Option<&str>) -> Chrome {
    Chrome {
        user: s.identity.name.to_string(),
        role: s.identity.role.to_string(),
        csrf: s.csrf.clone(),
        nav,
        flash: flash.and_then(|f| match f {
            "resolved" => Some("Resolved, under your name.".to_string()),
            "polled" => Some("Poll scheduled: a worker will ask the provider now.".to_string()),
            "in_flight" => Some("A worker is asking the provider right now.".to_string()),
            _ => None,
        }),
    }
}
