//! Brokers of our own for the channel tests, each on a free loopback port
//! with its data in a temporary directory (the machine's own instances are
//! left alone), which a test stops hard (SIGKILL to the process group, as a
//! crash) and starts again on the same data.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Something a test can take down (as a crash) and bring back.
pub trait Outage {
    fn stop(&mut self);
    fn start(&mut self);
}

impl Outage for Broker {
    fn stop(&mut self) {
        Broker::stop(self)
    }
    fn start(&mut self) {
        Broker::start(self)
    }
}

/// One broker process group.
pub struct Broker {
    child: Option<Child>,
    command: Box<dyn Fn() -> Command + Send>,
    pub port: u16,
    what: &'static str,
}

fn first_existing(candidates: &[&'static str], fallback: &'static str) -> &'static str {
    candidates
        .iter()
        .copied()
        .find(|p| Path::new(p).exists())
        .unwrap_or(fallback)
}

impl Broker {
    fn new(what: &'static str, port: u16, command: Box<dyn Fn() -> Command + Send>) -> Broker {
        let mut b = Broker {
            child: None,
            command,
            port,
            what,
        };
        b.start();
        b
    }

    /// Start (again) and wait until it accepts connections.
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "{} is running", self.what);
        let child = (self.command)()
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.what));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "{} did not start", self.what);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stop cleanly (SIGTERM to the process group) and start again: what a
    /// test set up is then on disk, not only in the broker's buffers, before
    /// the test crashes it.
    pub fn restart_clean(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", child.id())])
                .status();
            let deadline = Instant::now() + Duration::from_secs(60);
            while child.try_wait().ok().flatten().is_none() {
                assert!(Instant::now() < deadline, "{} did not stop", self.what);
                std::thread::sleep(Duration::from_millis(50));
            }
            self.child = Some(child);
            self.stop();
        }
        self.start();
    }

    /// Kill the whole process group (a crash, not a clean shutdown).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-9", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            let deadline = Instant::now() + Duration::from_secs(20);
            while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                assert!(Instant::now() < deadline, "{} did not stop", self.what);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// nats-server with JetStream, its store in `dir`.
pub fn nats(dir: &Path) -> Broker {
    let port = finality_testkit::free_port();
    let dir: PathBuf = dir.to_path_buf();
    let bin = first_existing(
        &[
            "/usr/sbin/nats-server",
            "/usr/bin/nats-server",
            "/usr/local/bin/nats-server",
        ],
        "nats-server",
    );
    Broker::new(
        "nats-server",
        port,
        Box::new(move || {
            let mut c = Command::new(bin);
            c.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
                .arg(&dir);
            c
        }),
    )
}

/// redis-server appending every write to its log before replying
/// (`appendfsync always`): what survives its crash is all it acknowledged.
pub fn redis(dir: &Path) -> Broker {
    let port = finality_testkit::free_port();
    let dir: PathBuf = dir.to_path_buf();
    Broker::new(
        "redis-server",
        port,
        Box::new(move || {
            let mut c = Command::new("redis-server");
            c.args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&dir);
            c
        }),
    )
}

/// A RabbitMQ node of its own (own node name, ports, database and logs).
pub fn rabbitmq(dir: &Path) -> Broker {
    let port = finality_testkit::free_port();
    let dist = finality_testkit::free_port();
    let dir: PathBuf = dir.to_path_buf();
    std::fs::write(
        dir.join("rabbitmq.conf"),
        format!("listeners.tcp.default = 127.0.0.1:{port}\n"),
    )
    .expect("writing the RabbitMQ config");
    std::fs::write(dir.join("enabled_plugins"), "[].\n").expect("writing the plugins file");
    let bin = first_existing(
        &["/usr/lib/rabbitmq/bin/rabbitmq-server"],
        "rabbitmq-server",
    );
    Broker::new(
        "rabbitmq-server",
        port,
        Box::new(move || {
            let mut c = Command::new(bin);
            c.env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq.conf"))
                .env("RABBITMQ_NODENAME", format!("fin{port}@localhost"))
                .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
                .env("RABBITMQ_NODE_PORT", port.to_string())
                .env("RABBITMQ_DIST_PORT", dist.to_string())
                .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
                .env("RABBITMQ_LOG_BASE", dir.join("log"))
                .env("RABBITMQ_PID_FILE", dir.join("pid"))
                .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
                .current_dir(&dir);
            c
        }),
    )
}
