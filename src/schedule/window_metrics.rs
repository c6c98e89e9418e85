//! The windows' metrics: how many opened, which are open, and since when for how long —
//! together they tell a window open longer than planned (the `StalemateWindowOverdue`
//! alert). The engine tells them each opening and closing; the server registers them.

use std::time::Duration;

/// The window metric families (`docs/metrics.md`).
pub struct WindowMetrics {
    pub opened_total: prometheus::IntCounter,
    pub active: prometheus::IntGaugeVec,
    /// When each window last opened (unix seconds).
    pub opened: prometheus::GaugeVec,
    /// How long it was to stay open (0: until closed over the control API).
    pub planned: prometheus::GaugeVec,
}

impl Default for WindowMetrics {
    fn default() -> WindowMetrics {
        let gauges = |name: &str, help: &str| {
            prometheus::GaugeVec::new(prometheus::Opts::new(name, help), &["window"])
                .expect("static metric definition")
        };
        WindowMetrics {
            opened_total: prometheus::IntCounter::new("windows_opened_total", "Windows opened.")
                .expect("static metric definition"),
            active: prometheus::IntGaugeVec::new(
                prometheus::Opts::new("window_active", "1 while a window is open."),
                &["window"],
            )
            .expect("static metric definition"),
            opened: gauges(
                "window_opened_timestamp_seconds",
                "When the window last opened (unix time).",
            ),
            planned: gauges(
                "window_planned_seconds",
                "How long the window was to stay open when it last opened (0: until closed over the control API).",
            ),
        }
    }
}

impl WindowMetrics {
    /// Window `name` opened now, to stay open `duration` (none: until closed).
    pub fn opened(&self, name: &str, duration: Option<Duration>) {
        self.opened_total.inc();
        self.active.with_label_values(&[name]).set(1);
        self.opened.with_label_values(&[name]).set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        );
        self.planned
            .with_label_values(&[name])
            .set(duration.map_or(0.0, |d| d.as_secs_f64()));
    }

    /// Window `name` closed.
    pub fn closed(&self, name: &str) {
        self.active.with_label_values(&[name]).set(0);
    }

    /// Every family, to register.
    pub fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.opened_total.clone()),
            Box::new(self.active.clone()),
            Box::new(self.opened.clone()),
            Box::new(self.planned.clone()),
        ]
    }
}
