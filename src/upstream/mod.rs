//! The upstream kube-apiserver: where it is, how to trust it, and whose credentials to
//! use when a client brings none.
//!
//! Loading is `kube::Config`'s job (kubeconfig contexts, in-cluster service-account files,
//! client certificates, tokens, exec plugins and their refresh); the transport is a
//! hyper-util client over hyper-rustls with the TLS config kube builds from it.
//!
//! Two kinds of upstream connection, never mixed (docs/DESIGN.md "Credentials"):
//! `passthrough` forwards a request as it is — with the client's own `Authorization`
//! (e.g. a pod's rotating service-account token) — over connections that present **no
//! client certificate**: kube-apiserver authenticates a TLS client certificate before any
//! bearer token, so a connection that presented the upstream kubeconfig's certificate
//! would answer every request as the certificate's user, whatever token it carried.
//! `authed` carries requests without an `Authorization` of their own and adds the
//! upstream credentials: the kubeconfig's client certificate on the connection, or its
//! token / exec-plugin credentials through kube's auth layer. When the upstream
//! credentials include no certificate, both share one pool. Requests go over pooled
//! HTTP/1.1 connections, one pool per serving thread ("lane") whose connections the
//! request's own task drives (`inline`), so a request and its upstream connection are
//! one task on one thread; watches share a pool of HTTP/2 connections.

pub mod discovery;
pub mod error;
pub mod inline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use rustls::pki_types::ServerName;
use tower::util::BoxCloneSyncService;
use tower::{Layer, ServiceExt};

use crate::listen::Body;
pub use error::BoxError;

type Svc = BoxCloneSyncService<Request<Body>, Response<Body>, BoxError>;
/// The upstream's answer, as a boxed `'static` future (which also keeps the service's
/// trait-object types out of the callers' async state machines).
pub type ResponseFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Response<Body>, BoxError>> + Send + 'static>,
>;

/// Where the upstream configuration comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A kubeconfig file (`None`: the usual lookup, `$KUBECONFIG` then `~/.kube/config`).
    Kubeconfig {
        path: Option<PathBuf>,
        context: Option<String>,
    },
    /// The pod's service account (`KUBERNETES_SERVICE_HOST/PORT` and the mounted files).
    InCluster,
    /// An explicit URL and CA bundle, no credentials of our own.
    Url { url: String, ca: PathBuf },
}

impl Source {
    /// The current context of the kubeconfig at `path` (an in-process simulator's admin
    /// kubeconfig, or an envtest's).
    pub fn kubeconfig_file(path: PathBuf) -> Source {
        Source::Kubeconfig {
            path: Some(path),
            context: None,
        }
    }
}

/// A connected upstream.
#[derive(Clone)]
pub struct Upstream {
    /// Scheme, authority and base path of the apiserver.
    pub base: Uri,
    /// Request clients, one set per serving thread (see [`use_lane`]).
    lanes: Arc<[Lane]>,
    /// The serving threads' request pools, for [`Upstream::connections_opened`].
    inline_pools: Arc<[inline::InlinePool]>,
    watches: Arc<WatchPool>,
    pub has_credentials: bool,
    /// The loaded configuration, for stalemate's own clients of the upstream (the
    /// oracles' ground-truth watchers).
    pub config: kube::Config,
}

/// The request clients of one serving thread, each with its own connection pool.
struct Lane {
    passthrough: Passthrough,
    authed: Svc,
    /// HTTP/1.1-only clients for connection upgrades (exec, attach, port-forward).
    upgrade: Svc,
    authed_upgrade: Svc,
}

/// How a lane sends requests with their own `Authorization` — nearly all of them.
enum Passthrough {
    /// A serving thread's pool, called directly: no tower stack to clone and box per
    /// request (the hot path).
    Inline(inline::InlinePool),
    /// Lane 0's hyper-util client.
    Service(Svc),
}

impl Passthrough {
    fn send(&self, req: Request<Body>) -> ResponseFuture {
        match self {
            Passthrough::Inline(pool) => {
                let pool = pool.clone();
                Box::pin(async move { pool.send(req).await })
            }
            Passthrough::Service(svc) => Box::pin(svc.clone().oneshot(req)),
        }
    }
}

