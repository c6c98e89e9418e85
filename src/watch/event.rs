//! One watch event as the gate sees it: its type and the metadata a fault is decided on.

/// The watch event types (`watch.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl EventType {
    pub fn parse(s: &str) -> Option<EventType> {
        Some(match s {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

/// What the gate needs to know about one event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventMeta {
    pub type_: Option<EventType>,
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub generation: Option<i64>,
    pub labels: Vec<(String, String)>,
    /// A BOOKMARK annotated `k8s.io/initial-events-end: "true"` (WatchList end marker).
    pub initial_events_end: bool,
    /// For ERROR events: the Status code (410 for Expired).
    pub status_code: Option<i64>,
}
