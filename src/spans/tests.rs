use super::*;

fn at(line: u32, column: u32) -> Option<Pos> {
    Some(Pos { line, column })
}

#[test]
fn json_values_and_keys_are_placed_through_escapes_arrays_and_unicode() {
    // Columns count characters: the é and the 😀 before a value are one column each.
    let text = "{\n  \"a\\\"b\": [1, [2, \"x\\u00e9\\\\\"], {\"k\": null}],\n  \"é😀\": \"ü\", \"a\\u0062\": true,\n  \"\\ud83d\\ude00\": {}\n}";
    let s = index_json(text);
    assert_eq!(s.value(""), at(1, 1));
    assert_eq!(s.key("a\"b"), at(2, 3));
    assert_eq!(s.value("a\"b"), at(2, 11));
    assert_eq!(s.value("a\"b[0]"), at(2, 12));
    assert_eq!(s.value("a\"b[1]"), at(2, 15));
    assert_eq!(s.value("a\"b[1][1]"), at(2, 19));
    assert_eq!(s.value("a\"b[2]"), at(2, 33));
    assert_eq!(s.value("a\"b[2].k"), at(2, 39));
    assert_eq!(s.value("é😀"), at(3, 9));
    assert_eq!(
        s.key("ab"),
        at(3, 14),
        "an escaped key reads as serde reads it"
    );
    assert_eq!(s.value("ab"), at(3, 25));
    assert_eq!(
        s.value("😀"),
        at(4, 19),
        "a surrogate pair is one character"
    );
    assert_eq!(s.duplicates().count(), 0);
}

#[test]
fn a_missing_value_is_placed_at_what_encloses_it_and_an_unknown_field_at_its_key() {
    let text = "{\"windows\": [\n  {\"name\": \"w\",\n   \"fualt\": {}}\n]}";
    let s = index_json(text);
    assert_eq!(s.locate("windows[0].fault.freeze", "missing"), at(2, 3));
    assert_eq!(
        s.locate("windows[0]", "unknown field `fualt`, expected one of …"),
        at(3, 4)
    );
    assert_eq!(
        s.locate(
            "windows[0].fualt",
            "unknown field `fualt`, expected one of …"
        ),
        at(3, 4)
    );
    assert_eq!(s.locate("nowhere.at.all", "x"), at(1, 1));
    assert_eq!(Spans::default().locate("a", "x"), None);
}

#[test]
fn a_key_given_twice_is_found() {
    let s = index_json("{\"a\": {\"b\": 1,\n \"b\": 2}, \"c\": {\"b\": 3}}");
    let d: Vec<_> = s.duplicates().collect();
    assert_eq!(
        d,
        [(
            "a",
            "duplicate field `b`".to_string(),
            Pos { line: 2, column: 2 }
        )]
    );
}

#[test]
fn json_text_it_cannot_follow_stops_without_panicking() {
    for text in [
        "",
        "{",
        "{\"a\": [1, ",
        "{\"a\" 1}",
        "\"\\u12",
        "[1 2]",
        "{\"a\": \"\\ud800\"}",
    ] {
        let _ = index_json(text);
    }
}

#[test]
fn a_syntax_error_column_counts_characters() {
    let text = "{\"é\": [1,, 2]}";
    let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
    assert_eq!(
        json_syntax_error(text, &e),
        Pos {
            line: 1,
            column: 10
        }
    );
}

#[test]
fn yaml_documents_are_placed_values_and_keys() {
    let text = "# a comment\napiVersion: v1\nmetadata:\n  name: \"x\"\n  labels: {a: 1, é: [1, two]}\n---\n# nothing\n---\n- one\n- &x two\n- *x\n";
    let docs = yaml_documents(text, "f.yaml").unwrap();
    assert_eq!(docs.len(), 2, "the document of comments alone is skipped");
    let s = &docs[0].spans;
    assert_eq!(docs[0].value["metadata"]["labels"]["é"][1], "two");
    assert_eq!(s.key("apiVersion"), at(2, 1));
    assert_eq!(s.value("apiVersion"), at(2, 13));
    assert_eq!(s.value("metadata.name"), at(4, 9));
    assert_eq!(s.key("metadata.labels.é"), at(5, 18));
    assert_eq!(s.value("metadata.labels.é[1]"), at(5, 25));
    assert_eq!(
        docs[1].spans.value("[2]"),
        at(11, 3),
        "an alias where it is used"
    );
    assert_eq!(docs[1].value[2], "two");
}

#[test]
fn a_yaml_syntax_error_is_placed_and_its_message_kept() {
    let e = yaml_documents("a: [1, 2\nb: c\n", "f.yaml").unwrap_err();
    assert_eq!(e.at, at(2, 2));
    assert!(!e.message.contains("line"), "{e}");
    assert!(e.to_string().starts_with("f.yaml:2:2: "), "{e}");
    let d = yaml_documents("a: 1\na: 2\n", "f.yaml");
    // Either the parser refuses the second `a`, or it is reported as a duplicate.
    if let Ok(d) = d {
        assert_eq!(
            d[0].spans.duplicates().next().map(|x| x.2),
            Some(Pos { line: 2, column: 1 })
        );
    }
}

#[test]
fn an_error_prints_as_a_compiler_prints_one() {
    let spans = index_json("{\"a\": {\"b\": 418}}");
    let e = Located::at_path("bad.json", &spans, "a.b".into(), "418 is wrong".into());
    assert_eq!(e.to_string(), "bad.json:1:13: a.b: 418 is wrong");
    let e = Located::at_path(
        "bad.json",
        &Spans::default(),
        "a.b".into(),
        "418 is wrong".into(),
    );
    assert_eq!(e.to_string(), "bad.json: a.b: 418 is wrong");
    let e = Located::at_path("bad.json", &spans, String::new(), "empty".into());
    assert_eq!(e.to_string(), "bad.json:1:1: empty");
}

#[test]
fn deserialize_errors_carry_the_whole_path() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct W {
        n: u16,
    }
    let text = "{\"w\": [{\"n\": 1}, {\"n\": \"x\"}]}";
    let spans = index_json(text);
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let e = deserialize::<W>(&v["w"][1], "w[1]", "f", &spans).unwrap_err();
    assert_eq!(e.path, "w[1].n");
    assert_eq!(e.at, at(1, 24));
    let e = deserialize::<Vec<W>>(&v["w"], "w", "f", &spans).unwrap_err();
    assert_eq!(e.path, "w[1].n");
}
