//! What a verb handler is given for one resource request: the simulator, the resource's
//! type, the parsed request, how to answer (negotiated output, pretty-printing, audit
//! id), who asked, and the query. Built by the router (`http.rs`); the verbs (`verbs/`)
//! read it, so they need not know the router.

use std::collections::HashMap;
use std::sync::Arc;

use super::instance::Sim;
use super::negotiate::{Output, Reply};
use super::resource_type::ResourceType;
use super::table::IncludeObject;
use stalemate_wire::k8s::request::ResourceRequest;

/// Everything a verb handler needs about one resource request.
pub(crate) struct Ctx {
    pub sim: Arc<Sim>,
    pub rt: Arc<ResourceType>,
    pub req: ResourceRequest,
    pub reply: Reply,
    pub output: Output,
    pub user_agent: Option<String>,
    pub(super) query: HashMap<String, String>,
}

impl Ctx {
    pub(crate) fn query(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }

    pub(crate) fn include_object(&self) -> IncludeObject {
        IncludeObject::parse(self.query("includeObject"))
    }
}
