//! An OpenSSH server of a test's own on loopback (Debian's
//! `openssh-server`, which `.ci/run` installs): a throwaway host key and
//! user key made by `ssh-keygen`, the current user allowed by that key
//! only, the `internal-sftp` subsystem. Stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `sshd`.
pub struct Sshd {
    child: Child,
    pub port: u16,
    /// The user the key logs in as (the one running the test).
    pub user: String,
    /// The server's public host key, as `ssh-keyscan` prints it.
    pub host_key: String,
    /// The user's private key (OpenSSH format).
    pub user_key: String,
    /// A directory of the test's own, for the files it serves.
    pub dir: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("ssh-keygen runs (Debian's openssh-client)")
        .success();
    assert!(ok, "ssh-keygen made {}", path.display());
}

/// A fresh OpenSSH public key line (another server's), for pinning tests.
pub fn other_host_key() -> String {
    let dir = std::env::temp_dir().join(format!("finality-otherkey-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    keygen(&dir.join("k"));
    let key = std::fs::read_to_string(dir.join("k.pub")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    key.trim().to_string()
}

impl Sshd {
    /// Start one; panics naming what is missing when `sshd` is not installed.
    pub fn start() -> Sshd {
        let sshd = Path::new("/usr/sbin/sshd");
        assert!(
            sshd.exists(),
            "/usr/sbin/sshd is missing: install Debian's openssh-server (`.ci/run` does)"
        );
        let dir = std::env::temp_dir().join(format!("finality-sshd-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("files")).unwrap();
        keygen(&dir.join("host_ed25519"));
        keygen(&dir.join("user_ed25519"));
        std::fs::copy(dir.join("user_ed25519.pub"), dir.join("authorized_keys")).unwrap();
        // The privilege separation directory root's sshd insists on.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = crate::free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_ed25519\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n\
             Subsystem sftp internal-sftp\nLogLevel ERROR\n",
            d = dir.display()
        );
        std::fs::write(dir.join("sshd_config"), config).unwrap();
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("sshd starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        Sshd {
            child,
            port,
            user,
            host_key: std::fs::read_to_string(dir.join("host_ed25519.pub"))
                .unwrap()
                .trim()
                .to_string(),
            user_key: std::fs::read_to_string(dir.join("user_ed25519")).unwrap(),
            dir,
        }
    }

    /// Where the files it serves are.
    pub fn files(&self) -> PathBuf {
        self.dir.join("files")
    }
}