thread_local! {
    static LANE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Requests sent from this thread use lane `lane`: its own pools of upstream
/// connections, whose connection tasks then run on this thread's runtime too (a serving
/// thread calls this once, `listen::serve_on_threads`). Lane 0 is everyone else's.
pub fn use_lane(lane: usize) {
    LANE.with(|l| l.set(lane));
}

/// HTTP/2 connections for watches. An apiserver allows a limited number of concurrent
/// streams per connection (Go's default 250, kube-apiserver's
/// `--http2-max-streams-per-connection`), and hyper's client queues streams past it
/// rather than opening a second connection — which for watches means forever. So watches
/// are spread over several clients (one connection each), least-loaded first.
const WATCH_CONNECTIONS: usize = 16;

struct WatchPool {
    /// Connections without a client certificate, for requests with their own credentials.
    plain: Vec<Svc>,
    /// The same connections with the upstream credentials added — or, when those include
    /// a client certificate, connections of their own that present it.
    authed: Vec<Svc>,
    /// Open watches per connection, for each kind (the same counters when both kinds
    /// share connections).
    active_plain: Arc<[AtomicUsize]>,
    active_authed: Arc<[AtomicUsize]>,
}

fn counters(n: usize) -> Arc<[AtomicUsize]> {
    (0..n).map(|_| AtomicUsize::new(0)).collect()
}

/// Watches a serving thread puts on each of its own watch connections before it spreads
/// them over all of them: well under any apiserver's streams-per-connection limit.
const LOCAL_WATCHES_PER_CONNECTION: usize = 100;

/// Which watch connection a new watch goes on, given each connection's open watches.
/// Connection `i` belongs to serving lane `1 + i % serving_lanes`: a serving thread fills
/// its own connections first (least-loaded, up to [`LOCAL_WATCHES_PER_CONNECTION`]), so
/// their connection tasks — spawned by the first watch on them — run on its thread and
/// events do not cross threads; past that, and for lane 0, the least-loaded of all.
fn pick_watch_connection(active: &[usize], lane: usize, serving_lanes: usize) -> usize {
    let least = |own: &dyn Fn(usize) -> bool| {
        (0..active.len())
            .filter(|i| own(*i))
            .min_by_key(|i| active[*i])
    };
    if lane >= 1 && serving_lanes >= 1 {
        let mine = |i: usize| 1 + i % serving_lanes == lane;
        if let Some(i) = least(&mine).filter(|i| active[*i] < LOCAL_WATCHES_PER_CONNECTION) {
            return i;
        }
    }
    least(&|_| true).unwrap_or(0)
}

/// Holds a watch's place on its connection; released when dropped.
pub struct WatchSlot {
    active: Arc<[AtomicUsize]>,
    index: usize,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.active[self.index].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Settings for the upstream transport.
#[derive(Debug, Clone)]
pub struct TransportOptions {
    pub insecure_skip_verify: bool,
    pub connect_timeout: Duration,
    /// Request lanes (separate connection pools); at least one.
    pub lanes: usize,
}

/// `base` (scheme, authority, maybe a base path such as Rancher's `/k8s/clusters/c-1`)
/// joined with `path_and_query`.
fn join(base: &Uri, path_and_query: &str) -> Result<Uri, http::Error> {
    let base_path = base.path().trim_end_matches('/');
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(format!("{base_path}{path_and_query}").parse()?);
    Ok(Uri::from_parts(parts)?)
}

/// Where a client request goes upstream. With no base path — the usual case, and every
/// request passes here — the request's path and query are reused as they are, not
/// formatted and parsed again.
fn upstream_uri(base: &Uri, uri: &Uri) -> Result<Uri, http::Error> {
    let Some(pq) = uri.path_and_query() else {
        return join(base, "/");
    };
    if !base.path().trim_end_matches('/').is_empty() {
        return join(base, pq.as_str());
    }
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(pq.clone());
    Ok(Uri::from_parts(parts)?)
}

/// Read the service-account files from this directory instead of
/// `/var/run/secrets/kubernetes.io/serviceaccount` (for tests, and runtimes that mount
/// them elsewhere).
pub const SERVICEACCOUNT_DIR_ENV: &str = "STALEMATE_SERVICEACCOUNT_DIR";

/// In-cluster configuration as a pod's client builds it (kube-rs `Config::incluster_env`,
/// client-go `rest.InClusterConfig`): `https://HOST:PORT`, the CA in `DIR/ca.crt`, the
/// token in `DIR/token` (re-read as it rotates), the namespace in `DIR/namespace`.
pub fn incluster_config(host: &str, port: &str, dir: &std::path::Path) -> Result<kube::Config> {
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let url = format!("https://{host}:{port}");
    let uri: Uri = url
        .parse()
        .with_context(|| format!("in-cluster: {url:?} is not a URL"))?;
    let mut cfg = kube::Config::new(uri);
    cfg.root_cert = Some(ca_bundle(&dir.join("ca.crt"), "in-cluster")?);
    let token = dir.join("token");
    if !token.exists() {
        bail!("in-cluster: no token at {}", token.display());
    }
    cfg.auth_info.token_file = Some(token.to_string_lossy().into_owned());
    if let Ok(ns) = std::fs::read_to_string(dir.join("namespace")) {
        cfg.default_namespace = ns.trim().to_string();
    }
    Ok(cfg)
}

/// The DER certificates of a PEM CA bundle file; `what` names it in errors.
fn ca_bundle(path: &std::path::Path, what: &str) -> Result<Vec<Vec<u8>>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let pem = std::fs::read(path).with_context(|| format!("{what} {}", path.display()))?;
    let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("{what} {}: not a PEM certificate bundle", path.display()))?;
    if certs.is_empty() {
        bail!("{what} {}: no certificate in it", path.display());
    }
    Ok(certs)
}

