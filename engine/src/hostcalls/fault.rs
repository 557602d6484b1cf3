//! Fault injection for lookups that reach the "API server" (cache misses, `disable_cache` calls,
//! lists, `can_i`): added latency, errors, not-found, malformed answers, answers that are not
//! UTF-8, per kind or per object.
//!
//! Rule syntax (CLI `--fault`, also [`FaultRule::parse`]): `TARGET=EFFECT` where TARGET is `*`,
//! `Kind`, `Kind/name` or `Kind/namespace/name`, and EFFECT is one of
//! `error`, `error:MESSAGE`, `notfound`, `malformed`, `not-utf8`, `latency:MILLIS`, `fail-first:N`
//! (the first N matching lookups fail, later ones succeed).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FaultParseError {
    #[error("fault rule {0:?}: expected TARGET=EFFECT")]
    Syntax(String),
    #[error(
        "fault rule {rule:?}: unknown effect {effect:?} (expected error[:MESSAGE], notfound, malformed, not-utf8, latency:MILLIS or fail-first:N)"
    )]
    Effect { rule: String, effect: String },
    #[error("fault rule {rule:?}: {what} is not a number")]
    Number { rule: String, what: String },
    #[error("fault rule {0:?}: target must be *, Kind, Kind/name or Kind/namespace/name")]
    Target(String),
}

/// What happens to a matching lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The lookup fails with this message (or a default one).
    Error(Option<String>),
    /// The lookup answers policy-server's "Cannot find ..." error.
    NotFound,
    /// The guest receives a truncated, unparseable JSON answer.
    Malformed,
    /// The guest receives JSON whose one string holds a byte that is not UTF-8
    /// ([`NOT_UTF8_OBJECT`], [`NOT_UTF8_LIST`]).
    NotUtf8,
    /// The lookup takes this much longer.
    Latency(Duration),
    /// The first N matching lookups fail with an error; later ones succeed.
    FailFirst(u64),
}

/// Which lookups a rule applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Target {
    fn matches(&self, kind: &str, namespace: Option<&str>, name: Option<&str>) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
            && self.name.as_deref().is_none_or(|n| Some(n) == name)
            && self.namespace.as_deref().is_none_or(|n| Some(n) == namespace)
    }
}

/// One rule: a target and a fault.
#[derive(Debug, Clone)]
pub struct FaultRule {
    pub target: Target,
    pub fault: Fault,
    hits: Arc<AtomicU64>,
}

impl FaultRule {
    pub fn new(target: Target, fault: Fault) -> Self {
        Self {
            target,
            fault,
            hits: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn parse(rule: &str) -> Result<Self, FaultParseError> {
        let (target, effect) = rule
            .split_once('=')
            .ok_or_else(|| FaultParseError::Syntax(rule.into()))?;
        let target = target.trim();
        let parts: Vec<&str> = target.split('/').collect();
        let target = match parts.as_slice() {
            ["*"] => Target::default(),
            [kind] if !kind.is_empty() => Target {
                kind: Some((*kind).into()),
                ..Default::default()
            },
            [kind, name] if !kind.is_empty() && !name.is_empty() => Target {
                kind: Some((*kind).into()),
                name: Some((*name).into()),
                namespace: None,
            },
            [kind, ns, name] if !kind.is_empty() && !ns.is_empty() && !name.is_empty() => Target {
                kind: Some((*kind).into()),
                namespace: Some((*ns).into()),
                name: Some((*name).into()),
            },
            _ => return Err(FaultParseError::Target(rule.into())),
        };
        let (name, arg) = match effect.trim().split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (effect.trim(), None),
        };
        let number = |what: &str| -> Result<u64, FaultParseError> {
            arg.and_then(|a| a.trim().parse().ok())
                .ok_or_else(|| FaultParseError::Number {
                    rule: rule.into(),
                    what: what.into(),
                })
        };
        let fault = match name {
            "error" => Fault::Error(arg.map(str::to_owned)),
            "notfound" | "not-found" => Fault::NotFound,
            "malformed" => Fault::Malformed,
            "not-utf8" => Fault::NotUtf8,
            "latency" => Fault::Latency(Duration::from_millis(number("latency")?)),
            "fail-first" => Fault::FailFirst(number("fail-first count")?),
            _ => {
                return Err(FaultParseError::Effect {
                    rule: rule.into(),
                    effect: effect.into(),
                });
            }
        };
        Ok(Self::new(target, fault))
    }
}

/// A get's answer under `not-utf8`: an object whose name is the byte 0xff.
pub const NOT_UTF8_OBJECT: &[u8] = b"{\"metadata\":{\"name\":\"\xff\"}}";
/// A list's answer under `not-utf8`: one item, named as in [`NOT_UTF8_OBJECT`].
pub const NOT_UTF8_LIST: &[u8] = b"{\"items\":[{\"metadata\":{\"name\":\"\xff\"}}]}";

/// What a fault plan decided for one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    Proceed,
    Error(String),
    NotFound,
    Malformed,
    NotUtf8,
}

