//! The criterion medians of `cargo bench -p injector-benches --bench core`, read from its output
//! directory if it ran.

use std::path::Path;

use crate::world::Scenario;

/// One request: the core's `wire::validate` and the floor's `validate`, in milliseconds.
pub struct CriterionRow {
    pub label: String,
    pub core: Option<f64>,
    pub floor: Option<f64>,
}

fn median_ms(dir: &Path, id: &str) -> Option<f64> {
    let path = dir
        .join("native")
        .join(id.replace('/', "_"))
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    v.pointer("/median/point_estimate")?.as_f64().map(|ns| ns / 1e6)
}

/// Every scenario the `core` bench runs (all but the 1 MB pod).
pub fn read_medians(dir: &Path, scenarios: &[Scenario]) -> Vec<CriterionRow> {
    scenarios
        .iter()
        .filter(|s| s.id != "pod1m")
        .map(|s| CriterionRow {
            label: s.label.clone(),
            core: median_ms(dir, &format!("core/{}", s.id)),
            floor: median_ms(dir, &format!("floor/{}", s.id)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;

    #[test]
    fn medians_are_read_in_milliseconds_and_missing_ones_are_none() {
        let dir = std::env::temp_dir().join(format!("injector-benches-criterion-{}", std::process::id()));
        let estimates = dir.join("native/core_typical/new");
        std::fs::create_dir_all(&estimates).unwrap();
        let json = r#"{"median": {"point_estimate": 123456.0}}"#;
        std::fs::write(estimates.join("estimates.json"), json).unwrap();
        let mut world = World::new();
        let rows = read_medians(
            &dir,
            &[world.typical(), world.sized("pod1m", "1 MB pod", 1024 * 1024)],
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 1, "the 1 MB pod is not a criterion benchmark");
        assert_eq!(rows[0].label, "typical Deployment pod");
        assert_eq!(rows[0].core, Some(0.123456));
        assert_eq!(rows[0].floor, None);
    }
}
