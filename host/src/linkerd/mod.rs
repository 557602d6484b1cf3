//! The Linkerd-specific commands: the rollout of linkerd2#3358 and manual injection. They send
//! objects through the policy module and read its answer; no rule of the policy is restated here.

pub mod answer;
pub mod commands;
pub mod controllers;
pub mod inject;
pub mod rollout;
