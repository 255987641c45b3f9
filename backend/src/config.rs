//! Command line and environment. Every flag has a `FAILPASS_…` variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "failpass", version, about = "Triage and verify agent-generated bug reproductions")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API and the dashboard.
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DatabaseArgs),
    /// Import reports, attempts and agents from a file (or `-` for stdin).
    Import(ImportArgs),
    /// Fill a database with synthetic history at any size (for measuring at scale).
    Demo(DemoArgs),
    /// Apply the routing rule (a changed configuration) to every stored report.
    Reroute(RerouteArgs),
    /// Compare the maintained figures with a recomputation from the raw
    /// rows; rebuild them where they differ. Exits 1 if they differed.
    CheckFigures(CheckFiguresArgs),
    /// Run verification workers against a shared database (PostgreSQL for many machines).
    Worker(WorkerArgs),
    /// Manage accounts: add, list, remove, set passwords, grant project roles.
    User(UserArgs),
    /// Manage API tokens for agents, CI and scripts.
    Token(TokenArgs),
    /// GitHub webhooks: set a project's secret.
    Webhook(WebhookArgs),
    /// Outgoing webhooks: add, list and remove a project's hooks; read a
    /// hook's deliveries and send one again.
    Hook(HookArgs),
    /// Pull issues from a tracker that cannot send webhooks.
    Sync(SyncArgs),
    /// Write reports or attempts (with a page's filters) as CSV, JSON or NDJSON.
    Export(ExportArgs),
    /// Measure the routing rule against labelled reports.
    Routing(RoutingArgs),
    /// Write a consistent copy of the database while failpass serves
    /// (SQLite: a database file; PostgreSQL: a `pg_dump` archive).
    Backup(BackupArgs),
    /// Send an attempt or JUnit results to a failpass server (for agents
    /// and CI); `--wait` exits with the verdict: 0 reproduced, 1 not, 2 an error.
    Submit(SubmitArgs),
    /// Search a report's releases for the first where its reproduction
    /// passes ("fixed in pandas 2.0.1"), here and now, printing each step.
    Bisect(BisectArgs),
    /// Benchmarks that print figures: `realbugs` grades the corpus of real bugs.
    Bench(BenchArgs),
}

