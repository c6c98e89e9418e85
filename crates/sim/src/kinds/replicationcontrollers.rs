//! ReplicationControllers: their defaults — a selector and labels taken from the
//! template's labels when they have none.

use serde_json::{Value, json};

use crate::defaults::{default, object, template};
use crate::strategy::Strategy;

pub(crate) struct ReplicationControllers;

impl Strategy for ReplicationControllers {
    fn defaults(&self, obj: &mut Value, create: bool) {
        replication_controller(obj, create);
    }
}

fn replication_controller(obj: &mut Value, create: bool) {
    let labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    if labels.is_object() {
        default(spec, "selector", labels.clone());
    }
    template(object(spec, "template"));
    if labels.is_object() {
        default(object(obj, "metadata"), "labels", labels);
    }
    if create {
        obj["status"] = json!({"replicas": 0});
    }
}