async fn load(source: &Source) -> Result<kube::Config> {
    match source {
        Source::Kubeconfig { path, context } => {
            let opts = kube::config::KubeConfigOptions {
                context: context.clone(),
                ..Default::default()
            };
            match path {
                Some(p) => {
                    let kc = kube::config::Kubeconfig::read_from(p)
                        .with_context(|| format!("--upstream-kubeconfig {}: cannot read it as a kubeconfig", p.display()))?;
                    kube::Config::from_custom_kubeconfig(kc, &opts)
                        .await
                        .with_context(|| format!("--upstream-kubeconfig {}", p.display()))
                }
                None => kube::Config::from_kubeconfig(&opts)
                    .await
                    .context("loading the default kubeconfig ($KUBECONFIG or ~/.kube/config); use --upstream-kubeconfig, --in-cluster or --upstream"),
            }
        }
        Source::InCluster => match std::env::var_os(SERVICEACCOUNT_DIR_ENV) {
            Some(dir) => {
                let host = std::env::var("KUBERNETES_SERVICE_HOST")
                    .context("--in-cluster: KUBERNETES_SERVICE_HOST is not set")?;
                let port = std::env::var("KUBERNETES_SERVICE_PORT")
                    .context("--in-cluster: KUBERNETES_SERVICE_PORT is not set")?;
                incluster_config(&host, &port, std::path::Path::new(&dir))
            }
            None => kube::Config::incluster().context(
                "--in-cluster: not running in a pod, or the service-account files are missing",
            ),
        },
        Source::Url { url, ca } => {
            let uri: Uri = url
                .parse()
                .with_context(|| format!("--upstream {url:?} is not a URL"))?;
            if uri.scheme_str() != Some("https") {
                bail!("--upstream {url:?}: the apiserver must be reached over https");
            }
            let mut cfg = kube::Config::new(uri);
            cfg.root_cert = Some(ca_bundle(ca, "--upstream-ca")?);
            Ok(cfg)
        }
    }
}

fn client(
    tls: rustls::ClientConfig,
    opts: &TransportOptions,
    server_name: Option<&ServerName<'static>>,
    http2: bool,
) -> Client<hyper_rustls::HttpsConnector<HttpConnector>, Body> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(opts.connect_timeout));
    let mut builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    if let Some(name) = server_name {
        builder = builder
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name.clone()));
    }
    let connector = if http2 {
        builder.enable_http1().enable_http2().wrap_connector(http)
    } else {
        builder.enable_http1().wrap_connector(http)
    };
    let mut b = Client::builder(TokioExecutor::new());
    b.timer(hyper_util::rt::TokioTimer::new())
        .pool_timer(hyper_util::rt::TokioTimer::new());
    b.pool_idle_timeout(Duration::from_secs(90));
    // Keep HTTP/2 connections to the apiserver alive while watches are quiet.
    b.http2_keep_alive_interval(Duration::from_secs(30))
        .http2_keep_alive_while_idle(true);
    b.build(connector)
}

