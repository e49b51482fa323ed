//! Helm's coalescing of user values over a chart's defaults, computed by nyl where it must know
//! the values a chart ends up with before Helm runs (explain, schema checks). Helm stays the
//! authority: a differential test compares this with the `.Values` Helm renders.
//!
//! Over a chart's `values.yaml` (and, per subchart, `charts/NAME/values.yaml` under the key
//! `NAME`), user values win:
//!
//! | user \ default   | mapping   | other     | absent   |
//! |------------------|-----------|-----------|----------|
//! | mapping          | merged    | user      | user     |
//! | null             | deleted   | deleted   | null     |
//! | other            | user      | user      | user     |
//! | absent           | default   | default   | -        |
//!
//! A user null deletes the key together with its default; a null without a default stays. Each
//! subchart sees its parent's `global` merged over its own (the parent's globals win); a user null
//! in `global` does not reach subcharts, which still see the default (Helm 4.3.1's behaviour, one
//! of the known holes of null deletion in subchart values).

use crate::value::{Map, Node, Value};

/// A chart's own defaults and its subcharts'.
#[derive(Clone, Debug, Default)]
pub struct ChartValues {
    pub defaults: Option<Node>,
    pub subcharts: Vec<(String, ChartValues)>,
}

/// The values the chart's templates see: `user` coalesced over the chart's defaults.
pub fn coalesce(user: Node, chart: &ChartValues) -> Node {
    // Subcharts see the globals without the user's nulls: Helm 4.3.1 deletes a global for the
    // parent on a user null, but its subcharts still get the chart default.
    let sub_globals = user.get("global").map(without_nulls).map(|g| {
        match chart.defaults.as_ref().and_then(|d| d.get("global")) {
            Some(defaults) => over(g, defaults),
            None => g,
        }
    });
    let sub_globals =
        sub_globals.or_else(|| chart.defaults.as_ref()?.get("global").map(without_nulls));
    let mut values = match &chart.defaults {
        Some(defaults) => over(user, defaults),
        None => user,
    };
    if let Value::Map(map) = &mut values.value {
        for (name, sub) in &chart.subcharts {
            let parent_globals = sub_globals.clone();
            let prov = values.prov;
            let entry = map
                .entry(name.clone())
                .or_insert_with(|| Node::new(Value::Map(Map::new()), prov));
            if !matches!(entry.value, Value::Map(_)) {
                continue;
            }
            if let Some(globals) = parent_globals {
                merge_globals(entry, globals);
            }
            let taken = std::mem::replace(entry, Node::new(Value::Null, prov));
            *entry = coalesce(taken, sub);
        }
    }
    values
}

/// `user` over `defaults`, by the table in the module documentation.
fn over(user: Node, defaults: &Node) -> Node {
    let (Value::Map(mut user_map), Value::Map(default_map)) = (user.value.clone(), &defaults.value)
    else {
        return user;
    };
    for (key, default) in default_map {
        match user_map.get_mut(key) {
            Some(u) if u.is_null() => {
                user_map.shift_remove(key);
            }
            Some(u) => {
                let taken = std::mem::replace(u, Node::new(Value::Null, u.prov));
                *u = over(taken, default);
            }
            None if default.is_null() => {}
            None => {
                user_map.insert(key.clone(), without_nulls(default));
            }
        }
    }
    Node::new(Value::Map(user_map), user.prov)
}

/// A default copied in: Helm drops the `key: ~` entries of a chart's own values.
fn without_nulls(node: &Node) -> Node {
    match &node.value {
        Value::Map(map) => Node::new(
            Value::Map(
                map.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), without_nulls(v)))
                    .collect(),
            ),
            node.prov,
        ),
        _ => node.clone(),
    }
}

/// The parent's `global` merged over the subchart's (the parent wins).
fn merge_globals(sub: &mut Node, parent_globals: Node) {
    let Value::Map(sub_map) = &mut sub.value else {
        return;
    };
    let prov = parent_globals.prov;
    let own = sub_map
        .shift_remove("global")
        .unwrap_or_else(|| Node::new(Value::Map(Map::new()), prov));
    if matches!(own.value, Value::Map(_)) && matches!(parent_globals.value, Value::Map(_)) {
        sub_map.insert(
            "global".to_string(),
            crate::merge::merge(own, parent_globals),
        );
    } else {
        sub_map.insert("global".to_string(), own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::doc;

    fn chart(defaults: &str) -> ChartValues {
        ChartValues {
            defaults: Some(doc(defaults)),
            subcharts: Vec::new(),
        }
    }

    #[test]
    fn user_values_win_and_maps_merge() {
        let v = coalesce(
            doc("a: {x: 1}\nlist: [9]\n"),
            &chart("a: {x: 0, w: 2}\nlist: [1, 2]\nkeep: 3\n"),
        );
        assert_eq!(
            v.to_json(),
            doc("a: {x: 1, w: 2}\nlist: [9]\nkeep: 3\n").to_json()
        );
    }

    #[test]
    fn a_user_null_deletes_the_default_and_a_lone_null_stays() {
        let v = coalesce(
            doc("a: null\nb: {c: null}\nlone: null\n"),
            &chart("a: 1\nb: {c: 2, d: 3}\n"),
        );
        assert_eq!(v.to_json(), doc("b: {d: 3}\nlone: null\n").to_json());
    }

    #[test]
    fn a_type_mismatch_keeps_the_user_value() {
        let v = coalesce(doc("a: 5\nb: {x: 1}\n"), &chart("a: {x: 1}\nb: 7\n"));
        assert_eq!(v.to_json(), doc("a: 5\nb: {x: 1}\n").to_json());
    }

    #[test]
    fn subcharts_get_their_key_and_the_parent_globals() {
        let parent = ChartValues {
            defaults: Some(doc("global: {region: eu}\n")),
            subcharts: vec![(
                "db".to_string(),
                chart("size: 1Gi\nglobal: {region: us, tier: 1}\n"),
            )],
        };
        let v = coalesce(doc("db: {size: 5Gi}\n"), &parent);
        assert_eq!(
            v.to_json(),
            doc("db: {size: 5Gi, global: {region: eu, tier: 1}}\nglobal: {region: eu}\n").to_json()
        );
    }
}
