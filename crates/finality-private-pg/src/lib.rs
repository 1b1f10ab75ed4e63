//! A PostgreSQL server of a test's own: `initdb` in a temporary directory,
//! started on a free loopback port, so a test can stop, block or restart
//! the database without touching the shared server other tests use in
//! parallel. Stopped and deleted on drop.
//!
//! Written by hand: no crate runs a throwaway PostgreSQL from the system's
//! own binaries (embedded-postgres crates download their own builds, which
//! this machine cannot). [`PrivateMaria`] is the same for MariaDB.
#![forbid(unsafe_code)]

mod maria;
pub use maria::PrivateMaria;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A running (or stopped) private server.
pub struct PrivatePg {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// Where the server binaries are (`/usr/lib/postgresql/<major>/bin`, the
/// newest), or `pg_ctl` on the PATH.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.retain(|p| p.join("pg_ctl").exists());
    versions.sort();
    versions.pop().unwrap_or_default()
}

/// Whether this process runs as root (PostgreSQL refuses to run as root:
/// its commands then run as the `postgres` user).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl PrivatePg {
    /// Create and start a server. Panics with the tool's output if it
    /// cannot (a test without its database cannot say anything useful).
    pub fn start() -> PrivatePg {
        let pg = PrivatePg::empty();
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        pg.start_again();
        pg
    }

    /// A directory of its own (owned by `postgres` when this process is
    /// root) and a free port; nothing in it yet.
    fn empty() -> PrivatePg {
        let as_postgres = is_root();
        let dir =
            std::env::temp_dir().join(format!("finality-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the data directory");
        if as_postgres {
            let ok = Command::new("chown")
                .args(["postgres:postgres", &dir.display().to_string()])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown {} to postgres failed", dir.display());
        }
        PrivatePg {
            dir,
            bin: bin_dir(),
            port: free_port(),
            as_postgres,
        }
    }

    /// A streaming replica of this server, as an operator makes one:
    /// `pg_basebackup -R` of its data (which writes `standby.signal` and
    /// `primary_conninfo`), started as a hot standby on a port of its own.
    /// `initdb`'s default `pg_hba.conf` lets loopback replication in.
    pub fn replica(&self) -> PrivatePg {
        let r = PrivatePg::empty();
        let (data, port) = (r.data(), self.port.to_string());
        r.run(
            "pg_basebackup",
            &[
                "-D",
                &data,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
            ],
        );
        r.start_again();
        r
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// `tool args…`, as the `postgres` user when this process is root.
    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let path = self.bin.join(tool);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        c.args(args);
        c
    }

    fn run(&self, tool: &str, args: &[&str]) -> std::process::Output {
        let out = self
            .command(tool, args)
            .output()
            .unwrap_or_else(|e| panic!("running {tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `postgres://…` for this server's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Start it (again), waiting until it accepts connections.
    pub fn start_again(&self) {
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &opts,
                "-l",
                &log,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        self.wait_ready(Duration::from_secs(30));
    }

    /// Stop it: `immediate` kills it as a crash would (recovery on the next
    /// start); otherwise a fast shutdown.
    pub fn stop(&self, immediate: bool) {
        let mode = if immediate { "immediate" } else { "fast" };
        self.run("pg_ctl", &["-D", &self.data(), "-m", mode, "-w", "stop"]);
    }

    /// Promote a standby to a primary (`pg_ctl promote`, waiting until it
    /// takes writes): it goes on from the WAL it had, on a new timeline.
    pub fn promote(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-w", "-t", "60", "promote"]);
    }

    /// Restart in immediate mode (a crash and recovery).
    pub fn restart_immediate(&self) {
        self.stop(true);
        self.start_again();
    }

    fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "private PostgreSQL did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