/// The kubeconfig's `tls-server-name` (client-go's `TLSClientConfig.ServerName`): the
/// name the apiserver's certificate is checked against instead of the URL's host (and
/// sent as SNI when it is a DNS name; an IP address is not, in rustls as in Go) — for an
/// apiserver reached by an address its certificate does not name (a tunnel, a load
/// balancer's IP). Every upstream connection uses it, as kube-rs's own client does
/// (`ConfigExt::rustls_https_connector_with_connector`), and taken as written, as kube-rs
/// takes it, so that stalemate's own kube clients (discovery, the oracles) agree. Empty
/// is unset, as in client-go; it is cleared from `cfg` so that kube-rs agrees there too.
fn tls_server_name(cfg: &mut kube::Config) -> Result<Option<ServerName<'static>>> {
    if cfg.tls_server_name.as_deref() == Some("") {
        cfg.tls_server_name = None;
    }
    cfg.tls_server_name
        .as_ref()
        .map(|name| {
            ServerName::try_from(name.clone()).with_context(|| {
                format!("the upstream's tls-server-name {name:?} is neither a DNS name nor an IP address")
            })
        })
        .transpose()
}

fn boxed(c: Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>) -> Svc {
    BoxCloneSyncService::new(tower::service_fn(move |req: Request<Body>| {
        let c = c.clone();
        async move {
            let resp = c.request(req).await.map_err(BoxError::from)?;
            Ok(resp.map(|b: Incoming| b.map_err(crate::listen::BodyError::from).boxed()))
        }
    }))
}

fn boxed_inline(pool: inline::InlinePool) -> Svc {
    BoxCloneSyncService::new(tower::service_fn(move |req: Request<Body>| {
        let pool = pool.clone();
        async move { pool.send(req).await }
    }))
}

/// The watch connections: HTTP/2, many streams per connection, over several connections
/// (see `WatchPool`). Those of requests with their own credentials are counted apart
/// only when they are apart (stalemate presents a certificate).
fn watch_pool(
    pair: &dyn Fn(bool) -> Result<(Svc, Svc)>,
    presents_certificate: bool,
) -> Result<WatchPool> {
    let (plain, authed): (Vec<Svc>, Vec<Svc>) = (0..WATCH_CONNECTIONS)
        .map(|_| pair(true))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let active_plain = counters(WATCH_CONNECTIONS);
    let active_authed = if presents_certificate {
        counters(WATCH_CONNECTIONS)
    } else {
        active_plain.clone()
    };
    Ok(WatchPool {
        plain,
        authed,
        active_plain,
        active_authed,
    })
}

/// One lane per serving thread: lane 0 (the rest of the process) on hyper-util's pool,
/// the others on the connections `inline_pair` makes; every lane has its HTTP/1.1
/// connections for upgrades.
fn lanes(
    count: usize,
    pair: &dyn Fn(bool) -> Result<(Svc, Svc)>,
    inline_pair: &mut dyn FnMut() -> Result<(Passthrough, Svc)>,
) -> Result<Arc<[Lane]>> {
    (0..count.max(1))
        .map(|i| {
            let (passthrough, authed) = if i == 0 {
                let (plain, authed) = pair(false)?;
                (Passthrough::Service(plain), authed)
            } else {
                inline_pair()?
            };
            // Upgrades (exec, attach, port-forward) exist only in HTTP/1.1.
            let (upgrade, authed_upgrade) = pair(false)?;
            Ok(Lane {
                passthrough,
                authed,
                upgrade,
                authed_upgrade,
            })
        })
        .collect()
}

/// The TLS configuration of connections for requests that bring their own Authorization:
/// the same trust, no client certificate (see the module docs).
fn bare_tls(cfg: &kube::Config) -> Result<rustls::ClientConfig> {
    let mut bare = cfg.clone();
    bare.auth_info = kube::config::AuthInfo::default();
    bare.rustls_client_config()
        .context("building the upstream TLS configuration")
}