#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The backup file to write (never overwritten).
    #[arg(long)]
    pub to: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct SubmitArgs {
    /// The failpass server's address.
    #[arg(long, global = true, env = "FAILPASS_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// An API token (`failpass token create`).
    #[arg(long, global = true, env = "FAILPASS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print what the server stored as JSON (the attempt; the import summary).
    #[arg(long, global = true)]
    pub json: bool,
    /// Tries per request when the server answers 5xx or 429 or cannot be
    /// reached, waiting 0.5 s, then twice as long each time (or what
    /// `Retry-After` says).
    #[arg(long, global = true, default_value_t = 5)]
    pub tries: u32,
    #[command(subcommand)]
    pub command: SubmitCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SubmitCommand {
    /// Submit an agent's attempt at a report.
    Attempt(SubmitAttemptArgs),
    /// Upload JUnit XML results as an attempt's runs in one environment.
    Junit(SubmitJunitArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SubmitAttemptArgs {
    /// The report's project (`owner/name`).
    #[arg(long)]
    pub project: String,
    /// The report's id in its tracker (the issue number).
    #[arg(long)]
    pub report: String,
    /// The agent's name.
    #[arg(long)]
    pub agent: String,
    /// The model the agent ran on.
    #[arg(long)]
    pub model: Option<String>,
    /// The candidate reproduction: a file (`-` for standard input).
    #[arg(long)]
    pub candidate: PathBuf,
    /// What the attempt cost, in US dollars (left out: unknown, not $0).
    #[arg(long)]
    pub cost_usd: Option<f64>,
    #[arg(long, default_value_t = 0)]
    pub tokens_in: i64,
    #[arg(long, default_value_t = 0)]
    pub tokens_out: i64,
    #[arg(long)]
    pub wall_seconds: Option<f64>,
    /// The agent's own verdict, an LLM's word until something grades it
    /// (`lead` or `hypothesis`).
    #[arg(long, default_value = "hypothesis")]
    pub verdict: String,
    /// Makes a retry the same attempt (default: a hash of everything the
    /// attempt says, so the same command sent twice stores it once, but a
    /// different cost or wall time is another attempt).
    #[arg(long)]
    pub attempt_key: Option<String>,
    /// The agent's trajectory, sent with the attempt: a SWE-agent `.traj`,
    /// an OpenHands event list, or JSON Lines of steps.
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Have failpass grade the candidate by running it.
    #[arg(long)]
    pub verify: bool,
    /// Follow the verification (implies --verify) and exit 0 when the
    /// attempt reproduced the report, 1 when it did not, 2 on an error.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this many seconds (exit 2).
    #[arg(long, default_value_t = 3600)]
    pub timeout: u64,
}

#[derive(Debug, Clone, Args)]
pub struct SubmitJunitArgs {
    /// The JUnit XML file (`-` for standard input).
    pub file: PathBuf,
    /// The attempt the runs belong to.
    #[arg(long)]
    pub attempt: i64,
    /// Where the tests ran: `buggy` or `fixed`.
    #[arg(long)]
    pub environment: String,
}

#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: WebhookCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum WebhookCommand {
    /// Make a new secret for a project's GitHub webhook (it replaces any old
    /// one) and print it once, with the URL to give GitHub.
    Secret {
        /// The project (`owner/name`, as GitHub names the repository).
        project: String,
        /// Remove the secret instead: deliveries for the project are refused.
        #[arg(long)]
        remove: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct HookArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub networks: HookNetworkArgs,
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum HookCommand {
    /// Add a hook told of a project's changes; prints its secret (once) on
    /// standard output, what it is on standard error.
    Add {
        /// The project (`owner/name`).
        #[arg(long)]
        project: String,
        /// Where deliveries are posted (`https://…` or `http://…`).
        #[arg(long)]
        url: String,
        /// `signed` (JSON, signed), `slack` or `discord` (one line of text).
        #[arg(long, default_value = "signed")]
        format: String,
        /// What it is told of: some of `verdict,route,status` (all when left out).
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
    },
    /// Every hook, with its deliveries counted by state.
    List,
    /// A hook's last deliveries: state, tries, the receiver's answer.
    Log {
        /// The hook's id.
        id: i64,
        /// How many, newest first.
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// Send a delivery again (a new delivery of the same body).
    Redeliver {
        /// The delivery's id.
        delivery: i64,
    },
    /// Remove a hook: it is told nothing more; its log stays.
    Remove {
        /// The hook's id.
        id: i64,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// `reports`, `attempts`, `figures` (a figure table, as
    /// `GET /api/v1/figures` gives it), or `all` (NDJSON: projects, reports,
    /// then attempts: a file `failpass import --format ndjson` takes back).
    pub what: String,
    /// `csv`, `json` or `ndjson` (`all` is always NDJSON).
    #[arg(long, default_value = "csv")]
    pub format: String,
    /// The page's filters, as in its address: `project=a/b&status=new&label=bug`
    /// (the reports list's for reports, the attempts list's for attempts,
    /// the figures' for figures: `group_by=agent&period=this_month`).
    #[arg(long, default_value = "")]
    pub query: String,
    /// Where to write it (standard output without).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct SyncArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: SyncCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SyncCommand {
    /// Poll GitHub's REST API for a repository's issues changed since the
    /// last sync, then store and route them (pull requests are skipped). It
    /// resumes where the last sync ended, asks with the last ETag (an
    /// unchanged list costs no rate limit), follows `Link` pages and waits
    /// out rate limits.
    Github(SyncGithubArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SyncGithubArgs {
    /// The repository, `OWNER/NAME`; also the project's slug unless `--project` names another.
    pub repo: String,
    /// The failpass project the issues go to (created if missing). Default: the repository.
    #[arg(long)]
    pub project: Option<String>,
    /// A GitHub token (a fine-grained token with read access to issues is
    /// enough). Without one GitHub allows 60 requests an hour.
    #[arg(long, env = "GITHUB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The REST API's base address (GitHub Enterprise: `https://HOST/api/v3`).
    #[arg(long, env = "FAILPASS_GITHUB_API", default_value = "https://api.github.com")]
    pub api_url: String,
    /// Poll again every N minutes until stopped (0: sync once and exit, for cron).
    #[arg(long, default_value_t = 0)]
    pub every_minutes: u64,
    /// The longest wait for a rate limit to reset before giving up (the next
    /// sync resumes where this one stopped).
    #[arg(long, default_value_t = 900)]
    pub max_wait_seconds: u64,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RoutingArgs {
    #[command(subcommand)]
    pub command: RoutingCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum RoutingCommand {
    /// Print the confusion matrix, precision and recall per route on a
    /// labelled file (CSV or JSON Lines; see docs/routing.md).
    Eval(RoutingEvalArgs),
    /// Write a project's corrected routes as a truth file (JSON Lines) for
    /// `routing eval --truth`: what maintainers decided is the evaluation's truth.
    Corrections(RoutingCorrectionsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RoutingCorrectionsArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The project (`owner/name`).
    pub project: String,
    /// Where to write it (standard output without).
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RoutingEvalArgs {
    /// The labelled reports: columns `id`, `title`, and `route` or `harness`;
    /// optional `body`, `labels` (`;`-separated or a JSON list) and `paths`.
    #[arg(long)]
    pub truth: PathBuf,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
    /// Which part of the fixed split to measure on: `measure` (the default),
    /// `train` (to tune on) or `all`. The split is by a stable hash of `id`.
    #[arg(long, default_value = "measure")]
    pub split: String,
    /// Columns to read, of title, body, labels and paths (the rest are ignored).
    #[arg(long, value_delimiter = ',', default_value = "title,body,labels,paths")]
    pub fields: Vec<String>,
    /// Print each report the rule got wrong (id, truth, decision, title).
    #[arg(long)]
    pub errors: bool,
}

#[derive(Debug, Clone, Args)]
pub struct UserArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: UserCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum UserCommand {
    /// Add a user; the password is asked for (or read from standard input).
    Add {
        name: String,
        /// A global administrator (every project, environments, visibility).
        #[arg(long)]
        admin: bool,
        /// Read the password from the first line of standard input, without a prompt.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users with their roles.
    List,
    /// Remove a user, their memberships, sessions and personal tokens.
    Remove { name: String },
    /// Set a user's password (their sessions end).
    Passwd {
        name: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// Give a user a role in a project (replacing the one they had there).
    Grant {
        name: String,
        /// The project, `owner/name`.
        #[arg(long)]
        project: String,
        /// `maintainer` or `viewer`.
        #[arg(long)]
        role: String,
    },
    /// Take a user's role in a project away.
    Revoke {
        name: String,
        #[arg(long)]
        project: String,
    },
    /// Show the sign-in throttle on a user: failures in the window, whether
    /// the account is under attack, and each address's wait.
    Throttle { name: String },
    /// Lift the sign-in throttle on a user (every address's waits, and the account's count).
    Unthrottle { name: String },
}

#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (it is stored only as a hash: copy it now).
    Create {
        /// The project a token of scope agent, ci or read belongs to.
        #[arg(long, required_unless_present = "user", conflicts_with = "user")]
        project: Option<String>,
        /// `agent` (attempts and runs), `ci` (also imports and JUnit) or `read`.
        #[arg(long, requires = "project")]
        scope: Option<String>,
        /// A personal token acting as this user, with the user's roles (for scripts).
        #[arg(long)]
        user: Option<String>,
        /// What the token is for, shown in lists.
        #[arg(long, default_value = "command line")]
        name: String,
        /// Days until the token stops working (none: until revoked).
        #[arg(long)]
        expires: Option<u32>,
    },
    /// List tokens (never their secrets), with last use.
    List {
        #[arg(long)]
        project: Option<String>,
    },
    /// Revoke a token by id.
    Revoke { id: i64 },
}

/// How the refine loop gets candidates.
#[derive(Debug, Clone, Args)]
pub struct RefineArgs {
    /// An agent command for the refine loop: it reads the report and the
    /// previous verification feedback as JSON on stdin and prints a candidate
    /// (or `{"candidate", "cost_usd", …}`). Without it the offline `snippet`
    /// generator proposes the report's own code blocks.
    #[arg(long, env = "FAILPASS_AGENT_COMMAND")]
    pub agent_command: Option<String>,
    /// The agent's name on the attempts it makes.
    #[arg(long, env = "FAILPASS_AGENT_NAME", default_value = "agent")]
    pub agent_name: String,
    /// Iterations before the loop gives up.
    #[arg(long, env = "FAILPASS_REFINE_BUDGET", default_value_t = 5)]
    pub refine_budget: u32,
    /// Seconds an agent command may take per iteration.
    #[arg(long, env = "FAILPASS_AGENT_TIMEOUT", default_value_t = 600)]
    pub agent_timeout: u64,
    /// Variables the agent command gets from failpass's own environment (its
    /// API keys, say), comma-separated names; it gets no others.
    #[arg(long, env = "FAILPASS_AGENT_ENV", value_delimiter = ',')]
    pub agent_env: Vec<String>,
    /// Directories of the agent command's own files (its scripts, its
    /// virtual environment), shown read-only at their paths in its sandbox,
    /// comma-separated. The directory of a script the command names by an
    /// absolute path is shown without it; nothing else of the host is.
    #[arg(long, env = "FAILPASS_AGENT_DIR", value_delimiter = ',')]
    pub agent_dir: Vec<std::path::PathBuf>,
}

impl RefineArgs {
    pub fn generator(&self) -> crate::runner::refine::Generator {
        match &self.agent_command {
            Some(command) => crate::runner::refine::Generator::Command {
                name: self.agent_name.clone(),
                command: command.clone(),
                timeout: std::time::Duration::from_secs(self.agent_timeout),
                env: self.agent_env.iter().filter_map(|name| Some((name.clone(), std::env::var(name).ok()?))).collect(),
                files: crate::runner::refine::agent_files(command, &self.agent_dir),
            },
            None => crate::runner::refine::Generator::Snippet,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub refine: RefineArgs,
    /// Workers in this process; each runs one job at a time.
    #[arg(long, env = "FAILPASS_WORKERS", default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds a claimed job's lease lasts (renewed every third of it while it runs).
    #[arg(long, env = "FAILPASS_LEASE_SECONDS", default_value_t = 30)]
    pub lease_seconds: i64,
    #[command(flatten)]
    pub runs: RunArgs,
    #[command(flatten)]
    pub hooks: HookNetworkArgs,
    /// Routing rule configuration (TOML; see docs/routing.toml): a report
    /// whose authored oracle this worker validates is re-routed by it, so
    /// give the file `serve` reads.
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RerouteArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
    /// Count what would change without storing it.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CheckFiguresArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Only compare: leave the stored figures as they are.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// ndjson, swebench-instances, swebench-leaderboard, github-issues, csv, json or junit.
    #[arg(long)]
    pub format: String,
    /// The project (`owner/name`) for inputs that do not name one (`gh issue list` output).
    #[arg(long)]
    pub project: Option<String>,
    /// For `--format csv|json`: how columns become reports and attempts (see mappings/).
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// For `--format junit`: the attempt whose run the results are.
    #[arg(long)]
    pub attempt: Option<i64>,
    /// For `--format junit`: `buggy` or `fixed`.
    #[arg(long)]
    pub environment: Option<String>,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
    /// Print the closing summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Projects the input creates are private unless it says otherwise.
    #[arg(long, env = "FAILPASS_PRIVATE_BY_DEFAULT")]
    pub private_by_default: bool,
    /// The input file, or `-` for standard input.
    pub input: String,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// How many reports, over eight projects.
    #[arg(long, default_value_t = 1_000)]
    pub reports: u64,
    /// How many attempts, spread over the reports with a long tail (default: ten per report).
    #[arg(long)]
    pub attempts: Option<u64>,
    /// The same seed (and `--today`) makes the same history.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The day the history ends, `YYYY-MM-DD` (default: today, UTC).
    #[arg(long)]
    pub today: Option<chrono::NaiveDate>,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// `postgres://…` for PostgreSQL; otherwise a SQLite file path or `sqlite://PATH`.
    /// Default: `failpass.db` in the data directory.
    #[arg(long, env = "FAILPASS_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Where failpass keeps its SQLite file (and, later, run artifacts).
    /// Resolved against the working directory at start-up, so the runner
    /// (whose runs have their own working directories) finds it.
    #[arg(long, env = "FAILPASS_DATA_DIR", default_value = "data", global = true, value_parser = absolute_path)]
    pub data_dir: PathBuf,
}

/// `path` made absolute against the working directory (not resolving links).
pub fn absolute_path(path: &str) -> Result<PathBuf, String> {
    if path.trim().is_empty() {
        return Err("an empty path".into());
    }
    std::path::absolute(path).map_err(|e| format!("`{path}` cannot be made absolute: {e}"))
}

impl DatabaseArgs {
    /// The database URL; by default `failpass.db` in the (absolute) data directory.
    pub fn url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| self.data_dir.join("failpass.db").to_string_lossy().into_owned())
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, env = "FAILPASS_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Fill an empty database with demo data.
    #[arg(long, env = "FAILPASS_DEMO")]
    pub demo: bool,
    /// Routing rule configuration (TOML; see docs/routing.toml).
    #[arg(long, env = "FAILPASS_ROUTING_CONFIG")]
    pub routing_config: Option<PathBuf>,
    /// Verification workers run in this process (0: none; run `failpass worker` elsewhere).
    #[arg(long, env = "FAILPASS_WORKERS", default_value_t = 2)]
    pub workers: usize,
    #[command(flatten)]
    pub refine: RefineArgs,
    /// Re-check reproduced attempts against each project's newest release
    /// environment every this many hours (0: never).
    #[arg(long, env = "FAILPASS_RECHECK_EVERY_HOURS", default_value_t = 0)]
    pub recheck_every_hours: u64,
    /// Serve `/metrics` only to `Authorization: Bearer TOKEN` (Prometheus'
    /// `authorization` setting); without it `/metrics` is open.
    #[arg(long, env = "FAILPASS_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// The address users reach failpass at (`https://failpass.example.org`):
    /// requests for any other Host are refused, and https turns on Secure
    /// cookies. Needed when binding an address other machines can reach.
    #[arg(long, env = "FAILPASS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Show nothing without signing in (the API answers 401 to anonymous callers).
    #[arg(long, env = "FAILPASS_REQUIRE_SIGN_IN")]
    pub require_sign_in: bool,
    /// New projects are private unless created public.
    #[arg(long, env = "FAILPASS_PRIVATE_BY_DEFAULT")]
    pub private_by_default: bool,
    /// Mark the session cookie Secure even when --public-url is http (TLS ends at a proxy).
    #[arg(long, env = "FAILPASS_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Take clients' addresses from the last X-Forwarded-For entry (a reverse proxy in front appends it).
    #[arg(long, env = "FAILPASS_TRUST_X_FORWARDED_FOR")]
    pub trust_x_forwarded_for: bool,
    #[command(flatten)]
    pub runs: RunArgs,
    #[command(flatten)]
    pub hooks: HookNetworkArgs,
}

/// Where outgoing webhooks may post besides the public internet.
#[derive(Debug, Clone, Args)]
pub struct HookNetworkArgs {
    /// Private networks hooks may post into (CIDRs, comma-separated, e.g.
    /// `10.0.0.0/8,127.0.0.1/32`): loopback, RFC 1918, CGNAT and ULA
    /// addresses are refused without it. Give the same to the server and to
    /// every worker (workers deliver). Link-local and metadata addresses
    /// are refused whatever it says.
    #[arg(long, env = "FAILPASS_HOOK_ALLOW_NETWORK", value_delimiter = ',', global = true)]
    pub hook_allow_network: Vec<String>,
}

impl HookNetworkArgs {
    pub fn networks(&self) -> anyhow::Result<crate::hooks::HookNetworks> {
        crate::hooks::HookNetworks::parse(&self.hook_allow_network).map_err(anyhow::Error::msg)
    }
}

/// Whether candidates may run without the sandbox's user switch.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Grade candidates even when this process is not root, so runs cannot
    /// get users and namespaces of their own: they then run as failpass's
    /// own user and could change its data. For a laptop demo, never a server.
    #[arg(long, env = "FAILPASS_ALLOW_UNSANDBOXED_RUNS")]
    pub allow_unsandboxed_runs: bool,
    /// Private networks that setup commands and the agent command may reach
    /// (CIDRs, comma-separated, e.g. a package mirror's `10.1.0.0/16`): RFC
    /// 1918, CGNAT and this machine's own addresses are fenced off without
    /// it. Link-local and metadata addresses are fenced off whatever it says.
    #[arg(long, env = "FAILPASS_RUN_ALLOW_NETWORK", value_delimiter = ',')]
    pub run_allow_network: Vec<String>,
    /// The package index releases are listed from and installed from (the
    /// Simple API pip and uv use; a mirror works).
    #[arg(long, env = "FAILPASS_PACKAGE_INDEX", default_value = crate::releases::index::DEFAULT_INDEX)]
    pub package_index: String,
    /// The most the environment cache may hold, in GB; the least recently
    /// used environments are removed past it (the wheel cache rebuilds them
    /// with no network). Unbounded when not given.
    #[arg(long, env = "FAILPASS_ENV_CACHE_GB")]
    pub env_cache_gb: Option<f64>,
}

impl RunArgs {
    pub fn releases(&self) -> anyhow::Result<crate::releases::Settings> {
        let url = self.package_index.trim();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            anyhow::bail!("--package-index must be an http(s) URL, not `{url}`");
        }
        let cap = match self.env_cache_gb {
            Some(gb) if !(gb.is_finite() && gb > 0.0) => {
                anyhow::bail!("--env-cache-gb must be a positive number of GB")
            }
            Some(gb) => Some((gb * 1e9) as u64),
            None => None,
        };
        Ok(crate::releases::Settings { index_url: url.to_owned(), cache_cap_bytes: cap })
    }

    pub fn networks(&self) -> anyhow::Result<Vec<ipnet::IpNet>> {
        crate::networks::parse("--run-allow-network", &self.run_allow_network).map_err(anyhow::Error::msg)
    }
}

impl ServeArgs {
    pub fn security(&self) -> anyhow::Result<crate::security::SecurityConfig> {
        Ok(crate::security::SecurityConfig {
            public_url: self.public_url.clone(),
            require_sign_in: self.require_sign_in,
            private_by_default: self.private_by_default,
            secure_cookies: self.secure_cookies,
            trust_forwarded_for: self.trust_x_forwarded_for,
            allow_unsandboxed_runs: self.runs.allow_unsandboxed_runs,
            metrics_token: self.metrics_token.clone(),
            hook_networks: self.hooks.networks()?,
            run_networks: self.runs.networks()?,
            releases: self.runs.releases()?,
        })
    }
}

/// The routing rule's configuration from `--routing-config FILE` (keys left
/// out keep their defaults; `docs/routing.toml` documents them), or the defaults.
pub fn load_routing(path: Option<&std::path::Path>) -> anyhow::Result<failpass_shared::routing::RoutingConfig> {
    use anyhow::Context;
    let Some(path) = path else { return Ok(Default::default()) };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading routing config {}", path.display()))?;
    toml::from_str(&text).map_err(|e| anyhow::anyhow!("routing config {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_directory_is_absolute_whatever_the_working_directory() {
        let cli = Cli::try_parse_from(["failpass", "migrate", "--data-dir", "rel/dir"]).unwrap();
        let Command::Migrate(args) = cli.command else { panic!("migrate") };
        assert!(args.data_dir.is_absolute(), "{}", args.data_dir.display());
        assert_eq!(args.data_dir, std::env::current_dir().unwrap().join("rel/dir"));
        assert!(args.url().starts_with('/'), "{}", args.url());
        // The default too.
        let cli = Cli::try_parse_from(["failpass", "migrate"]).unwrap();
        let Command::Migrate(args) = cli.command else { panic!("migrate") };
        assert_eq!(args.data_dir, std::env::current_dir().unwrap().join("data"));
        assert!(Cli::try_parse_from(["failpass", "migrate", "--data-dir", ""]).is_err());
    }
}

#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub runs: RunArgs,
    /// The report whose releases are searched (it names its buggy release).
    #[arg(long)]
    pub report: i64,
    /// The attempt whose candidate runs (default: the report's newest reproduced one).
    #[arg(long)]
    pub attempt: Option<i64>,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Debug, Clone, Subcommand)]
pub enum BenchWhat {
    /// Grade the corpus of real bugs on their own releases and print the figures.
    Realbugs(RealbugsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RealbugsArgs {
    /// The corpus: a directory of one TOML file per library.
    #[arg(long, default_value = "corpus/realbugs")]
    pub corpus: PathBuf,
    /// Where the bench keeps its database (made afresh), environments and wheels.
    #[arg(long, default_value = "target/realbugs-bench", value_parser = absolute_path)]
    pub dir: PathBuf,
    /// Start with an empty wheel cache too (else only the environments are built afresh).
    #[arg(long)]
    pub cold: bool,
    /// Keep the environments built by an earlier run and skip the build
    /// figures: grading and bisects with every environment already built.
    #[arg(long, conflicts_with = "cold")]
    pub keep_envs: bool,
    /// Only the bugs marked `small` (the test command's).
    #[arg(long)]
    pub small: bool,
    /// Only these libraries (repeatable).
    #[arg(long)]
    pub library: Vec<String>,
    /// Workers grading at once.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    #[command(flatten)]
    pub runs: RunArgs,
}
