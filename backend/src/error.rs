//! The one error type handlers return, and the extractors that turn axum's
//! own rejections into it, so every failure is JSON `{code, message}`.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use failpass_shared::api::query::FieldError;
use failpass_shared::error::ApiErrorBody;
use serde::de::DeserializeOwned;

use crate::db::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unauthorized(String),
    /// Signed in (or a token), but not allowed to do this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed sign-ins; retry after this many seconds.
    #[error("{0}")]
    TooManyRequests(String, u64),
    /// The Host header names another server (DNS rebinding, a misdirected request).
    #[error("{0}")]
    MisdirectedRequest(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status_and_code().0
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::TooManyRequests(..) => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
            ApiError::MisdirectedRequest(_) => (StatusCode::MISDIRECTED_REQUEST, "misdirected_request"),
            ApiError::UnsupportedMediaType(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            ApiError::MethodNotAllowed(_) => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            ApiError::Internal(e) => {
                tracing::error!(error.cause_chain = ?e, "internal error");
                "internal error; the server log has the cause".to_owned()
            }
            other => other.to_string(),
        };
        let mut response = (status, Json(ApiErrorBody { code: code.to_owned(), message })).into_response();
        if let ApiError::TooManyRequests(_, seconds) = &self {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(*seconds));
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"failpass\""),
            );
        }
        response
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        ApiError::BadRequest(e.to_string())
    }
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::NotFound(what) => ApiError::NotFound(format!("{what} not found")),
            StorageError::Conflict(m) => ApiError::Conflict(m),
            StorageError::Invalid { field, message } => ApiError::BadRequest(format!("{field}: {message}")),
            other => match other.unavailable() {
                Some(cause) => {
                    tracing::error!(error.cause_chain = ?other, "database unavailable");
                    ApiError::Unavailable(format!("the database is unavailable: {cause}; nothing was changed"))
                }
                None => ApiError::Internal(other.into()),
            },
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `Json<T>` whose rejections are [`ApiError`]s naming what is wrong.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // A NUL character in any string is refused by name before anything
        // else reads the body (PostgreSQL cannot store one).
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|_| too_large())?;
        if crate::input::may_hold_nul(&bytes)
            && let Some(field) =
                serde_json::from_slice::<serde_json::Value>(&bytes).ok().as_ref().and_then(crate::input::nul_path)
        {
            return Err(ApiError::BadRequest(crate::input::nul_message(&field)));
        }
        let req = Request::from_parts(parts, axum::body::Body::from(bytes));
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with `Content-Type: application/json`".into(),
            )),
            Err(JsonRejection::JsonDataError(e)) => Err(ApiError::BadRequest(json_message(&e.body_text()))),
            Err(JsonRejection::JsonSyntaxError(e)) => Err(ApiError::BadRequest(json_message(&e.body_text()))),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large()),
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

fn too_large() -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "the body is larger than the {} MiB limit for one request; send bulk data to POST /api/v1/import",
        BODY_LIMIT >> 20
    ))
}

/// Request body limit for JSON endpoints (imports stream and have none).
pub const BODY_LIMIT: usize = 4 << 20;

/// axum says "Failed to deserialize the JSON body into the target type: x";
/// keep the part that names the field.
fn json_message(text: &str) -> String {
    let detail = text.split_once(": ").map_or(text, |(_, rest)| rest);
    format!("invalid JSON body: {detail}")
}

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        Json(self.0).into_response()
    }
}

/// A path parameter, with a JSON error naming it when it does not parse.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if parts.uri.path().to_ascii_lowercase().contains("%00") {
            return Err(ApiError::BadRequest(
                "path: contains a NUL character (%00), which failpass does not store".into(),
            ));
        }
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                use axum::extract::path::ErrorKind;
                // The parameter and the value at fault (not the path's last segment:
                // `/deliveries/abc/redeliver` names `abc`).
                Err(ApiError::BadRequest(match e.kind() {
                    ErrorKind::ParseErrorAtKey { key, value, .. } => format!("{key}: `{value}` is not a number"),
                    ErrorKind::ParseErrorAtIndex { value, .. } | ErrorKind::ParseError { value, .. } => {
                        format!("id: `{value}` is not a number")
                    }
                    _ => e.body_text(),
                }))
            }
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

/// The raw query as decoded `(key, value)` pairs, for the shared parsers.
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or_default();
        let pairs = serde_urlencoded::from_str::<Vec<(String, String)>>(raw)
            .map_err(|e| ApiError::BadRequest(format!("query string: {e}")))?;
        // A parameter given twice is ambiguous: say so rather than pick one.
        for (i, (k, v)) in pairs.iter().enumerate() {
            if k.contains('\0') || v.contains('\0') {
                return Err(ApiError::BadRequest(format!(
                    "{}: contains a NUL character (%00), which failpass does not store",
                    k.replace('\0', "%00")
                )));
            }
            if pairs[..i].iter().any(|(earlier, _)| earlier == k) {
                return Err(ApiError::BadRequest(format!("{k}: given more than once")));
            }
        }
        Ok(QueryPairs(pairs))
    }
}

impl ApiError {
    /// For layers that need a plain `Response` (panic catching).
    pub fn into_response_boxed(self) -> Response {
        self.into_response()
    }
}