impl Upstream {
    pub async fn connect(source: &Source, opts: &TransportOptions) -> Result<Upstream> {
        let mut cfg = load(source).await?;
        if opts.insecure_skip_verify {
            cfg.accept_invalid_certs = true;
        }
        let server_name = tls_server_name(&mut cfg)?;
        let server_name = server_name.as_ref();
        let tls = cfg
            .rustls_client_config()
            .context("building the upstream TLS configuration")?;
        let tls_plain = bare_tls(&cfg)?;
        // An exec plugin may answer with a certificate: count it as one.
        let presents_certificate = cfg.auth_info.client_certificate.is_some()
            || cfg.auth_info.client_certificate_data.is_some()
            || cfg.auth_info.exec.is_some();
        let layer = cfg
            .auth_layer()
            .context("loading the upstream credentials")?;
        let has_credentials = layer.is_some() || presents_certificate;
        let with_auth = |inner: &Svc| match &layer {
            Some(l) => BoxCloneSyncService::new(l.layer(inner.clone()).map_err(BoxError::from)),
            None => inner.clone(),
        };
        // One client per connection kind, made by `make` from a TLS configuration: the
        // authed one shares the plain one's pool unless it must present a certificate.
        let kinds = |make: &mut dyn FnMut(&rustls::ClientConfig) -> Result<Svc>| {
            let plain = make(&tls_plain)?;
            let authed = if presents_certificate {
                with_auth(&make(&tls)?)
            } else {
                with_auth(&plain)
            };
            Ok::<_, anyhow::Error>((plain, authed))
        };
        let pair = |http2: bool| {
            kinds(&mut |tls: &rustls::ClientConfig| {
                Ok(boxed(client(tls.clone(), opts, server_name, http2)))
            })
        };
        // Requests: a pool of HTTP/1.1 connections (measured faster than one shared
        // HTTP/2 connection for GET and LIST, bench/run.sh). Watches: HTTP/2.
        let watches = Arc::new(watch_pool(&pair, presents_certificate)?);
        // A serving thread's requests go over connections its own tasks drive
        // (`inline`); lane 0 — the rest of the process, on a work-stealing runtime —
        // keeps hyper-util's pool, whose connection tasks may run anywhere.
        let base = cfg.cluster_url.clone();
        let mut inline_pools = Vec::new();
        let mut inline_pair = || {
            let mut made = Vec::new();
            let (plain, authed) = kinds(&mut |tls: &rustls::ClientConfig| {
                let pool = inline::InlinePool::new(
                    &base,
                    tls.clone(),
                    server_name.cloned(),
                    opts.connect_timeout,
                )?;
                made.push(pool.clone());
                Ok(boxed_inline(pool))
            })?;
            // `kinds` makes the plain one first; it is called directly.
            let passthrough = match made.first() {
                Some(pool) => Passthrough::Inline(pool.clone()),
                None => Passthrough::Service(plain),
            };
            inline_pools.extend(made);
            Ok::<_, anyhow::Error>((passthrough, authed))
        };
        let lanes = lanes(opts.lanes, &pair, &mut inline_pair)?;
        Ok(Upstream {
            base: cfg.cluster_url.clone(),
            config: cfg,
            lanes,
            inline_pools: inline_pools.into(),
            watches,
            has_credentials,
        })
    }

    /// Upstream connections the serving threads' request pools have opened so far
    /// (watches, upgrades and the rest of the process not counted).
    pub fn connections_opened(&self) -> usize {
        self.inline_pools
            .iter()
            .map(inline::InlinePool::connections_opened)
            .sum()
    }

    /// A kube-rs client of the upstream with stalemate's own (the upstream) credentials.
    pub fn kube_client(&self) -> Result<kube::Client> {
        kube::Client::try_from(self.config.clone()).context("building a client of the upstream")
    }

    /// The upstream URI for a path and query of our own (e.g. `/readyz`).
    pub fn uri_for(&self, path_and_query: &str) -> Result<Uri, http::Error> {
        join(&self.base, path_and_query)
    }

    /// The upstream URI for a client request's URI (its path and query).
    pub fn uri_for_request(&self, uri: &Uri) -> Result<Uri, http::Error> {
        upstream_uri(&self.base, uri)
    }

    /// Send a request upstream; the upstream credentials are added only when the client
    /// sent no `Authorization` of its own, and a request that did goes over a connection
    /// that presents no client certificate. (A plain function returning the service's
    /// future, not an `async fn`: the future owns everything and is `'static`.)
    pub fn send(&self, req: Request<Body>, upgrade: bool) -> ResponseFuture {
        let own = req.headers().contains_key(http::header::AUTHORIZATION);
        let lane = self.lane();
        // Upgrades (exec, attach, port-forward) exist only in HTTP/1.1.
        let svc = match (upgrade, own) {
            (false, true) => return lane.passthrough.send(req),
            (false, false) => &lane.authed,
            (true, true) => &lane.upgrade,
            (true, false) => &lane.authed_upgrade,
        };
        Box::pin(svc.clone().oneshot(req))
    }

