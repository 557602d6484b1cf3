//! The `get_resource` / `can_i` result cache of policy-server: successful answers are kept for
//! 5 seconds (configurable), errors are never cached, and a miss is fetched while holding the
//! cache lock (the `cached` crate's `sync_writes`), so concurrent misses are serialised and every
//! key is fetched once per TTL window.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// policy-server's cache lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(5);

/// A TTL cache keyed by string.
#[derive(Debug)]
pub struct TtlCache<V> {
    ttl: Duration,
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
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Returns the cached value for `key`, or runs `fetch` (holding the lock) and caches an `Ok`.
    pub fn get_or_fetch<E>(&self, key: &str, fetch: impl FnOnce() -> Result<V, E>) -> (Result<V, E>, Origin) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if let Some((at, value)) = entries.get(key)
            && now.duration_since(*at) < self.ttl
        {
            return (Ok(value.clone()), Origin::Cache);
        }
        entries.retain(|_, (at, _)| now.duration_since(*at) < self.ttl);
        let result = fetch();
        if let Ok(value) = &result {
            entries.insert(key.to_owned(), (Instant::now(), value.clone()));
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
        let cache = TtlCache::new(Duration::from_millis(80));
        let (r, o) = cache.get_or_fetch("k", || Err::<u32, _>("boom"));
        assert_eq!((r, o), (Err("boom"), Origin::Fetched));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(1));
        assert_eq!((r, o), (Ok(1), Origin::Fetched));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(2));
        assert_eq!((r, o), (Ok(1), Origin::Cache));
        std::thread::sleep(Duration::from_millis(100));
        let (r, o) = cache.get_or_fetch("k", || Ok::<_, &str>(3));
        assert_eq!((r, o), (Ok(3), Origin::Fetched));
    }
}
