//! The merge rules: one function, used for every layering nyl does (Cluster < DeploymentTarget
//! values, value imports < invocation spec).
//!
//! | base \ overlay | mapping                   | sequence | scalar   | null     |
//! |----------------|---------------------------|----------|----------|----------|
//! | mapping        | merge key by key (recurse) | replaces | replaces | replaces |
//! | anything else  | replaces                  | replaces | replaces | replaces |
//!
//! A key absent from the overlay keeps the base value. A key only in the overlay is added after the
//! base's keys, so key order is stable. An explicit null is kept in the result rather than removing
//! the key: Helm receives it and deletes the key, chart default included. An empty mapping in the
//! overlay merges, so it keeps the base's keys. These are Helm's rules for user-supplied values.
//!
//! Provenance rides along: every node keeps the tag of the layer that wrote it, and a mapping that
//! two layers wrote takes the overlay's tag.

use crate::data::value::{Node, Value};

/// Called for every base node that the overlay replaced, with the pointer tokens of the place.
pub type OnReplace<'a> = &'a mut dyn FnMut(&[String], &Node, &Node);

/// Merges `overlay` over `base`.
pub fn merge(base: Node, overlay: Node) -> Node {
    merge_with(base, overlay, &mut |_, _, _| {})
}

/// Merges `overlay` over `base`, reporting each replaced base node to `on_replace`.
pub fn merge_with(base: Node, overlay: Node, on_replace: OnReplace<'_>) -> Node {
    let mut path = Vec::new();
    merge_at(base, overlay, &mut path, on_replace)
}

