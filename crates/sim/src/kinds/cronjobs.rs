//! CronJobs: their defaults, their job template's included.

use serde_json::{Value, json};

use crate::defaults::{default, object, template};
use crate::strategy::Strategy;

pub(crate) struct CronJobs;

impl Strategy for CronJobs {
    fn defaults(&self, obj: &mut Value, create: bool) {
        cron_job(obj, create);
    }
}

fn cron_job(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    let jt = object(spec, "jobTemplate");
    object(jt, "metadata");
    template(object(object(jt, "spec"), "template"));
    if create {
        obj["status"] = json!({});
    }
}
