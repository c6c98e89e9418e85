//! Classify a kube-apiserver request from its method, path and query.
//!
//! This mirrors apiserver's `RequestInfoFactory.NewRequestInfo`
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`): the same verbs,
//! the same path grammar, including the legacy `/api/v1/watch/...` prefix that forces a
//! watch (`endpoints/installer.go`). Both the proxy and the simulator route on it, so what
//! one calls a watch the other does too.

use std::borrow::Cow;

/// What the request does, in RBAC verb terms (spelled as RBAC and schedules spell them:
/// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
/// `connect`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// Subresources reached by upgrade or proxy (`exec`, `attach`, `portforward`, `proxy`).
    Connect,
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Verb {
    /// Verbs that change the cluster.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }

    /// The verb a trace or a schedule names (`patch`, `deletecollection`, …).
    pub fn from_name(name: &str) -> Option<Verb> {
        [
            Verb::Get,
            Verb::List,
            Verb::Watch,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
            Verb::DeleteCollection,
            Verb::Connect,
        ]
        .into_iter()
        .find(|v| v.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Connect => "connect",
        }
    }
}

/// How a read asked for freshness (KEP-2340's matrix; docs/PROTOCOL.md §A.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RvSemantics {
    /// `resourceVersion` absent or empty: most recent (a consistent read).
    Unset,
    /// `resourceVersion=0`: any version; may legally be stale.
    Any,
    /// `resourceVersion=X` without a match, or `resourceVersionMatch=NotOlderThan`.
    NotOlderThan(String),
    /// `resourceVersionMatch=Exact`, or a LIST at `X` with a `limit` (legacy exact paging).
    Exact(String),
}

/// The query parameters that change what a read or a watch returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<String>,
    pub continue_token: Option<String>,
    pub timeout_seconds: Option<String>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

impl ListParams {
    /// The freshness the request asked for.
    pub fn rv_semantics(&self) -> RvSemantics {
        let rv = self.resource_version.as_deref().unwrap_or("");
        let exact = self.resource_version_match.as_deref() == Some("Exact");
        match rv {
            "" => RvSemantics::Unset,
            "0" if !exact => RvSemantics::Any,
            rv if exact => RvSemantics::Exact(rv.to_string()),
            rv if self.resource_version_match.is_none()
                && self
                    .limit
                    .as_deref()
                    .is_some_and(|l| l != "0" && !l.is_empty()) =>
            {
                RvSemantics::Exact(rv.to_string())
            }
            rv => RvSemantics::NotOlderThan(rv.to_string()),
        }
    }
}

/// Everything the proxy and the simulator need to know about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// `/version`, `/healthz`, `/openapi/...`, `/api`, `/apis`, `/apis/G`, `/apis/G/V`, ...
    NonResource {
        path: String,
        discovery: bool,
    },
    Resource(Box<ResourceRequest>),
}

impl RequestInfo {
    /// The namespace a resource request addresses.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            RequestInfo::Resource(r) => r.namespace.as_deref(),
            RequestInfo::NonResource { .. } => None,
        }
    }

    /// The object a resource request names.
    pub fn name(&self) -> Option<&str> {
        match self {
            RequestInfo::Resource(r) => r.name.as_deref(),
            RequestInfo::NonResource { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    pub verb: Verb,
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The request came in through a legacy `/watch/` path.
    pub legacy_watch_path: bool,
    pub params: ListParams,
}

impl ResourceRequest {
    /// `plural.group`, as kubectl and the schedule file name resources (`plural` for core).
    pub fn resource_name(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// `watch` is true for any value except `0` and `false`, case-insensitive, and an empty
/// value counts as true (apimachinery `runtime.Convert_Slice_string_To_bool`).
pub fn parse_query_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// Decode a query string into pairs, percent-decoding as Go's `url.ParseQuery` does.
pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    form_urlencoded::parse(query.as_bytes())
}

/// Classify a request. `path` is the URI path (not decoded further), `query` the raw query.
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> RequestInfo {
    let (params, watch_param) = list_params(query);

    let non_resource = |discovery: bool| RequestInfo::NonResource {
        path: path.to_string(),
        discovery,
    };
    // Every pattern below looks at most at the first nine segments (or matches a path
    // shorter than ten), so ten on the stack tell them all apart — no Vec per request.
    let mut segments = [""; 10];
    let mut count = 0;
    for (slot, seg) in segments.iter_mut().zip(path.trim_matches('/').split('/')) {
        *slot = seg;
        count += 1;
    }
    let (group, version, rest): (&str, &str, &[&str]) = match &segments[..count] {
        ["api"] | ["apis"] => return non_resource(true),
        ["api", _version] => return non_resource(true),
        ["apis", _group] | ["apis", _group, _] => return non_resource(true),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return non_resource(false),
    };

    // `/api/v1/watch/...` and `/apis/G/V/watch/...`: forced watches, still served.
    let (legacy_watch_path, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    // `namespaces/NS/RES...` scopes to a namespace — except `namespaces/NS` alone and
    // `namespaces/NS/status|finalize`, which address the Namespace object itself.
    let (namespace, rest): (Option<&str>, &[&str]) = match rest {
        ["namespaces", ns, res, tail @ ..]
            if !matches!(*res, "status" | "finalize") || !tail.is_empty() =>
        {
            (Some(*ns), &rest[2..])
        }
        _ => (None, rest),
    };
    let (resource, name, subresource) = match rest {
        [res] => (*res, None, None),
        [res, name] => (*res, Some(*name), None),
        [res, name, sub, ..] => (*res, Some(*name), Some(*sub)),
        _ => return non_resource(false),
    };
    if resource.is_empty() {
        return non_resource(false);
    }
    let single_name_selector = params
        .field_selector
        .as_deref()
        .and_then(single_name_from_field_selector);
    let verb = verb_of(
        method,
        legacy_watch_path || watch_param,
        name.is_some(),
        subresource,
    );
    // A watch or list with `fieldSelector=metadata.name=X` is about one object
    // (`cli-runtime resource/helper.go`); the apiserver records the name the same way.
    let name = match (name, &single_name_selector, verb) {
        (None, Some(n), Verb::Watch | Verb::List) => Some(n.clone()),
        (n, _, _) => n.map(str::to_string),
    };
    RequestInfo::Resource(Box::new(ResourceRequest {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: namespace.map(str::to_string),
        name,
        subresource: subresource.map(str::to_string),
        legacy_watch_path,
        params,
    }))
}

/// The query parameters that shape a read, and whether `watch` was asked for.
fn list_params(query: Option<&str>) -> (ListParams, bool) {
    let mut params = ListParams::default();
    let mut watch_param = false;
    for (k, v) in query_pairs(query.unwrap_or("")) {
        match &*k {
            "watch" => watch_param = parse_query_bool(&v),
            "resourceVersion" => params.resource_version = Some(v.into_owned()),
            "resourceVersionMatch" => params.resource_version_match = Some(v.into_owned()),
            "labelSelector" => params.label_selector = Some(v.into_owned()),
            "fieldSelector" => params.field_selector = Some(v.into_owned()),
            "limit" => params.limit = Some(v.into_owned()),
            "continue" => params.continue_token = Some(v.into_owned()),
            "timeoutSeconds" => params.timeout_seconds = Some(v.into_owned()),
            "allowWatchBookmarks" => params.allow_watch_bookmarks = parse_query_bool(&v),
            "sendInitialEvents" => params.send_initial_events = Some(parse_query_bool(&v)),
            _ => {}
        }
    }
    (params, watch_param)
}

/// The verb a method asks for: a GET is a watch, a get or a list by `watch` and a name;
/// a DELETE without a name deletes a collection; the streaming subresources connect.
fn verb_of(method: &http::Method, watch: bool, has_name: bool, subresource: Option<&str>) -> Verb {
    let verb = match *method {
        http::Method::GET | http::Method::HEAD => {
            if watch {
                Verb::Watch
            } else if has_name {
                Verb::Get
            } else {
                Verb::List
            }
        }
        http::Method::POST => Verb::Create,
        http::Method::PUT => Verb::Update,
        http::Method::PATCH => Verb::Patch,
        http::Method::DELETE => {
            if has_name {
                Verb::Delete
            } else {
                Verb::DeleteCollection
            }
        }
        _ => Verb::Get,
    };
    match subresource {
        Some("exec" | "attach" | "portforward" | "proxy") => Verb::Connect,
        _ => verb,
    }
}

/// The name a field selector picks when it is exactly `metadata.name=X` (or `==`): a
/// single-object watch, as `kubectl get NAME -w` sends it.
pub fn single_name_from_field_selector(sel: &str) -> Option<String> {
    if sel.contains(',') {
        return None;
    }
    let rest = sel.trim().strip_prefix("metadata.name")?;
    let value = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
    (!value.is_empty()).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn res(method: Method, path: &str, query: Option<&str>) -> ResourceRequest {
        match classify(&method, path, query) {
            RequestInfo::Resource(r) => *r,
            other => panic!("{path}: expected a resource request, got {other:?}"),
        }
    }

    #[test]
    fn core_and_group_paths() {
        let r = res(Method::GET, "/api/v1/namespaces/ns1/configmaps/cm", None);
        assert_eq!(
            (
                r.verb,
                r.group.as_str(),
                r.version.as_str(),
                r.resource.as_str()
            ),
            (Verb::Get, "", "v1", "configmaps")
        );
        assert_eq!(r.namespace.as_deref(), Some("ns1"));
        assert_eq!(r.name.as_deref(), Some("cm"));

        let r = res(
            Method::PATCH,
            "/apis/source.testbed.example.com/v1/namespaces/fixtures/gitrepositories/podinfo/status",
            None,
        );
        assert_eq!(r.verb, Verb::Patch);
        assert_eq!(r.group, "source.testbed.example.com");
        assert_eq!(r.subresource.as_deref(), Some("status"));
        assert_eq!(
            r.resource_name(),
            "gitrepositories.source.testbed.example.com"
        );

        let r = res(Method::GET, "/apis/apps/v1/deployments", None);
        assert_eq!((r.verb, r.namespace), (Verb::List, None));
        let r = res(Method::DELETE, "/api/v1/namespaces/a/configmaps", None);
        assert_eq!(r.verb, Verb::DeleteCollection);
        let r = res(Method::POST, "/api/v1/namespaces/a/configmaps", None);
        assert_eq!(r.verb, Verb::Create);
        let r = res(Method::PUT, "/api/v1/namespaces/a/configmaps/x", None);
        assert_eq!(r.verb, Verb::Update);
    }

    /// Paths longer than the ten segments `classify` keeps on the stack: a pod's proxy
    /// subresource with a path of its own, and the longest watch form.
    #[test]
    fn long_paths_keep_their_resource_name_and_subresource() {
        let r = res(
            Method::GET,
            "/api/v1/namespaces/ns/pods/web-0/proxy/a/b/c/d/e/f",
            None,
        );
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref(),
                r.namespace.as_deref()
            ),
            ("pods", Some("web-0"), Some("proxy"), Some("ns"))
        );
        let r = res(
            Method::GET,
            "/apis/apps/v1/watch/namespaces/ns/deployments/d/scale",
            None,
        );
        assert_eq!(
            (r.verb, r.group.as_str(), r.subresource.as_deref()),
            (Verb::Watch, "apps", Some("scale"))
        );
        let info = classify(&Method::GET, "/api/v1/namespaces/ns/configmaps/cm", None);
        assert_eq!((info.namespace(), info.name()), (Some("ns"), Some("cm")));
        let info = classify(&Method::GET, "/version/a/b/c/d/e/f/g/h/i/j/k", None);
        assert_eq!((info.namespace(), info.name()), (None, None));
    }

    #[test]
    fn namespace_objects_themselves() {
        let r = res(Method::GET, "/api/v1/namespaces/default", None);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("default"), None)
        );
        let r = res(Method::PUT, "/api/v1/namespaces/default/finalize", None);
        assert_eq!(r.resource, "namespaces");
        assert_eq!(r.subresource.as_deref(), Some("finalize"));
        let r = res(Method::GET, "/api/v1/namespaces/default/status", None);
        assert_eq!(
            (r.resource.as_str(), r.subresource.as_deref()),
            ("namespaces", Some("status"))
        );
        let r = res(Method::GET, "/api/v1/namespaces", None);
        assert_eq!(r.verb, Verb::List);
    }

    #[test]
    fn every_watch_form() {
        for q in [
            "watch=true",
            "watch=1",
            "watch=",
            "watch",
            "watch=TRUE",
            "watch=yes",
        ] {
            let r = res(Method::GET, "/api/v1/configmaps", Some(q));
            assert_eq!(r.verb, Verb::Watch, "{q}");
        }
        for q in ["watch=false", "watch=0", "watch=False"] {
            let r = res(Method::GET, "/api/v1/configmaps", Some(q));
            assert_eq!(r.verb, Verb::List, "{q}");
        }
        let r = res(
            Method::GET,
            "/api/v1/watch/namespaces/fixtures/configmaps",
            Some("resourceVersion=0"),
        );
        assert_eq!(r.verb, Verb::Watch);
        assert!(r.legacy_watch_path);
        assert_eq!(r.namespace.as_deref(), Some("fixtures"));
        let r = res(
            Method::GET,
            "/api/v1/watch/namespaces/fixtures/configmaps/cm-0",
            None,
        );
        assert_eq!((r.verb, r.name.as_deref()), (Verb::Watch, Some("cm-0")));
        let r = res(Method::GET, "/apis/apps/v1/watch/deployments", None);
        assert_eq!((r.verb, r.group.as_str()), (Verb::Watch, "apps"));
        let r = res(Method::GET, "/api/v1/watch/namespaces", None);
        assert_eq!((r.verb, r.resource.as_str()), (Verb::Watch, "namespaces"));
        // Single-object watch: a field selector on the name.
        let r = res(
            Method::GET,
            "/api/v1/namespaces/a/configmaps",
            Some("watch=1&fieldSelector=metadata.name%3Dcm-1"),
        );
        assert_eq!((r.verb, r.name.as_deref()), (Verb::Watch, Some("cm-1")));
    }

    #[test]
    fn resource_version_semantics() {
        let sem = |q: &str| {
            res(Method::GET, "/api/v1/configmaps", Some(q))
                .params
                .rv_semantics()
        };
        assert_eq!(sem(""), RvSemantics::Unset);
        assert_eq!(sem("resourceVersion="), RvSemantics::Unset);
        assert_eq!(sem("resourceVersion=0"), RvSemantics::Any);
        assert_eq!(
            sem("resourceVersion=5"),
            RvSemantics::NotOlderThan("5".into())
        );
        assert_eq!(
            sem("resourceVersion=5&resourceVersionMatch=NotOlderThan"),
            RvSemantics::NotOlderThan("5".into())
        );
        assert_eq!(
            sem("resourceVersion=5&resourceVersionMatch=Exact"),
            RvSemantics::Exact("5".into())
        );
        assert_eq!(
            sem("resourceVersion=5&limit=10"),
            RvSemantics::Exact("5".into())
        );
        assert_eq!(sem("resourceVersion=0&limit=10"), RvSemantics::Any);
        let p = res(
            Method::GET,
            "/api/v1/namespaces/wl/configmaps",
            Some("watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion="),
        )
        .params;
        assert_eq!(p.send_initial_events, Some(true));
        assert!(p.allow_watch_bookmarks);
        assert_eq!(p.rv_semantics(), RvSemantics::Unset);
    }

    #[test]
    fn non_resource_urls() {
        for (p, disc) in [
            ("/version", false),
            ("/healthz", false),
            ("/openapi/v3", false),
            ("/api", true),
            ("/api/v1", true),
            ("/apis", true),
            ("/apis/apps", true),
            ("/apis/apps/v1", true),
            ("/", false),
        ] {
            match classify(&Method::GET, p, None) {
                RequestInfo::NonResource { discovery, .. } => assert_eq!(discovery, disc, "{p}"),
                other => panic!("{p}: {other:?}"),
            }
        }
    }

    #[test]
    fn connect_subresources() {
        let r = res(
            Method::POST,
            "/api/v1/namespaces/a/pods/p/exec",
            Some("command=ls"),
        );
        assert_eq!(r.verb, Verb::Connect);
        let r = res(Method::GET, "/api/v1/namespaces/a/pods/p/portforward", None);
        assert_eq!(r.verb, Verb::Connect);
    }
}