fn merge_at(base: Node, overlay: Node, path: &mut Vec<String>, on_replace: OnReplace<'_>) -> Node {
    match (base.value, overlay.value) {
        (Value::Map(mut base_map), Value::Map(overlay_map)) => {
            for (key, over) in overlay_map {
                match base_map.get_mut(&key) {
                    Some(slot) => {
                        let under = std::mem::replace(slot, Node::new(Value::Null, over.prov));
                        path.push(key);
                        *slot = merge_at(under, over, path, on_replace);
                        path.pop();
                    }
                    None => {
                        base_map.insert(key, over);
                    }
                }
            }
            Node::new(Value::Map(base_map), overlay.prov)
        }
        (base_value, overlay_value) => {
            let old = Node::new(base_value, base.prov);
            let new = Node::new(overlay_value, overlay.prov);
            on_replace(path, &old, &new);
            new
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::{FileId, Layer, ObjectId};
    use crate::data::yaml::{parse_stream, Limits};

    fn doc(text: &str, layer: Layer) -> Node {
        let mut node = parse_stream(text, FileId(0), &Limits::default())
            .docs
            .remove(0);
        node.set_layer(layer);
        node
    }

    fn json(text: &str) -> serde_json::Value {
        doc(text, Layer::Written).to_json()
    }

    const BASE: Layer = Layer::TargetValues {
        object: ObjectId(0),
    };
    const OVER: Layer = Layer::Spec {
        object: ObjectId(1),
    };

    fn merged(base: &str, overlay: &str) -> Node {
        merge(doc(base, BASE), doc(overlay, OVER))
    }

    #[test]
    fn maps_merge_recursively() {
        let m = merged("a: {x: 1, w: 2}\nb: 1\n", "a: {w: 3, z: 4}\n");
        assert_eq!(m.to_json(), json("a: {x: 1, w: 3, z: 4}\nb: 1\n"));
    }

    #[test]
    fn key_order_is_base_then_new_overlay_keys() {
        let m = merged("a: 1\nb: 2\nc: 3\n", "d: 4\nb: 5\n");
        let keys: Vec<_> = m.as_map().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
    }

    #[test]
    fn arrays_scalars_and_null_replace() {
        assert_eq!(
            merged("a: [1, 2]\n", "a: [3]\n").to_json(),
            json("a: [3]\n")
        );
        assert_eq!(merged("a: {x: 1}\n", "a: 5\n").to_json(), json("a: 5\n"));
        assert_eq!(
            merged("a: 5\n", "a: {x: 1}\n").to_json(),
            json("a: {x: 1}\n")
        );
        assert_eq!(
            merged("a: {x: 1}\n", "a: [1]\n").to_json(),
            json("a: [1]\n")
        );
    }

    #[test]
    fn explicit_falsy_values_replace() {
        for falsy in ["false", "0", "\"\"", "[]"] {
            let m = merged("a: {x: 1}\n", &format!("a: {falsy}\n"));
            assert_eq!(m.to_json(), json(&format!("a: {falsy}\n")), "{falsy}");
        }
    }

    #[test]
    fn null_survives_so_helm_can_delete_the_key() {
        let m = merged("a: {x: 1}\nb: 2\n", "a: null\n");
        assert!(m.get("a").is_some_and(Node::is_null));
        assert_eq!(m.to_json(), json("a: null\nb: 2\n"));
    }

    #[test]
    fn empty_map_keeps_base_keys() {
        assert_eq!(
            merged("a: {x: 1}\n", "a: {}\n").to_json(),
            json("a: {x: 1}\n")
        );
    }

    #[test]
    fn provenance_follows_the_layer_that_wrote_each_node() {
        let m = merged("a: {x: 1, w: 2}\n", "a: {w: 3}\n");
        assert_eq!(m.get("a").unwrap().get("x").unwrap().prov.layer, BASE);
        assert_eq!(m.get("a").unwrap().get("w").unwrap().prov.layer, OVER);
        assert_eq!(m.get("a").unwrap().prov.layer, OVER);
    }

    #[test]
    fn replacements_are_reported_with_their_path() {
        let mut seen = Vec::new();
        merge_with(
            doc("a: {x: 1, w: 2}\n", BASE),
            doc("a: {w: 3, z: 4}\n", OVER),
            &mut |path, old, new| seen.push((path.join("/"), old.to_json(), new.to_json())),
        );
        assert_eq!(seen, [("a/w".to_string(), 2.into(), 3.into())]);
    }

    #[test]
    fn merge_is_associative_when_no_layer_changes_a_mapping_into_a_scalar() {
        let samples = [
            "a: {x: 1, w: [1]}\n",
            "a: {w: null, z: 2}\nb: s\n",
            "a: {x: 7}\nc: {d: {e: 1}}\n",
            "c: {d: {f: 2}}\na: {x: 0}\n",
            "b: null\n",
        ];
        for a in samples {
            for b in samples {
                for c in samples {
                    let left = merge(merge(doc(a, BASE), doc(b, BASE)), doc(c, BASE));
                    let right = merge(doc(a, BASE), merge(doc(b, BASE), doc(c, BASE)));
                    assert_eq!(left.to_json(), right.to_json(), "{a} | {b} | {c}");
                }
            }
        }
    }

    #[test]
    fn layering_is_a_left_fold_so_a_scalar_between_two_mappings_clears_the_lower_one() {
        // As in Helm, a middle layer that replaces a mapping with a scalar drops the lower
        // layer's keys for good: (a ⊕ b) ⊕ c keeps nothing of a's mapping.
        let (a, b, c) = ("k: {x: 1}\n", "k: 7\n", "k: {z: 2}\n");
        let folded = merge(merge(doc(a, BASE), doc(b, BASE)), doc(c, BASE));
        assert_eq!(folded.to_json(), json("k: {z: 2}\n"));
    }

    /// A small deterministic generator (no dependency), for the properties below.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        /// A tree over a fixed skeleton: `m*` keys always hold mappings, other keys never do, so
        /// no layer turns a mapping into a scalar (where a left fold is all there is).
        fn tree(&mut self, depth: u32) -> Node {
            let mut map = crate::data::value::Map::new();
            for key in ["ma", "mb", "x", "y", "list"] {
                if self.next(3) == 0 {
                    continue;
                }
                let value = match key {
                    "ma" | "mb" if depth < 3 => self.tree(depth + 1).value,
                    "ma" | "mb" => Value::Map(crate::data::value::Map::new()),
                    "list" => Value::Seq(
                        (0..self.next(3))
                            .map(|i| leaf(Value::Number(i.into())))
                            .collect(),
                    ),
                    _ => match self.next(4) {
                        0 => Value::Null,
                        1 => Value::Bool(true),
                        2 => Value::String(format!("s{}", self.next(5))),
                        _ => Value::Number(self.next(9).into()),
                    },
                };
                map.insert(key.to_string(), leaf(value));
            }
            leaf(Value::Map(map))
        }
    }

    fn leaf(value: Value) -> Node {
        Node::new(
            value,
            crate::data::provenance::Prov::written(crate::data::provenance::Loc::new(FileId(0), 1)),
        )
    }

    #[test]
    fn property_layering_is_associative_and_overlays_win() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let (a, b, c) = (g.tree(0), g.tree(0), g.tree(0));
            let left = merge(merge(a.clone(), b.clone()), c.clone());
            let right = merge(a.clone(), merge(b.clone(), c.clone()));
            assert_eq!(left.to_json(), right.to_json());
            // Every leaf of the overlay (nulls and whole lists included) is in the result as written.
            let merged = merge(a.clone(), b.clone());
            crate::data::pointer::for_each_leaf(&b, &mut |pointer, node| {
                if !matches!(node.value, Value::Map(_)) {
                    let got = crate::data::pointer::Pointer::parse(pointer)
                        .ok()
                        .and_then(|p| p.get(&merged).cloned());
                    assert_eq!(got.map(|n| n.to_json()), Some(node.to_json()), "{pointer}");
                }
            });
            // An empty layer changes nothing.
            let empty = leaf(Value::Map(crate::data::value::Map::new()));
            assert_eq!(merge(a.clone(), empty.clone()).to_json(), a.to_json());
            assert_eq!(merge(empty, a.clone()).to_json(), a.to_json());
        }
    }
}
