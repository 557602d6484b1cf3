//! The peak linear memory of one evaluation.
//!
//! Linear memory only grows, and a guest whose growth is refused traps, so the smallest cap (in
//! 64 KiB wasm pages) under which an evaluation still gives the uncapped answer is exactly that
//! evaluation's peak. wasmtime-provider does not expose the instance's memory, hence bisection
//! over caps; every probe reuses the compiled module.

use std::sync::Arc;

use crate::protocol::request::{AdmissionRequest, PolicySettings};
use crate::runtime::callback::HostContext;
use crate::runtime::engine::{EngineError, Policy};

/// The size of a wasm page.
pub const WASM_PAGE: usize = 64 * 1024;

/// wasm32's 4 GiB address space, in pages.
const MAX_PAGES: usize = 65_536;

/// Bytes of linear memory `request` needs, a multiple of [`WASM_PAGE`] (the instance's
/// initial memory included: data, stack and heap).
pub fn peak_linear_memory(
    policy: &Policy,
    host: &Arc<HostContext>,
    request: &AdmissionRequest,
    settings: &PolicySettings,
) -> Result<usize, EngineError> {
    let reference = policy.with_max_memory(None)?.evaluate(host, request, settings)?;
    let fits = |pages: usize| -> Result<bool, EngineError> {
        let capped = policy.with_max_memory(Some(pages * WASM_PAGE))?;
        match capped.evaluate(host, request, settings) {
            Ok(answer) => Ok(answer == reference),
            // the initial memory alone is over the cap
            Err(EngineError::Instantiate { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    };
    let (mut lo, mut hi) = (0, 1);
    while !fits(hi)? {
        lo = hi;
        hi = (hi * 2).min(MAX_PAGES);
        if lo == MAX_PAGES {
            return Ok(MAX_PAGES * WASM_PAGE);
        }
    }
    // invariant: `lo` pages are too few (or 0), `hi` pages are enough
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi * WASM_PAGE)
}
