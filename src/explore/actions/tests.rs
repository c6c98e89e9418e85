use super::*;
use crate::setup::parse;

const SCHEMA_SETUP: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: caches.example.dev}
spec:
  group: example.dev
  scope: Namespaced
  names: {plural: caches, singular: cache, kind: Cache}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 1, maximum: 5}
              paused: {type: boolean}
              tier: {type: string, enum: [small, large]}
              endpoint: {type: string}
              secretRef:
                type: object
                properties: {name: {type: string}}
              zones: {type: array, items: {type: string}}
---
apiVersion: example.dev/v1
kind: Cache
metadata: {name: c1, namespace: demo}
spec:
  replicas: 1
  tier: small
  endpoint: https://cache.example.dev
  secretRef: {name: creds}
  zones: [a, b]
"#;

fn labels(g: &Generated) -> Vec<String> {
    g.sequences.iter().map(Sequence::label).collect()
}

fn has(g: &Generated, needle: &str) -> bool {
    labels(g).iter().any(|l| l.contains(needle))
}

#[test]
fn a_schema_says_what_each_field_may_become() {
    let setup = parse(SCHEMA_SETUP, "test").unwrap();
    let g = generate(&setup, 1);
    assert!(g.notes.is_empty(), "{:?}", g.notes);
    // Numbers within the schema's bounds: up from 1, not down to 0 (minimum 1).
    assert!(has(
        &g,
        "set /spec/replicas of caches.example.dev demo/c1 to 2 (was 1)"
    ));
    assert!(!has(
        &g,
        "/spec/replicas of caches.example.dev demo/c1 to 0"
    ));
    // A required field is never unset; an optional one is.
    assert!(!has(&g, "unset /spec/replicas"));
    assert!(has(&g, "unset /spec/endpoint"));
    // Enums cycle; an unset boolean is set.
    assert!(has(
        &g,
        "set /spec/tier of caches.example.dev demo/c1 to \"large\""
    ));
    assert!(has(
        &g,
        "set /spec/paused of caches.example.dev demo/c1 to true"
    ));
    // Values the controller must reject: a URL that does not parse, a missing object.
    assert!(has(&g, "which does not parse as a URL"));
    assert!(has(
        &g,
        "to name \"stalemate-missing\", which does not exist"
    ));
    // Lists grow and shrink.
    assert!(has(
        &g,
        "/spec/zones of caches.example.dev demo/c1: add an item (\"b-2\")"
    ));
    assert!(has(
        &g,
        "/spec/zones of caches.example.dev demo/c1: remove its last item"
    ));
    // Object-level actions, and sequences of two and three.
    assert!(has(
        &g,
        "delete caches.example.dev demo/c1 and create it again at once"
    ));
    assert!(has(&g, "once it is gone"));
    assert!(has(&g, "create c1-2, one more like"));
    assert!(
        g.sequences
            .iter()
            .any(|s| s.actions.len() == 2 && s.actions[1].label.starts_with("put /spec/replicas"))
    );
    assert!(g.sequences.iter().any(|s| s.actions.len() == 3));
    assert!(
        g.sequences
            .iter()
            .all(|s| (1..=3).contains(&s.actions.len()))
    );
    // Breadth first: the first sequences cover different kinds of action.
    assert!(labels(&g)[0].contains("create it again at once"));
}

#[test]
fn the_same_seed_gives_the_same_sequences_and_another_a_different_order() {
    let setup = parse(SCHEMA_SETUP, "test").unwrap();
    assert_eq!(generate(&setup, 7).sequences, generate(&setup, 7).sequences);
    let (a, b) = (labels(&generate(&setup, 1)), labels(&generate(&setup, 2)));
    assert_ne!(a, b);
    let (mut sa, mut sb) = (a.clone(), b.clone());
    sa.sort();
    sb.sort();
    assert_eq!(
        sa, sb,
        "a seed orders the sequences; it does not change them"
    );
}

#[test]
fn preserved_unknown_fields_are_changed_as_their_values_allow() {
    let setup = parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/widgets/setup.yaml"
        ))
        .unwrap(),
        "widgets",
    )
    .unwrap();
    let g = generate(&setup, 1);
    assert!(has(
        &g,
        "set /spec/size of widgets.demo.stalemate.dev demo/w1 to 2 (was 1)"
    ));
    assert!(has(&g, "to 0 (was 1)"));
    // Nothing for the CRD or the namespace.
    assert!(!has(&g, "customresourcedefinitions"));
    assert!(!has(&g, "namespaces"));
}

#[test]
fn an_object_without_a_schema_is_only_deleted_recreated_and_annotated_and_said_so() {
    let setup = parse(
        "apiVersion: example.dev/v1\nkind: Cache\nmetadata: {name: c1, namespace: demo}\nspec: {replicas: 1}\n",
        "test",
    )
    .unwrap();
    let g = generate(&setup, 1);
    assert_eq!(g.notes.len(), 1);
    assert!(
        g.notes[0].contains("no schema (its CRD is not in the setup)"),
        "{:?}",
        g.notes
    );
    assert!(!has(&g, "/spec/replicas"));
    assert!(has(
        &g,
        "delete caches.example.dev demo/c1 and create it again"
    ));
}

