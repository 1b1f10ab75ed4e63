//! A MariaDB server of one's own: `mariadb-install-db` in a temporary
//! directory, `mariadbd` on a free loopback port, so `finality chaos` can
//! kill and restart the database without touching the machine's server.
//! Killed and deleted on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A running (or stopped) private MariaDB.
pub struct PrivateMaria {
    dir: PathBuf,
    port: u16,
    child: Mutex<Option<Child>>,
}

/// The database the URL names (created on the first start).
const DATABASE: &str = "finality";

impl PrivateMaria {
    /// Create and start a server with an empty `finality` database.
    /// Panics with the tool's output if it cannot.
    pub fn start() -> PrivateMaria {
        let dir =
            std::env::temp_dir().join(format!("finality-maria-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the data directory");
        let m = PrivateMaria {
            dir,
            port: super::free_port(),
            child: Mutex::new(None),
        };
        let out = Command::new("mariadb-install-db")
            .args([
                "--no-defaults",
                &format!("--datadir={}", m.data()),
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ])
            .output()
            .unwrap_or_else(|e| panic!("running mariadb-install-db: {e}"));
        assert!(
            out.status.success(),
            "mariadb-install-db failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        m.start_again();
        let out = Command::new("mariadb")
            .args([
                "--no-defaults",
                "-h127.0.0.1",
                &format!("-P{}", m.port),
                "-uroot",
                "-e",
                &format!("CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
            ])
            .output()
            .unwrap_or_else(|e| panic!("running mariadb: {e}"));
        assert!(
            out.status.success(),
            "creating the database failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        m
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// `mysql://…` for this server's `finality` database.
    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/{DATABASE}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Start it (again), waiting until it accepts connections. Commits
    /// reach the operating system at once and the disk within a second
    /// (`innodb_flush_log_at_trx_commit = 2`): a killed server loses
    /// nothing committed, as PostgreSQL's private server with fsync off.
    pub fn start_again(&self) {
        let child = Command::new("mariadbd")
            .args([
                "--no-defaults",
                &format!("--datadir={}", self.data()),
                &format!("--port={}", self.port),
                "--bind-address=127.0.0.1",
                &format!("--socket={}", self.dir.join("sock").display()),
                &format!("--pid-file={}", self.dir.join("pid").display()),
                &format!("--log-error={}", self.dir.join("error.log").display()),
                "--user=root",
                "--skip-name-resolve",
                "--max-connections=300",
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=256M",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting mariadbd: {e}"));
        *self.child.lock().unwrap_or_else(|p| p.into_inner()) = Some(child);
        self.wait_ready(Duration::from_secs(60));
    }

    /// Stop it: `immediate` kills it (SIGKILL, crash recovery on the next
    /// start); otherwise a clean shutdown (SIGTERM), waited for.
    pub fn stop(&self, immediate: bool) {
        let taken = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut child) = taken else { return };
        if immediate {
            let _ = child.kill();
        } else {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        let _ = child.wait();
    }

    /// Kill and start again (a crash and recovery).
    pub fn restart_immediate(&self) {
        self.stop(true);
        self.start_again();
    }

    fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let ping = Command::new("mariadb-admin")
                .args([
                    "--no-defaults",
                    "-h127.0.0.1",
                    &format!("-P{}", self.port),
                    "-uroot",
                    "ping",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if ping.is_ok_and(|s| s.success()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "private MariaDB did not start (see {})",
                self.dir.join("error.log").display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PrivateMaria {
    fn drop(&mut self) {
        self.stop(true);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
