//! The `engine` bench's command line: the modules, engine binary and files it reads, how long it
//! measures, and where the report goes. Paths are relative to the repository root.

use std::path::PathBuf;
use std::time::Duration;

pub struct Args {
    pub policy: PathBuf,
    pub floor: PathBuf,
    pub trivial: PathBuf,
    pub shipped_settings: PathBuf,
    pub host_bin: PathBuf,
    pub metadata: PathBuf,
    pub out: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub budget: Duration,
    pub replicas: Vec<usize>,
    pub workers: usize,
    pub criterion: PathBuf,
    pub notes: PathBuf,
    pub policy_server: PathBuf,
    /// The last `make bench-kubewarden` run, embedded after the policy-server figures.
    pub kubewarden: PathBuf,
    pub command: String,
    /// Only the typical pod, the skipped pod, the Service, the core on the typical pod and one
    /// rollout, printed (no report): for comparing builds quickly.
    pub quick: bool,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            policy: "policy.wasm".into(),
            floor: "target/wasm32-wasip1/release/floor_policy.wasm".into(),
            trivial: "target/wasm32-wasip1/release/trivial_policy.wasm".into(),
            shipped_settings: "deploy/settings/defaults.yaml".into(),
            host_bin: "target/host/injector-host".into(),
            metadata: "policy.yaml".into(),
            out: None,
            json: None,
            budget: Duration::from_millis(1200),
            replicas: vec![100, 1000, 10000],
            workers: 2,
            criterion: "target/criterion".into(),
            notes: "benches/notes.md".into(),
            policy_server: "benches/policy-server.md".into(),
            kubewarden: "benches/kubewarden/RESULTS.md".into(),
            command: "make bench".into(),
            quick: false,
        }
    }
}

impl Args {
    /// The options after the program name; panics on an unknown option or a bad value (a bench's
    /// command line comes from benches/bench.sh or a developer).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Self {
        let mut a = Self::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
            match arg.as_str() {
                "--bench" => {}
                "--policy" => a.policy = val().into(),
                "--floor" => a.floor = val().into(),
                "--trivial" => a.trivial = val().into(),
                "--shipped-settings" => a.shipped_settings = val().into(),
                "--host-bin" => a.host_bin = val().into(),
                "--metadata" => a.metadata = val().into(),
                "--out" => a.out = Some(val().into()),
                "--json" => a.json = Some(val().into()),
                "--budget-ms" => a.budget = Duration::from_millis(number(&arg, &val())),
                "--replicas" => a.replicas = replicas(&val()),
                "--workers" => a.workers = number(&arg, &val()),
                "--criterion" => a.criterion = val().into(),
                "--notes" => a.notes = val().into(),
                "--policy-server" => a.policy_server = val().into(),
                "--kubewarden" => a.kubewarden = val().into(),
                "--command" => a.command = val(),
                "--quick" => a.quick = true,
                other => panic!("unknown argument {other}"),
            }
        }
        a
    }
}

fn number<T: std::str::FromStr>(option: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| panic!("{option}: {value:?} is not a number"))
}

fn replicas(list: &str) -> Vec<usize> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| number("--replicas", s))
        .collect()
}
