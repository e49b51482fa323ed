//! "Where did this value come from?": for one JSON Pointer of one release, every layer that set
//! it, lowest first, by which rule, and which one won.

use crate::data::pointer::Pointer;
use crate::data::value::{Node, Value};
use crate::values::release::ExplainLayer;

/// How a layer affected the value at the pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The first layer to set it (the chart's `values.yaml` when it has the value).
    Set,
    /// A mapping merged over a mapping.
    Merged,
    /// A value that replaced the one below.
    Replaced,
    /// A null, which deletes the key (and its chart default) in Helm.
    DeletedByNull,
    /// A scalar or sequence at an ancestor replaced everything below it, this value included.
    ReplacedAncestor,
    /// A layout values file that does not exist.
    Absent,
}

impl Rule {
    pub fn text(self) -> &'static str {
        match self {
            Rule::Set => "set",
            Rule::Merged => "merged",
            Rule::Replaced => "replaced",
            Rule::DeletedByNull => "deleted by null",
            Rule::ReplacedAncestor => "replaced at an ancestor",
            Rule::Absent => "absent, contributes nothing",
        }
    }
}

/// One layer's part in the value.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    pub label: &'a str,
    pub rule: Rule,
    /// The node the layer holds at the pointer (or at the ancestor that replaced it).
    pub node: Option<&'a Node>,
}

/// The steps of `pointer` through the chart defaults and the release's layers.
pub fn steps<'a>(
    pointer: &Pointer,
    defaults: Option<&'a Node>,
    layers: &'a [ExplainLayer],
) -> Vec<Step<'a>> {
    let mut out = Vec::new();
    let mut current: Option<&Node> = defaults.and_then(|d| pointer.get(d));
    if let Some(node) = current {
        out.push(Step {
            label: "chart default",
            rule: Rule::Set,
            node: Some(node),
        });
    }
    for layer in layers {
        let Some(tree) = &layer.node else {
            out.push(Step {
                label: &layer.label,
                rule: Rule::Absent,
                node: None,
            });
            continue;
        };
        if let Some(node) = pointer.get(tree) {
            let rule = match (current, &node.value) {
                (_, Value::Null) => Rule::DeletedByNull,
                (None, _) => Rule::Set,
                (Some(c), Value::Map(_)) if matches!(c.value, Value::Map(_)) => Rule::Merged,
                _ => Rule::Replaced,
            };
            out.push(Step {
                label: &layer.label,
                rule,
                node: Some(node),
            });
            current = Some(node);
        } else if let Some(ancestor) = blocking_ancestor(pointer, tree) {
            out.push(Step {
                label: &layer.label,
                rule: Rule::ReplacedAncestor,
                node: Some(ancestor),
            });
            current = None;
        }
    }
    out
}

/// A scalar, sequence or null at a proper ancestor of the pointer.
fn blocking_ancestor<'a>(pointer: &Pointer, tree: &'a Node) -> Option<&'a Node> {
    let mut node = tree;
    for token in &pointer.tokens()[..pointer.tokens().len().saturating_sub(1)] {
        node = match &node.value {
            Value::Map(map) => map.get(token)?,
            _ => return Some(node),
        };
        if !matches!(node.value, Value::Map(_)) {
            return Some(node);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::yaml::doc;

    fn rules(pointer: &str, defaults: &str, layers: &[Option<&str>]) -> Vec<Rule> {
        let defaults = doc(defaults);
        let layers: Vec<ExplainLayer> = layers
            .iter()
            .map(|l| ExplainLayer::new("l", l.map(doc)))
            .collect();
        steps(&Pointer::parse(pointer).unwrap(), Some(&defaults), &layers)
            .iter()
            .map(|s| s.rule)
            .collect()
    }

    #[test]
    fn every_rule_is_named() {
        assert_eq!(
            rules("/a", "a: 1\n", &[Some("a: 2\n"), Some("b: 1\n"), None]),
            [Rule::Set, Rule::Replaced, Rule::Absent]
        );
        assert_eq!(
            rules("/m", "m: {x: 1}\n", &[Some("m: {y: 1}\n")]),
            [Rule::Set, Rule::Merged]
        );
        assert_eq!(
            rules("/a", "b: 1\n", &[Some("a: 2\n"), Some("a: null\n")]),
            [Rule::Set, Rule::DeletedByNull]
        );
        assert_eq!(
            rules("/m/x", "m: {x: 1}\n", &[Some("m: 5\n")]),
            [Rule::Set, Rule::ReplacedAncestor]
        );
    }
}
