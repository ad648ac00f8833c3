//! Lease holders: which process runs a run. A holder names its machine, process id and
//! process start time, so a lease left by a process of this machine that has died (a
//! `kill -9`, a crash) is taken over at once instead of after it expires.

use std::sync::OnceLock;

/// This process's holder name: `host:pid:start` (`start` is `-` where unknown).
pub fn holder() -> String {
    static HOLDER: OnceLock<String> = OnceLock::new();
    HOLDER
        .get_or_init(|| {
            let pid = std::process::id();
            let start = start_time(pid).unwrap_or_else(|| "-".into());
            format!("{}:{pid}:{start}", host())
        })
        .clone()
}

/// True when `holder` names a process of this machine that no longer runs (its pid is
/// gone, or now belongs to a process started at another time). Unknown shapes, other
/// machines, and systems without `/proc` are never judged dead: their leases expire.
pub fn holder_is_dead(holder: &str) -> bool {
    let mut parts = holder.rsplitn(3, ':');
    let (Some(start), Some(pid), Some(host_name)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if host_name != host() || !std::path::Path::new("/proc/self/stat").exists() {
        return false;
    }
    match start_time(pid) {
        None => true,
        Some(now) => start != "-" && now != start,
    }
}

/// The machine's name (Linux: the kernel's hostname).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".into())
        .replace(':', "_")
}

/// A live process's start time in clock ticks since boot (`/proc/<pid>/stat` field
/// 22); `None` when there is no such process or it is a zombie (killed, not yet reaped).
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: skip past its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    fields.nth(18).map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_dead() {
        let me = holder();
        assert!(!holder_is_dead(&me), "{me}");
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        let gone = format!("{}:{pid}:{}", host(), start.unwrap_or_else(|| "1".into()));
        assert!(holder_is_dead(&gone), "{gone}");
        // A killed child not yet reaped (a zombie) is dead too.
        let mut zombie = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let zpid = zombie.id();
        let zstart = start_time(zpid).unwrap();
        zombie.kill().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while start_time(zpid).is_some() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(holder_is_dead(&format!("{}:{zpid}:{zstart}", host())));
        zombie.wait().unwrap();
        // Same pid, another start time: the pid was reused.
        let reused = format!("{}:{}:1", host(), std::process::id());
        assert!(holder_is_dead(&reused));
    }

    #[test]
    fn foreign_or_odd_holders_are_left_to_expire() {
        assert!(!holder_is_dead("pid 12"));
        assert!(!holder_is_dead("elsewhere:1:2"));
        assert!(!holder_is_dead(&format!("{}:notapid:1", host())));
    }
}
