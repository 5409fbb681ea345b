//! One socket case: a fresh planner thread, server thread and clients, and the machine's CPU
//! shares while they ran.

use super::client::{client, tally, ClientOut, Tally};
use super::fake::{kernel_planner, planner_thread, PlannerStats};
use super::server::{cpu_jiffies, server_thread, Handler, ServerStats};
use super::{CLIENTS, PLAN, SERVER_FIFO_PRIORITY, SLOT_NS};
use scx_tt::clock::{monotonic_ns, SlotClock};
use scx_tt::control::socket::{Access, ControlSocket};
use scx_tt::plan::{self, Plan};
use scx_tt::planner::shared::PlannerHandle;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// A private temp dir (mode 0700: the socket refuses a directory others may write).
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scx_tt-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the temp dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .expect("chmod 0700 of the temp dir");
    dir
}

pub(crate) struct SocketRun {
    pub(crate) tally: Tally,
    pub(crate) server: ServerStats,
    pub(crate) planner: PlannerStats,
    /// Of the machine's CPU time during the run (all CPUs = 100 %): this process, the others,
    /// and the time the hypervisor ran something else on our CPUs (steal).
    pub(crate) own_share: f64,
    pub(crate) others_share: f64,
    pub(crate) steal_share: f64,
    pub(crate) wall_ns: u64,
}

/// One socket case: a fresh planner, server and 8 clients.
pub(crate) fn socket_run(
    name: &str,
    per_request: bool,
    handler: Handler,
    fifo_server: bool,
) -> SocketRun {
    let dir = temp_dir(name);
    let path = dir.join("control.sock");
    let plan = plan::from_str(PLAN).expect("the bench plan is valid");
    let (jiffies0, wall0) = (cpu_jiffies(), monotonic_ns());
    // slot 0 starts a little ahead, as the run arms it (enforce.rs: at least 100 ms)
    let clock = SlotClock::new(monotonic_ns() + 100_000_000, SLOT_NS);
    let handle = Arc::new(kernel_planner(&plan));
    let stop_planner = Arc::new(AtomicBool::new(false));
    let stop_server = Arc::new(AtomicBool::new(false));
    let planner = {
        let (handle, stop) = (handle.clone(), stop_planner.clone());
        std::thread::Builder::new()
            .name("bench-planner".into())
            .spawn(move || planner_thread(&handle, clock, &stop))
            .expect("starting the planner thread")
    };
    let (ready_tx, ready_rx) = mpsc::channel();
    let server = ServerSpawn {
        path: path.clone(),
        plan,
        clock,
        handle: handle.clone(),
        handler,
        fifo_server,
        stop: stop_server.clone(),
    }
    .spawn(ready_tx);
    let bound = ready_rx
        .recv_timeout(Duration::from_secs(5))
        .unwrap_or_else(|e| Err(format!("no word from the server thread: {e}")));
    let outs = match bound {
        Ok(()) => run_clients(&path, clock, per_request),
        Err(e) => {
            eprintln!("control_admission: {name}: the socket: {e}");
            Vec::new()
        }
    };
    stop_server.store(true, Ordering::Relaxed);
    let server = server.join().unwrap_or_else(|_| {
        eprintln!("control_admission: {name}: the server thread panicked");
        ServerStats::default()
    });
    stop_planner.store(true, Ordering::Relaxed);
    let planner = planner.join().unwrap_or_else(|_| {
        eprintln!("control_admission: {name}: the planner thread panicked");
        PlannerStats::default()
    });
    let (jiffies1, wall1) = (cpu_jiffies(), monotonic_ns());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // jiffies are 10 ms (USER_HZ 100)
    let capacity = (wall1 - wall0) as f64 / 1e7 * cpus;
    let busy = jiffies1.0.saturating_sub(jiffies0.0) as f64;
    let steal = jiffies1.1.saturating_sub(jiffies0.1) as f64;
    let own = jiffies1.2.saturating_sub(jiffies0.2) as f64;
    let _ = std::fs::remove_dir_all(&dir);
    SocketRun {
        tally: tally(outs),
        server,
        planner,
        own_share: own / capacity,
        others_share: (busy - own).max(0.0) / capacity,
        steal_share: steal / capacity,
        wall_ns: wall1 - wall0,
    }
}

/// What the server thread of a socket case is started with.
struct ServerSpawn {
    path: PathBuf,
    plan: Plan,
    clock: SlotClock,
    handle: Arc<PlannerHandle>,
    handler: Handler,
    fifo_server: bool,
    stop: Arc<AtomicBool>,
}

impl ServerSpawn {
    /// Starts the server thread: it binds the socket, sets its policy, says so on `ready_tx`
    /// (or why not) and serves until stopped.
    fn spawn(self, ready_tx: mpsc::Sender<Result<(), String>>) -> JoinHandle<ServerStats> {
        let ServerSpawn {
            path,
            plan,
            clock,
            handle,
            handler,
            fifo_server,
            stop,
        } = self;
        std::thread::Builder::new()
            .name("bench-run-loop".into())
            .spawn(move || {
                let mut sock = match ControlSocket::bind(&path, &Access::default()) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("{e:#}")));
                        return ServerStats::default();
                    }
                };
                let policy = if fifo_server {
                    let param = libc::sched_param {
                        sched_priority: SERVER_FIFO_PRIORITY,
                    };
                    // SAFETY: a plain syscall on the calling thread with a valid parameter.
                    match unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } {
                        0 => format!("SCHED_FIFO {SERVER_FIFO_PRIORITY}"),
                        _ => format!(
                            "SCHED_OTHER: SCHED_FIFO refused ({})",
                            std::io::Error::last_os_error()
                        ),
                    }
                } else {
                    "SCHED_OTHER".to_string()
                };
                let _ = ready_tx.send(Ok(()));
                let mut stats = server_thread(&mut sock, plan, clock, handle, handler, &stop);
                stats.policy = policy;
                stats
                // the socket file goes with `sock`
            })
            .expect("starting the server thread")
    }
}

/// Runs the clients from a little after slot 0 (or now) until each is done; their outputs.
fn run_clients(path: &Path, clock: SlotClock, per_request: bool) -> Vec<ClientOut> {
    let start = clock.t0_ns.max(monotonic_ns()) + 20_000_000;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name(format!("bench-client-{c}"))
                .spawn(move || client(&path, c, start, per_request))
                .expect("starting a client thread")
        })
        .collect();
    clients
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect()
}
