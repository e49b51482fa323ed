//! The object model: a JSON-compatible value tree in which every node carries its provenance.
//!
//! Values are what Helm receives, so the data model is JSON's (Helm hands every values file through
//! `sigs.k8s.io/yaml`, which converts YAML to JSON): null, booleans, numbers, strings, sequences and
//! string-keyed maps that keep their insertion order.

use indexmap::IndexMap;

use crate::data::provenance::{Layer, Prov};

/// A map that keeps the order keys were written or merged in.
pub type Map = IndexMap<String, Node>;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Seq(Vec<Node>),
    Map(Map),
}

/// A value with the provenance of the place that wrote it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub prov: Prov,
}

impl Node {
    pub fn new(value: Value, prov: Prov) -> Self {
        Node { value, prov }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The member `key` of a map node; `None` for other nodes.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map().and_then(|m| m.get(key))
    }

    /// The member `key`, treating an explicit null like an absent key (nyl's own object fields:
    /// `spec:` with nothing after it means "no spec").
    pub fn field(&self, key: &str) -> Option<&Node> {
        self.get(key).filter(|n| !n.is_null())
    }

    /// Sets the layer of this node and of every node below it.
    pub fn set_layer(&mut self, layer: Layer) {
        self.prov.layer = layer;
        match &mut self.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| n.set_layer(layer)),
            Value::Map(map) => map.values_mut().for_each(|n| n.set_layer(layer)),
            _ => {}
        }
    }

    /// A short name of the node's type, for messages.
    pub fn type_name(&self) -> &'static str {
        self.value.type_name()
    }

    /// The plain JSON value, provenance dropped.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => J::Number(n.clone()),
            Value::String(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(map) => {
                J::Object(map.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// A value tree from plain JSON, every node tagged with `prov`.
    pub fn from_json(json: &serde_json::Value, prov: Prov) -> Node {
        use serde_json::Value as J;
        let value = match json {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => Value::Number(n.clone()),
            J::String(s) => Value::String(s.clone()),
            J::Array(items) => Value::Seq(items.iter().map(|i| Node::from_json(i, prov)).collect()),
            J::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v, prov)))
                    .collect(),
            ),
        };
        Node::new(value, prov)
    }
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Seq(_) => "sequence",
            Value::Map(_) => "mapping",
        }
    }
}
