//! A highly available PostgreSQL of a test's own: a pg_auto_failover
//! monitor and two nodes on loopback ports (`scripts/pg-ha.sh`), with
//! synchronous replication, stopped by process group and removed on drop.
//!
//! Why a wrapper over the script: the integration tests and `make faults`
//! kill a node the way a machine failure does (its whole process group,
//! `kill -9`), wait for the monitor's failover, and start the node again
//! to see it rejoin as a standby; the script holds how, this holds where
//! (the directory and ports).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context as _;

/// A running formation: node 1 and node 2 on `port + 1` and `port + 2`,
/// the monitor on `port`.
pub struct HaPostgres {
    dir: PathBuf,
    script: PathBuf,
    pub port: u16,
}

impl HaPostgres {
    /// Starts a formation in a directory of its own under the system's
    /// temporary directory, on three free consecutive ports; node 1 is
    /// the primary, node 2 its synchronous standby, `admitone` their
    /// database. `repo` is the repository's root (where `scripts/` is).
    pub fn start(repo: &Path) -> anyhow::Result<Self> {
        let script = repo.join("scripts/pg-ha.sh");
        let dir =
            std::env::temp_dir().join(format!("admitone-ha-{}", uuid::Uuid::new_v4().simple()));
        let port = free_ports(3)?;
        let ha = Self { dir, script, port };
        ha.run(&["up", &ha.dir_str(), &port.to_string()])
            .context("starting the formation (scripts/pg-ha.sh up)")?;
        Ok(ha)
    }

    fn dir_str(&self) -> String {
        self.dir.display().to_string()
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new(&self.script)
            .args(args)
            .output()
            .with_context(|| format!("running {}", self.script.display()))?;
        anyhow::ensure!(
            out.status.success(),
            "scripts/pg-ha.sh {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The URL of `node` (1 or 2), database `admitone`.
    pub fn url(&self, node: u16) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/admitone",
            self.port + node
        )
    }

    /// `database.failover_hosts` for a URL naming node 1.
    pub fn failover_hosts(&self) -> String {
        format!("127.0.0.1:{}", self.port + 2)
    }

    /// Kills `node`'s whole process group (`pg_autoctl` and its
    /// PostgreSQL), as a machine failure would.
    pub fn kill(&self, node: u16) -> anyhow::Result<()> {
        self.run(&["kill", &self.dir_str(), &format!("node{node}")])
            .map(drop)
    }

    /// Stops `node`'s whole process group with SIGSTOP: a frozen machine,
    /// or one cut off without a word (connections stay open, nothing
    /// answers).
    pub fn freeze(&self, node: u16) -> anyhow::Result<()> {
        self.run(&["freeze", &self.dir_str(), &format!("node{node}")])
            .map(drop)
    }

    /// Lets a frozen `node` run again (SIGCONT).
    pub fn thaw(&self, node: u16) -> anyhow::Result<()> {
        self.run(&["thaw", &self.dir_str(), &format!("node{node}")])
            .map(drop)
    }

    /// Starts `node` again: it rejoins the formation (as a standby, once
    /// another node was promoted).
    pub fn restart(&self, node: u16) -> anyhow::Result<()> {
        self.run(&["start", &self.dir_str(), &format!("node{node}")])
            .map(drop)
    }

    /// Waits (up to `secs`) until the nodes report `states`, in node order
    /// (`"primary secondary"`; a killed node keeps its last report).
    pub fn wait(&self, states: &str, secs: u32) -> anyhow::Result<()> {
        self.run(&["wait", &self.dir_str(), states, &secs.to_string()])
            .map(drop)
    }

    /// `host:port` of the node the monitor calls primary.
    pub fn primary(&self) -> anyhow::Result<String> {
        self.run(&["primary", &self.dir_str()])
    }

    /// What the formation's processes logged, for a failing test.
    pub fn logs(&self) -> String {
        ["monitor", "node1", "node2"]
            .iter()
            .map(|name| {
                let log = std::fs::read_to_string(self.dir.join(format!("{name}.log")))
                    .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                format!(
                    "--- {name} ---\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for HaPostgres {
    fn drop(&mut self) {
        let _ = self.run(&["down", &self.dir_str()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The first of `n` consecutive loopback ports nothing listens on, below
/// the range the system hands out for outgoing connections (a port of
/// that range, free now, could be taken by another test's connection in
/// the seconds before PostgreSQL binds it).
fn free_ports(n: u16) -> anyhow::Result<u16> {
    for _ in 0..200 {
        // A random start (a v4 uuid's bits), so parallel tests spread out.
        let offset = u16::try_from(uuid::Uuid::new_v4().as_u128() % 12_000).unwrap_or(0);
        let base = 20_000 + offset;
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return Ok(base);
        }
    }
    anyhow::bail!("no {n} consecutive free ports between 20000 and 32000")
}