/// All fault rules plus a latency added to every lookup.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    pub rules: Vec<FaultRule>,
    pub lookup_latency: Duration,
}

impl FaultPlan {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_rule(mut self, rule: FaultRule) -> Self {
        self.rules.push(rule);
        self
    }

    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.lookup_latency = latency;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.lookup_latency.is_zero()
    }

    /// Sleeps the configured latency, then says what this lookup should do.
    pub fn apply(&self, kind: &str, namespace: Option<&str>, name: Option<&str>) -> FaultAction {
        let mut delay = self.lookup_latency;
        let mut verdict = FaultAction::Proceed;
        for rule in self
            .rules
            .iter()
            .filter(|r| r.target.matches(kind, namespace, name))
        {
            match &rule.fault {
                Fault::Latency(d) => delay += *d,
                _ if verdict != FaultAction::Proceed => {}
                Fault::Error(msg) => {
                    verdict = FaultAction::Error(
                        msg.clone()
                            .unwrap_or_else(|| default_error(kind, namespace, name)),
                    )
                }
                Fault::NotFound => verdict = FaultAction::NotFound,
                Fault::Malformed => verdict = FaultAction::Malformed,
                Fault::NotUtf8 => verdict = FaultAction::NotUtf8,
                Fault::FailFirst(n) => {
                    if rule.hits.fetch_add(1, Ordering::SeqCst) < *n {
                        verdict = FaultAction::Error(default_error(kind, namespace, name));
                    }
                }
            }
        }
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        verdict
    }
}

fn default_error(kind: &str, namespace: Option<&str>, name: Option<&str>) -> String {
    let mut target = kind.to_owned();
    if let Some(ns) = namespace {
        target.push_str(&format!(" {ns}"));
    }
    if let Some(n) = name {
        target.push_str(&format!("/{n}"));
    }
    format!("injected fault: the API server failed to answer the lookup of {target}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rules() {
        let r = FaultRule::parse("ReplicaSet=error").unwrap();
        assert_eq!(r.fault, Fault::Error(None));
        assert_eq!(r.target.kind.as_deref(), Some("ReplicaSet"));
        let r = FaultRule::parse("Namespace/emojivoto=notfound").unwrap();
        assert_eq!(r.target.name.as_deref(), Some("emojivoto"));
        let r = FaultRule::parse("ReplicaSet/ns/web=latency:25").unwrap();
        assert_eq!(r.fault, Fault::Latency(Duration::from_millis(25)));
        assert_eq!(r.target.namespace.as_deref(), Some("ns"));
        assert_eq!(
            FaultRule::parse("*=error:boom").unwrap().fault,
            Fault::Error(Some("boom".into()))
        );
        assert_eq!(
            FaultRule::parse("ConfigMap=not-utf8").unwrap().fault,
            Fault::NotUtf8
        );
        assert!(FaultRule::parse("ReplicaSet").is_err());
        assert!(FaultRule::parse("ReplicaSet=explode").is_err());
        assert!(FaultRule::parse("ReplicaSet=latency:x").is_err());
        assert!(FaultRule::parse("a/b/c/d=error").is_err());
    }

    #[test]
    fn applies_rules() {
        let plan = FaultPlan::new()
            .with_rule(FaultRule::parse("Job=fail-first:1").unwrap())
            .with_rule(FaultRule::parse("Namespace/x=notfound").unwrap());
        assert!(matches!(
            plan.apply("Job", Some("a"), Some("j")),
            FaultAction::Error(_)
        ));
        assert_eq!(plan.apply("Job", Some("a"), Some("j")), FaultAction::Proceed);
        assert_eq!(plan.apply("Namespace", None, Some("x")), FaultAction::NotFound);
        assert_eq!(plan.apply("Namespace", None, Some("y")), FaultAction::Proceed);
    }
}
