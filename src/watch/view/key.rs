//! Which view: the query it answers.

/// The query a view answers: a client's list/watch of one resource, in one namespace (or
/// all), with one pair of selectors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewKey {
    pub client: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub label_selector: String,
    pub field_selector: String,
}
