//! Turning transport failures into the `Status` a Kubernetes client understands.
//!
//! client-go and kube-rs parse a non-2xx body as `Status`; a bare TCP reset or an HTML
//! error page would surface as a decode error. So every failure to reach the upstream is
//! answered with a Status whose message says what failed:
//! unreachable (refused, DNS) → 503, TLS or protocol failure → 502, timeout → 504.

use std::error::Error as StdError;

use crate::k8s::status::ApiError;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |e: &&'a (dyn StdError + 'static)| (*e).source())
}

/// One line describing the innermost useful cause.
pub fn describe(e: &(dyn StdError + 'static)) -> String {
    let msgs: Vec<String> = chain(e).map(|e| e.to_string()).collect();
    let mut out: Vec<&str> = Vec::new();
    for m in &msgs {
        if !out.iter().any(|o| o.contains(m.as_str())) {
            out.push(m);
        }
    }
    out.join(": ")
}

/// How an upstream watch body ended, when it ended with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// The upstream reset this stream (HTTP/2 RST_STREAM from the server, as when an
    /// apiserver aborts one watch): the client's stream is reset the same way.
    Reset,
    /// The connection went away under the stream (apiserver restarted or died: GOAWAY,
    /// EOF, an I/O error). Direct, a client sees its connection close and resumes
    /// (client-go treats such ends as `IsProbableEOF`, docs/PROTOCOL.md §C); through the
    /// proxy its own connection is fine, so the proxy ends the stream cleanly to the
    /// same effect — a reset would be an ERROR event for client-go (`kubectl get -w`
    /// exits with "INTERNAL_ERROR").
    Lost,
}

/// Classify the error an upstream watch body ended with.
pub fn watch_end(e: &(dyn StdError + 'static)) -> WatchEnd {
    let reset = chain(e)
        .filter_map(|c| c.downcast_ref::<h2::Error>())
        .any(|h| h.is_reset() && h.is_remote() && !h.is_go_away());
    if reset {
        WatchEnd::Reset
    } else {
        WatchEnd::Lost
    }
}

/// The Status for a failed upstream request.
pub fn to_api_error(upstream: &str, e: &(dyn StdError + 'static)) -> ApiError {
    let what = describe(e);
    let timed_out = chain(e).any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || c.to_string().contains("timed out")
    });
    let tls = chain(e).any(|c| c.downcast_ref::<rustls::Error>().is_some())
        || what.contains("invalid peer certificate")
        || what.contains("certificate");
    let unreachable = chain(e).any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::NotConnected
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            )
        })
    }) || what.contains("dns error");
    if timed_out {
        ApiError::new(
            504,
            "Timeout",
            format!("stalemate: the upstream apiserver {upstream} did not answer in time: {what}"),
        )
    } else if tls {
        ApiError::new(
            502,
            "InternalError",
            format!("stalemate: TLS with the upstream apiserver {upstream} failed: {what}"),
        )
    } else if unreachable {
        ApiError::service_unavailable(format!(
            "stalemate: the upstream apiserver {upstream} is unreachable: {what}"
        ))
    } else {
        ApiError::new(
            502,
            "InternalError",
            format!("stalemate: forwarding to the upstream apiserver {upstream} failed: {what}"),
        )
    }
}
