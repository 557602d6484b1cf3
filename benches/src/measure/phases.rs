//! One admission split in the engine's steps (as `Instance::validate` does them): payload,
//! instantiation, guest call, response.

use std::time::{Duration, Instant};

use kubewarden_engine::{AdmissionResponse, Policy, ValidationResponse};

use super::admission::Engines;
use crate::world::Scenario;

/// Admissions timed per module.
pub const PHASE_SAMPLES: usize = 600;

/// The time of each step, one sample per admission.
#[derive(Default)]
pub struct Phases {
    pub payload: Vec<Duration>,
    pub instantiate: Vec<Duration>,
    pub guest: Vec<Duration>,
    pub response: Vec<Duration>,
}

fn phases_once(p: &Policy, e: &Engines, s: &Scenario, ph: &mut Phases) {
    let t0 = Instant::now();
    let payload = serde_json::to_vec(&serde_json::json!({"request": &s.request, "settings": &e.settings}))
        .expect("payload");
    let t1 = Instant::now();
    let instance = p.instantiate(&e.host).expect("instantiate");
    let t2 = Instant::now();
    let out = instance.call("validate", &payload).expect("validate");
    let t3 = Instant::now();
    let resp: ValidationResponse = serde_json::from_slice(&out).expect("response");
    let r = AdmissionResponse::from_validation_response(&s.request.uid, s.request.object.as_ref(), &resp)
        .expect("admission response");
    let t4 = Instant::now();
    std::hint::black_box(r);
    drop(instance);
    ph.payload.push(t1 - t0);
    ph.instantiate.push(t2 - t1);
    ph.guest.push(t3 - t2);
    ph.response.push(t4 - t3);
}

/// Ours and the floor, interleaved: `(ours, floor)`.
pub fn measure_phases(e: &Engines, s: &Scenario) -> (Phases, Phases) {
    let (mut o, mut f) = (Phases::default(), Phases::default());
    for i in 0..PHASE_SAMPLES {
        if i % 2 == 0 {
            phases_once(&e.ours, e, s, &mut o);
            phases_once(&e.floor, e, s, &mut f);
        } else {
            phases_once(&e.floor, e, s, &mut f);
            phases_once(&e.ours, e, s, &mut o);
        }
    }
    (o, f)
}
