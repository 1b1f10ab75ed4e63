//! The `finality serve` processes of a chaos run: started from this same
//! binary with a configuration file each, killed with SIGKILL, restarted
//! under a new worker id (a restarted process is a new node), paused with
//! SIGSTOP and resumed, and stopped with SIGTERM at the end.

use anyhow::{anyhow, Context};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// The nodes' poll lease: short, so a paused node's lease passes within
/// the run and its successor takes over while it sleeps.
pub const LEASE: Duration = Duration::from_secs(10);

/// Silence after which a node is dead: at least a heartbeat (1 s) plus the
/// longest a provider call can still be open at the provider after its
/// caller died (the simulator's 3 s hang), or the successor's call for the
/// same payment may overlap the dead node's last one. (The first 100,000
/// run used 3 s and counted 6 such overlaps.)
pub const DEAD_AFTER: Duration = Duration::from_secs(5);

struct Node {
    port: u16,
    child: Option<Child>,
    generation: u32,
}

pub struct Nodes {
    dir: PathBuf,
    db_url: String,
    sim_url: String,
    secret: String,
    token: String,
    nodes: Vec<Node>,
    /// More of the provider's table (its accounts, its mode), and the
    /// variables that file names.
    extra: (String, Vec<(String, String)>),
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Nodes {
    pub async fn start(
        n: usize,
        db_url: &str,
        sim_url: &str,
        secret: &str,
        token: &str,
        extra: (String, Vec<(String, String)>),
    ) -> anyhow::Result<Nodes> {
        let dir = std::env::temp_dir().join(format!("finality-chaos-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut nodes = Nodes {
            dir,
            db_url: db_url.into(),
            sim_url: sim_url.into(),
            secret: secret.into(),
            token: token.into(),
            nodes: Vec::new(),
            extra,
        };
        for _ in 0..n {
            nodes.nodes.push(Node {
                port: free_port()?,
                child: None,
                generation: 0,
            });
        }
        for i in 0..n {
            nodes.spawn(i)?;
        }
        for i in 0..n {
            nodes.wait_ready(i).await?;
        }
        Ok(nodes)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn base(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.nodes[i].port)
    }

    /// The worker id node `i` runs under now.
    pub fn worker(&self, i: usize) -> String {
        format!("chaos-node-{i}-gen-{}", self.nodes[i].generation)
    }

    pub fn bases(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.base(i)).collect()
    }

    fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        let node = &mut self.nodes[i];
        node.generation += 1;
        let config = format!(
            r#"[server]
listen = "127.0.0.1:{port}"
api_token_env = "FINALITY_CHAOS_TOKEN"
shutdown_grace = "2s"

[database]
url = "{db}"
max_connections = 8

[engine]
worker_id = "chaos-node-{i}-gen-{generation}"
concurrency = 32
lease = "{lease}s"
heartbeat_every = "1s"
dead_after = "{dead_after}s"

[providers.sim]
adapter = "sim"
base_url = "{sim}"
timeout = "4s"
webhook_secret_envs = ["FINALITY_CHAOS_WEBHOOK_SECRET"]
give_up_after = "1day"
max_attempts = 1000
schedule = {{ kind = "quick_then", count = 3, interval = "1s", then = {{ kind = "exponential", base = "2s", factor = 2.0, cap = "15s", jitter = 0.2 }} }}
{extra}"#,
            port = node.port,
            db = self.db_url,
            generation = node.generation,
            lease = LEASE.as_secs(),
            dead_after = DEAD_AFTER.as_secs(),
            sim = self.sim_url,
            extra = self.extra.0,
        );
        let path = self.dir.join(format!("node-{i}.toml"));
        std::fs::write(&path, config).with_context(|| format!("writing {}", path.display()))?;
        let log = std::fs::File::create(
            self.dir
                .join(format!("node-{i}-gen-{}.log", node.generation)),
        )?;
        let exe = std::env::current_exe().context("finding this binary")?;
        let child = Command::new(exe)
            .envs(self.extra.1.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .arg("--config")
            .arg(&path)
            .arg("serve")
            .env("FINALITY_CHAOS_TOKEN", &self.token)
            .env("FINALITY_CHAOS_WEBHOOK_SECRET", &self.secret)
            .env("RUST_LOG", "warn")
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting finality serve")?;
        node.child = Some(child);
        Ok(())
    }

    async fn wait_ready(&self, i: usize) -> anyhow::Result<()> {
        let url = format!("{}/healthz", self.base(i));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(anyhow!(
                    "node {i} did not start; see {}",
                    self.dir.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn pid(&self, i: usize) -> anyhow::Result<u32> {
        self.nodes[i]
            .child
            .as_ref()
            .and_then(Child::id)
            .ok_or_else(|| anyhow!("node {i} is not running"))
    }

    /// SIGKILL: no shutdown, no hand-back; its leases are the others' to free.
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut c) = self.nodes[i].child.take() {
            c.start_kill().context("SIGKILL")?;
            tokio::spawn(async move { c.wait().await });
        }
        Ok(())
    }

    pub async fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        self.spawn(i)?;
        self.wait_ready(i).await
    }

    /// SIGSTOP for `for_`, then SIGCONT: it wakes after its leases passed.
    pub async fn pause(&mut self, i: usize, for_: Duration) -> anyhow::Result<()> {
        let pid = self.pid(i)?.to_string();
        signal("-STOP", &pid).await?;
        tokio::time::sleep(for_).await;
        signal("-CONT", &pid).await
    }

    /// SIGTERM every node and wait for it (a clean stop hands leases back).
    pub async fn stop_all(&mut self) {
        for i in 0..self.len() {
            if let Ok(pid) = self.pid(i) {
                let _ = signal("-TERM", &pid.to_string()).await;
            }
        }
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = tokio::time::timeout(Duration::from_secs(10), c.wait()).await;
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `kill SIG PID`: std has no signal but SIGKILL.
async fn signal(sig: &str, pid: &str) -> anyhow::Result<()> {
    let ok = Command::new("kill")
        .args([sig, pid])
        .status()
        .await
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("kill {sig} {pid} failed"))
    }
}
