//! Peak linear memory of one admission: the smallest memory cap under which it still gets its
//! uncapped answer (bisection, `kubewarden_engine::runtime::memory::peak_linear_memory`).

use super::admission::Engines;
use crate::world::Scenario;

pub struct PeakMemory {
    pub scenario: Scenario,
    /// Bytes, ours and the floor.
    pub ours: usize,
    pub floor: usize,
}

pub fn measure_memory(e: &Engines, scenarios: &[&Scenario]) -> Vec<PeakMemory> {
    eprintln!("bench: linear memory");
    scenarios
        .iter()
        .map(|s| {
            let peak = |p| {
                kubewarden_engine::runtime::memory::peak_linear_memory(p, &e.host, &s.request, &e.settings)
                    .expect("peak memory")
            };
            PeakMemory {
                scenario: (*s).clone(),
                ours: peak(&e.ours),
                floor: peak(&e.floor),
            }
        })
        .collect()
}
