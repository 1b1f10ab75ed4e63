//! The console's handlers: read what the store knows, shape it for a
//! template, and route every action through the API's own functions.

mod audit;
mod events;
mod health;
mod payment;
mod providers;
mod respond;
mod review;
mod sign_in;

use crate::console::pages::respond::redirect;
pub use audit::audit;
pub use events::{act as event_action, events};
pub use health::{api, health};
pub use payment::{bulk_resolve, payment, poll_now, resolve};
pub use providers::providers;
pub use review::review;
pub use sign_in::{login, login_form, logout};

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

pub async fn home() -> Response {
    redirect("/console/review")
}

pub async fn stylesheet() -> Response {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("../console.css"),
    )
        .into_response()
}
