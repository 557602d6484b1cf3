//! The `get_resource` / `can_i` result cache of policy-server: successful answers are kept for
//! 5 seconds (configurable), errors are never cached, and a miss is fetched while holding the
//! cache lock (the `cached` crate's `sync_writes`), so concurrent misses are serialised and every
//! key is fetched once per TTL window.
//!
//! The cache reads the time through a [`Clock`]: the real one everywhere but in tests of expiry,
//! which move a [`ManualClock`] by hand instead of sleeping and racing the machine's load.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// policy-server's cache lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(5);

/// Where a cache reads the time: the real monotonic clock, or a [`ManualClock`] that a test
/// moves. (A closed set rather than a trait object: a cache holds it inline, and a fat pointer
/// per cache would grow `LookupSource::Cluster` for every host.)
#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    System,
    Manual(Arc<ManualClock>),
}

impl Clock {
    pub fn now(&self) -> Instant {
        match self {
            Self::System => Instant::now(),
            Self::Manual(clock) => clock.now(),
        }
    }
}

/// A clock that stands still until [`ManualClock::advance`] moves it, so that a test decides
/// when an entry expires whatever else the machine is doing.
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            elapsed: Mutex::new(Duration::ZERO),
        }
    }

    pub fn now(&self) -> Instant {
        self.start + *self.elapsed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.elapsed.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

/// A TTL cache keyed by string.
#[derive(Debug)]
pub struct TtlCache<V> {
    ttl: Duration,
    clock: Clock,
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Fetched,
}

impl<V: Clone> TtlCache<V> {
    pub fn new(ttl: Duration) -> Self {
        Self::with_clock(ttl, Clock::System)
    }

    /// A cache that reads the time from `clock`.
    pub fn with_clock(ttl: Duration, clock: Clock) -> Self {
        Self {
            ttl,
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Returns the cached value for `key`, or runs `fetch` (holding the lock) and caches an `Ok`.
    pub fn get_or_fetch<E>(&self, key: &str, fetch: impl FnOnce() -> Result<V, E>) -> (Result<V, E>, Origin) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.clock.now();
        if let Some((at, value)) = entries.get(key)
            && now.duration_since(*at) < self.ttl
        {
            return (Ok(value.clone()), Origin::Cache);
        }
        entries.retain(|_, (at, _)| now.duration_since(*at) < self.ttl);
        let result = fetch();
        if let Ok(value) = &result {
            entries.insert(key.to_owned(), (self.clock.now(), value.clone()));
        }
        (result, Origin::Fetched)
    }

    /// Drops every entry.
    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_only_successes_for_ttl() {
        let clock = Arc::new(ManualClock::new());
        let cache = TtlCache::with_clock(Duration::from_secs(5), Clock::Manual(clock.clone()));
        let (r, o) = cache.get_or_fetch("k", || Err::<u32, _>("boom"));
        assert_eq!((r, o), (Err("boom"), Origin::Fetched));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(1));
        assert_eq!((r, o), (Ok(1), Origin::Fetched));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(2));
        assert_eq!((r, o), (Ok(1), Origin::Cache));
        // an entry lives for less than the TTL: still there just before it, gone at it
        clock.advance(Duration::from_secs(5) - Duration::from_nanos(1));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(3));
        assert_eq!((r, o), (Ok(1), Origin::Cache));
        clock.advance(Duration::from_nanos(1));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(3));
        assert_eq!((r, o), (Ok(3), Origin::Fetched));
    }
}
