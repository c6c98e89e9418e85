//! The Kubernetes wire, as both sides of the proxy and the simulator speak it: what a
//! request asks for (`request`), the `Status` a failure answers with (`status`), the
//! protobuf envelope (`protobuf`), Go durations (`duration`), who a request says it is
//! (`identity`: its User-Agent, its token's service account), the certificates and
//! kubeconfigs clients trust (`certs`, `kubeconfig`), and which version of a resource to
//! speak (`discovery`). Nothing here depends on the rest of the crate.

pub mod certs;
pub mod discovery;
pub mod duration;
pub mod identity;
pub mod kubeconfig;
pub mod protobuf;
pub mod request;
pub mod status;
