//! Rollouts through the `injector-host` binary, a subprocess so that its peak memory is the
//! engine's own: the report it prints (`--json`) and its maximum RSS (`wait4`).

use std::path::Path;
use std::process::{Child, Command, Stdio};

use injector_host::linkerd::rollout::RolloutReport;

use crate::args::Args;

pub struct Rollout {
    pub replicas: usize,
    pub workers: usize,
    pub module: &'static str,
    pub report: Option<RolloutReport>,
    pub max_rss_kib: i64,
    pub error: Option<String>,
}

/// `__rollout ARGS...`: this binary acting as `injector-host rollout ARGS...` (same library
/// code as the binary's `main`), used when the `injector-host` binary has not been built.
pub fn rollout_cli(args: &[String]) -> ! {
    use clap::Parser;
    let cli = injector_host::cli::Cli::parse_from(
        std::iter::once("injector-host".to_owned()).chain(args.iter().cloned()),
    );
    match injector_host::cli::execute(&cli) {
        Ok(out) => {
            println!("{}", out.stdout.trim_end());
            std::process::exit(i32::from(out.failure.is_some()))
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1)
        }
    }
}

/// `injector-host rollout` (or this binary's `__rollout`) for `module`, not yet started.
fn command(a: &Args, module: &Path, replicas: usize, workers: usize) -> Command {
    let mut cmd = if a.host_bin.exists() {
        Command::new(&a.host_bin)
    } else {
        let mut c = Command::new(std::env::current_exe().expect("current exe"));
        c.arg("__rollout");
        c
    };
    cmd.args(["rollout", "--replicas", &replicas.to_string()])
        .args(["--workers", &workers.to_string()])
        .args(["--json", "--quiet-policy-logs", "--metadata-path"])
        .arg(&a.metadata)
        .arg(module)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for the child, reading its output on threads: `(stdout, max RSS in KiB)`, or why not.
fn wait_with_rss(mut child: Child) -> Result<(String, i64), String> {
    let pid = child.id() as libc::pid_t;
    let (mut so, mut se) = match (child.stdout.take(), child.stderr.take()) {
        (Some(so), Some(se)) => (so, se),
        _ => return Err("the engine's output is not piped".into()),
    };
    let th_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut so, &mut s);
        s
    });
    let th_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut se, &mut s);
        s
    });
    let mut status: libc::c_int = 0;
    // SAFETY: plain wait4 on our own child; rusage is a POD struct filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let stdout = th_out.join().unwrap_or_default();
    let stderr = th_err.join().unwrap_or_default();
    drop(child); // already reaped by wait4 (dropping a Child neither waits nor kills)
    if rc != pid {
        return Err("wait4 failed".into());
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!("exit status {status}: {}", stderr.trim()));
    }
    Ok((stdout, usage.ru_maxrss))
}

pub fn run_rollout(
    a: &Args,
    module_name: &'static str,
    module: &Path,
    replicas: usize,
    workers: usize,
) -> Rollout {
    let mut out = Rollout {
        replicas,
        workers,
        module: module_name,
        report: None,
        max_rss_kib: 0,
        error: None,
    };
    let child = match command(a, module, replicas, workers).spawn() {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("cannot run the engine: {e}"));
            return out;
        }
    };
    match wait_with_rss(child) {
        Ok((stdout, rss)) => {
            out.max_rss_kib = rss;
            match serde_json::from_str::<RolloutReport>(&stdout) {
                Ok(r) => out.report = Some(r),
                Err(e) => out.error = Some(format!("cannot read the report: {e}")),
            }
        }
        Err(e) => out.error = Some(e),
    }
    out
}

/// Ours at every requested replica count, then the floor at 1,000.
pub fn measure_rollouts(a: &Args) -> (Vec<Rollout>, Rollout) {
    eprintln!("bench: rollouts");
    let mut rollouts = Vec::new();
    for &n in &a.replicas {
        let r = run_rollout(a, "ours", &a.policy, n, a.workers);
        eprintln!(
            "  ours {n}: {:?}",
            r.report
                .as_ref()
                .map(|r| (r.injected, r.throughput_per_s, r.latency.p99_ms))
        );
        if let Some(err) = &r.error {
            eprintln!("  error: {err}");
        }
        rollouts.push(r);
    }
    let floor = run_rollout(a, "floor", &a.floor, 1000, a.workers);
    (rollouts, floor)
}