#[test]
fn built_in_kinds_get_the_fields_a_user_changes() {
    let setup = parse(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: 'nginx:1.25'}]}\n",
        "test",
    )
    .unwrap();
    let g = generate(&setup, 1);
    assert!(g.notes.is_empty());
    assert!(has(
        &g,
        "set /spec/replicas of deployments.apps demo/web to 3 (was 2)"
    ));
    assert!(has(&g, "to 0 (was 2)"));
    assert!(has(&g, "/spec/paused of deployments.apps demo/web to true"));
    assert!(has(
        &g,
        "image of deployments.apps demo/web to \"nginx:1.25-2\""
    ));
    assert!(
        !has(&g, "/spec/selector"),
        "the selector is not a user's edit"
    );
    // A rollout by a pod-template label, and the object labelled and unlabelled.
    assert!(
        has(
            &g,
            "/spec/template/metadata/labels/stalemate.dev~1touched of deployments.apps demo/web: label stalemate.dev/touched=1 added"
        ),
        "{:#?}",
        labels(&g)
    );
    assert!(has(
        &g,
        "label deployments.apps demo/web stalemate.dev/touched=1"
    ));
    assert!(has(
        &g,
        "remove label stalemate.dev/touched from deployments.apps demo/web"
    ));
}

#[test]
fn every_step_is_one_shell_word_a_shell_gives_back_unchanged() {
    let setup = parse(SCHEMA_SETUP, "test").unwrap();
    for s in generate(&setup, 1).sequences {
        for a in &s.actions {
            let word = shell_word(&a.run);
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf '%s' {word}")])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), a.run);
        }
    }
}

#[test]
fn an_actions_file_is_read_and_bad_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        "- name: scale down then up\n  steps: [\"kubectl scale --replicas=0 x\", \"kubectl scale --replicas=1 x\"]\n- name: touch\n  run: kubectl annotate x a=b\n",
    )
    .unwrap();
    let seqs = load(&good).unwrap();
    assert_eq!(seqs.len(), 2);
    assert_eq!(seqs[0].steps().len(), 2);
    assert_eq!(seqs[1].label(), "touch");
    // A scalar YAML would type is the command as written.
    let seven = super::parse("- name: 1\n  run: 7\n", "f.yaml").unwrap();
    assert_eq!(
        (seven[0].label(), seven[0].steps()),
        ("1".to_string(), vec!["7".to_string()])
    );
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "- name: nothing\n").unwrap();
    let e = format!("{:#}", load(&bad).unwrap_err());
    assert!(e.contains("entry 1") && e.contains("has no command"), "{e}");
    // Every bad entry, each at its line and column.
    std::fs::write(
        &bad,
        "- name: fine\n  run: 7\n- nme: typo\n  run: x\n- name: nothing\n- name: \"\"\n  steps: [a, {b: c}]\n",
    )
    .unwrap();
    let e = format!("{:#}", load(&bad).unwrap_err());
    let f = bad.display();
    assert!(
        e.starts_with(&format!("--actions {f} has 3 error(s):\n")),
        "{e}"
    );
    for want in [
        format!("  {f}:3:3: [1].nme: unknown field `nme`, expected"),
        format!("  {f}:5:3: [2]: entry 3 (\"nothing\") has no command"),
        format!("  {f}:7:14: [3].steps[1]: invalid type: map, expected a string"),
    ] {
        assert!(e.contains(&want), "{want}\nin\n{e}");
    }
    assert!(e.contains("expected a list of"), "{e}");
    std::fs::write(&bad, "name: x\nrun: y\n").unwrap();
    let e = format!("{:#}", load(&bad).unwrap_err());
    assert!(
        e.contains(&format!("{f}:1:1: not a list (expected a list of")),
        "{e}"
    );
    let e = format!("{:#}", load(&dir.path().join("absent.yaml")).unwrap_err());
    assert!(e.contains("absent.yaml"), "{e}");
}

/// A string set to a sibling's value where both hold the same kind of thing (two
/// durations): a value a user plausibly copies. Strings of different kinds, and enums,
/// are not crossed.
#[test]
fn a_string_can_take_a_siblings_value_of_the_same_kind() {
    let setup = parse(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: syncs.example.dev}
spec:
  group: example.dev
  scope: Namespaced
  names: {plural: syncs, singular: sync, kind: Sync}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              interval: {type: string}
              timeout: {type: string}
              url: {type: string}
              mode: {type: string, enum: ["1m", "fast"]}
---
apiVersion: example.dev/v1
kind: Sync
metadata: {name: s1, namespace: demo}
spec: {interval: 5m, timeout: 1m, url: "https://example.dev/repo", mode: "fast"}
"#,
        "test",
    )
    .unwrap();
    let g = generate(&setup, 1);
    assert!(has(
        &g,
        "set /spec/interval of syncs.example.dev demo/s1 to \"1m\", timeout's value (was \"5m\")"
    ));
    assert!(has(
        &g,
        "set /spec/timeout of syncs.example.dev demo/s1 to \"5m\", interval's value (was \"1m\")"
    ));
    assert!(!has(&g, "url's value"), "{:#?}", labels(&g));
    assert!(!has(&g, "mode's value"), "{:#?}", labels(&g));
}