    fn lane(&self) -> &Lane {
        &self.lanes[LANE.with(|l| l.get()) % self.lanes.len()]
    }

    /// Send a watch upstream over the least-loaded watch connection; the slot keeps its
    /// place counted while the response body lives.
    pub fn send_watch(&self, req: Request<Body>) -> (ResponseFuture, WatchSlot) {
        let own = req.headers().contains_key(http::header::AUTHORIZATION);
        let pool = &self.watches;
        let (svcs, active) = if own {
            (&pool.plain, &pool.active_plain)
        } else {
            (&pool.authed, &pool.active_authed)
        };
        let load: Vec<usize> = active.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let index = pick_watch_connection(
            &load,
            LANE.with(|l| l.get()),
            self.lanes.len().saturating_sub(1),
        );
        active[index].fetch_add(1, Ordering::Relaxed);
        (
            Box::pin(svcs[index].clone().oneshot(req)),
            WatchSlot {
                active: active.clone(),
                index,
            },
        )
    }

    /// A cheap request to tell whether the upstream answers at all (for `/readyz`).
    pub fn probe(
        &self,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<u16, String>> + Send + 'static {
        let req = self
            .uri_for("/readyz")
            .map_err(|e| e.to_string())
            .and_then(|uri| {
                Request::get(uri)
                    .body(crate::listen::body::full(Bytes::new()))
                    .map_err(|e| e.to_string())
            });
        let call =
            req.map(|r| -> ResponseFuture { Box::pin(self.lane().authed.clone().oneshot(r)) });
        async move {
            let call = call?;
            Self::probe_result(tokio::time::timeout(timeout, call).await, timeout)
        }
    }

    fn probe_result(
        r: Result<Result<Response<Body>, BoxError>, tokio::time::error::Elapsed>,
        timeout: Duration,
    ) -> Result<u16, String> {
        match r {
            Ok(Ok(r)) => Ok(r.status().as_u16()),
            Ok(Err(e)) => Err(error::describe(&*e)),
            Err(_) => Err(format!("no answer within {timeout:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_uris_keep_path_query_and_base_path() {
        let plain: Uri = "https://10.0.0.1:6443".parse().unwrap();
        let rancher: Uri = "https://rancher.example/k8s/clusters/c-1/".parse().unwrap();
        // HTTP/1.1 requests carry origin-form URIs, HTTP/2 ones absolute URIs.
        for client in [
            "/api/v1/namespaces/a/configmaps?labelSelector=app%3Dx&watch=true",
            "https://127.0.0.1:7443/api/v1/namespaces/a/configmaps?labelSelector=app%3Dx&watch=true",
        ] {
            let c: Uri = client.parse().unwrap();
            assert_eq!(
                upstream_uri(&plain, &c).unwrap().to_string(),
                "https://10.0.0.1:6443/api/v1/namespaces/a/configmaps?labelSelector=app%3Dx&watch=true"
            );
            assert_eq!(
                upstream_uri(&rancher, &c).unwrap().to_string(),
                "https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/a/configmaps?labelSelector=app%3Dx&watch=true"
            );
        }
        assert_eq!(
            join(&rancher, "/readyz").unwrap().to_string(),
            "https://rancher.example/k8s/clusters/c-1/readyz"
        );
    }

    #[test]
    fn watches_fill_their_threads_connections_first() {
        // Two serving lanes over 4 connections: lane 1 owns 0 and 2, lane 2 owns 1 and 3.
        let mut active = vec![0; 4];
        let mut put = |lane| {
            let i = pick_watch_connection(&active, lane, 2);
            active[i] += 1;
            i
        };
        assert_eq!([put(1), put(1), put(1), put(2), put(2)], [0, 2, 0, 1, 3]);
        // Lane 0 (not a serving thread) takes the least-loaded of all.
        let active = [3, 1, 2, 5];
        assert_eq!(pick_watch_connection(&active, 0, 2), 1);
        // A lane whose connections are full spreads over all of them.
        let active = [100, 7, 100, 9];
        assert_eq!(pick_watch_connection(&active, 1, 2), 1);
        assert_eq!(pick_watch_connection(&active, 2, 2), 1);
        // More lanes than connections: lanes that own none take the least-loaded.
        let active = [4, 2];
        assert_eq!(pick_watch_connection(&active, 3, 4), 1);
        assert_eq!(pick_watch_connection(&active, 1, 4), 0);
    }
}
