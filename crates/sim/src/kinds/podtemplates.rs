//! PodTemplates: their template defaulted as a pod's spec would be.

use serde_json::Value;

use crate::defaults::{object, template};
use crate::strategy::Strategy;

pub(crate) struct PodTemplates;

impl Strategy for PodTemplates {
    fn defaults(&self, obj: &mut Value, _create: bool) {
        template(object(obj, "template"));
    }
}
