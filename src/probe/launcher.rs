//! Who am I in this job: rank, world size and where rank 0 listens, read from
//! the launcher that started the process (torchrun, Slurm, Open MPI, PMI).
//! No home-made cluster engine: the launcher places the processes; `topo` only
//! reads what it says.

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub rank: u32,
    pub world: u32,
    /// Rank 0's address for the rendezvous (`MASTER_ADDR`, or the step's first node).
    pub master: String,
    /// topo's own rendezvous port: never `MASTER_PORT` itself, where torchrun's
    /// agent already serves its TCPStore.
    pub port: u16,
    /// Names the job and step, so processes of two jobs on one port never mix.
    pub token: String,
    /// What only the job's processes know (`TOPO_RENDEZVOUS_SECRET`, which
    /// every launcher passes on to its processes); `None`: none was set.
    pub secret: Option<String>,
    /// Which launcher's variables were read.
    pub source: &'static str,
}

/// The rendezvous port when neither `TOPO_PORT` nor `MASTER_PORT` is set.
pub const DEFAULT_PORT: u16 = 29431;

/// topo's port is `MASTER_PORT` plus this when `TOPO_PORT` is not set: torchrun's
/// agent (and `torch.distributed` itself) already listens on `MASTER_PORT`.
pub const PORT_OFFSET: u16 = 1;

/// The largest world `topo probe` takes: past it a launcher's number is
/// almost surely wrong, and tables sized by it would not fit in memory.
pub const MAX_WORLD: u32 = 65_536;

/// Slurm's reserved step ids (batch script, extern, interactive, pending):
/// processes there are not a step's tasks.
const SLURM_SPECIAL_STEPS: std::ops::RangeInclusive<u64> = 0xffff_fff0..=0xffff_ffff;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LaunchError {
    #[error("{0} is not a number: {1:?}")]
    NotANumber(&'static str, String),
    #[error(
        "{launcher} sets the rank ({rank}) and world size ({world}) but not where rank 0 listens: set MASTER_ADDR (and MASTER_PORT) or pass --master HOST[:PORT]"
    )]
    NoMaster { launcher: &'static str, rank: u32, world: u32 },
    #[error("rank {rank} is not below the world size {world}")]
    RankOutOfRange { rank: u32, world: u32 },
    #[error("{launcher} says the world has {world} processes; topo probe takes at most {MAX_WORLD}")]
    WorldTooLarge { launcher: &'static str, world: u64 },
}

/// The launchers, most specific first: Open MPI and PMI name the processes
/// they started themselves; torchrun's `RANK` is right even inside an `srun`
/// step (where `SLURM_PROCID` numbers the agents); Slurm's task variables
/// count only inside a step (see [`in_slurm_step`]).
const LAUNCHERS: [(&str, &str, &str); 4] = [
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI", "PMI_RANK", "PMI_SIZE"),
    ("torchrun", "RANK", "WORLD_SIZE"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS"),
];

/// Whether Slurm's task variables describe this process: `sbatch` exports
/// `SLURM_PROCID=0` and `SLURM_NTASKS` to the batch script itself, which is
/// one process, not rank 0 of a step. Only `srun` (a step) sets a step id that
/// is not one of Slurm's reserved ones.
pub fn in_slurm_step(env: &HashMap<String, String>) -> bool {
    ["SLURM_STEP_ID", "SLURM_STEPID"]
        .iter()
        .find_map(|v| env.get(*v))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|id| !SLURM_SPECIAL_STEPS.contains(&id))
}

/// Reads the launcher's variables from `env` (the process environment in
/// `topo`; a map in tests). `None`: no launcher, a single process.
pub fn detect(env: &HashMap<String, String>, master_flag: Option<&str>) -> Result<Option<Launch>, LaunchError> {
    let get = |name: &str| env.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let number = |name: &'static str| -> Result<Option<u64>, LaunchError> {
        get(name).map(|v| v.trim().parse().map_err(|_| LaunchError::NotANumber(name, v.to_string()))).transpose()
    };
    let slurm_step = in_slurm_step(env);
    let mut found = None;
    for (source, rank, world) in LAUNCHERS {
        if source == "Slurm" && !slurm_step {
            continue;
        }
        // Inside a step, the step's task count is the world (SLURM_NTASKS may be the job's).
        let world =
            if source == "Slurm" && get("SLURM_STEP_NUM_TASKS").is_some() { "SLURM_STEP_NUM_TASKS" } else { world };
        if let (Some(rank), Some(world)) = (number(rank)?, number(world)?) {
            found = Some((source, rank, world));
            break;
        }
    }
    let Some((source, rank, world)) = found else { return Ok(None) };
    if world > u64::from(MAX_WORLD) {
        return Err(LaunchError::WorldTooLarge { launcher: source, world });
    }
    let world = world as u32;
    let rank = u32::try_from(rank)
        .ok()
        .filter(|r| *r < world)
        .ok_or(LaunchError::RankOutOfRange { rank: u32::try_from(rank).unwrap_or(u32::MAX), world })?;
    let (flag_host, flag_port) = match master_flag {
        Some(text) => match text.rsplit_once(':') {
            Some((host, port)) if port.parse::<u16>().is_ok() => (Some(host.to_string()), port.parse::<u16>().ok()),
            _ => (Some(text.to_string()), None),
        },
        None => (None, None),
    };
    // The step's first node runs rank 0 (block distribution, Slurm's default);
    // the job's first node need not be in this step at all.
    let slurm_lists = ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"];
    let master = flag_host
        .or_else(|| get("MASTER_ADDR").map(str::to_string))
        .or_else(|| slurm_step.then(|| slurm_lists.iter().find_map(|v| get(v)).and_then(first_host)).flatten())
        .ok_or(LaunchError::NoMaster { launcher: source, rank, world })?;
    let port = match (flag_port, get("TOPO_PORT"), get("MASTER_PORT")) {
        (Some(port), _, _) => port,
        (None, Some(p), _) => p.trim().parse().map_err(|_| LaunchError::NotANumber("TOPO_PORT", p.to_string()))?,
        (None, None, Some(p)) => {
            let master_port: u16 =
                p.trim().parse().map_err(|_| LaunchError::NotANumber("MASTER_PORT", p.to_string()))?;
            derived_port(master_port)
        }
        (None, None, None) => DEFAULT_PORT,
    };
    let job = ["TOPO_JOB_TOKEN", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMI_ID"]
        .iter()
        .find_map(|v| get(v))
        .unwrap_or("no-job-id");
    let step = match source {
        "Slurm" => get("SLURM_STEP_ID").or_else(|| get("SLURM_STEPID")),
        _ => None,
    };
    let token = match step {
        Some(step) => format!("topo/{job}.{step}/{world}"),
        None => format!("topo/{job}/{world}"),
    };
    let secret = get("TOPO_RENDEZVOUS_SECRET").map(str::to_string);
    Ok(Some(Launch { rank, world, master, port, token, secret, source }))
}

/// topo's port next to the launcher's `MASTER_PORT` (wrapping below it at the top).
pub fn derived_port(master_port: u16) -> u16 {
    master_port.checked_add(PORT_OFFSET).unwrap_or(master_port.saturating_sub(PORT_OFFSET))
}

/// This process's place among the launcher's processes on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalRank {
    pub rank: u32,
    /// How many of the job's processes run on this node.
    pub size: u32,
}

/// When the launcher started several processes on this node (torchrun
/// `--nproc-per-node 8`, `srun -n 16` on two nodes, `mpirun -npernode 8`),
/// this process's local rank: it drives one GPU. `None`: one process per
/// node, which drives all of the node's GPUs. Slurm's tasks per node come
/// from the step's layout (`SLURM_STEP_TASKS_PER_NODE`, e.g. `2(x3),1`) at this
/// node's index, since `SLURM_NTASKS_PER_NODE` exists only when
/// `--ntasks-per-node` was given.
pub fn local_rank(env: &HashMap<String, String>) -> Option<LocalRank> {
    let number = |name: &str| env.get(name).and_then(|v| v.trim().parse::<u32>().ok());
    let pairs = [
        ("OMPI_COMM_WORLD_LOCAL_RANK", number("OMPI_COMM_WORLD_LOCAL_SIZE")),
        ("MPI_LOCALRANKID", number("MPI_LOCALNRANKS")),
        ("LOCAL_RANK", number("LOCAL_WORLD_SIZE")),
        ("SLURM_LOCALID", in_slurm_step(env).then(|| slurm_tasks_here(env)).flatten()),
    ];
    pairs
        .into_iter()
        .find_map(|(rank, size)| Some(LocalRank { rank: number(rank)?, size: size? }))
        .filter(|local| local.size > 1)
}

/// Slurm's tasks on this node: the step's (or job's) tasks-per-node list at
/// `SLURM_NODEID`, or `SLURM_NTASKS_PER_NODE` when given.
fn slurm_tasks_here(env: &HashMap<String, String>) -> Option<u32> {
    let node: usize = env.get("SLURM_NODEID").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    ["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]
        .iter()
        .find_map(|v| env.get(*v))
        .and_then(|list| tasks_per_node(list, node))
        .or_else(|| env.get("SLURM_NTASKS_PER_NODE").and_then(|v| v.trim().parse().ok()))
}

/// Entry `node` of Slurm's compressed per-node counts: `2(x3),1` is 2, 2, 2, 1.
pub fn tasks_per_node(list: &str, node: usize) -> Option<u32> {
    let mut seen = 0usize;
    for item in list.split(',') {
        let item = item.trim();
        let (count, repeat) = match item.split_once("(x") {
            Some((count, rest)) => (count, rest.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (item, 1),
        };
        let count: u32 = count.parse().ok()?;
        seen = seen.saturating_add(repeat);
        if node < seen {
            return Some(count);
        }
    }
    None
}

/// The first host of a Slurm host list: `gpu[007-010,12],cpu1` -> `gpu007`.
pub fn first_host(list: &str) -> Option<String> {
    expand_hosts(list, 1)?.into_iter().next().filter(|h| !h.is_empty())
}

/// Every host of a Slurm host list, at most `limit` of them: `node[01-03,7],x`
/// is node01 node02 node03 node7 x (zero padding kept). `None`: not a host list.
pub fn expand_hosts(list: &str, limit: usize) -> Option<Vec<String>> {
    let mut hosts = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() && hosts.len() < limit {
        let bracket = rest.find('[');
        let comma = rest.find(',');
        match (bracket, comma) {
            (Some(b), c) if c.is_none_or(|c| b < c) => {
                let prefix = rest.get(..b)?;
                let close = rest.get(b..)?.find(']')? + b;
                for part in rest.get(b + 1..close)?.split(',') {
                    let (from, to) = part.split_once('-').unwrap_or((part, part));
                    let (start, end): (u64, u64) = (from.parse().ok()?, to.parse().ok()?);
                    if end < start {
                        return None;
                    }
                    for n in start..=end {
                        if hosts.len() >= limit {
                            break;
                        }
                        hosts.push(format!("{prefix}{n:0width$}", width = from.len()));
                    }
                }
                rest = rest.get(close + 1..)?.trim_start_matches(',');
            }
            (_, Some(c)) => {
                hosts.push(rest.get(..c)?.to_string());
                rest = rest.get(c + 1..)?;
            }
            (_, None) => {
                hosts.push(rest.to_string());
                rest = "";
            }
        }
    }
    Some(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn each_launcher() {
        let torchrun = env(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("MASTER_ADDR", "node1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "abc"),
        ]);
        let launch = detect(&torchrun, None).unwrap().unwrap();
        assert_eq!((launch.rank, launch.world, launch.master.as_str(), launch.source), (3, 8, "node1", "torchrun"));
        assert_eq!(launch.token, "topo/abc/8");

        let slurm = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_NODELIST", "gpu[007-010]"),
            ("SLURM_JOB_ID", "77"),
        ]);
        let launch = detect(&slurm, None).unwrap().unwrap();
        assert_eq!(
            (launch.master.as_str(), launch.port, launch.source, launch.token.as_str()),
            ("gpu007", DEFAULT_PORT, "Slurm", "topo/77.0/4")
        );

        let mpi = env(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")]);
        assert_eq!(detect(&mpi, None), Err(LaunchError::NoMaster { launcher: "Open MPI", rank: 1, world: 2 }));
        let launch = detect(&mpi, Some("10.0.0.5:4000")).unwrap().unwrap();
        assert_eq!((launch.master.as_str(), launch.port), ("10.0.0.5", 4000));

        assert_eq!(detect(&env(&[]), None), Ok(None));
        assert_eq!(
            detect(&env(&[("RANK", "x"), ("WORLD_SIZE", "2")]), None),
            Err(LaunchError::NotANumber("RANK", "x".into()))
        );
        assert_eq!(
            detect(&env(&[("RANK", "2"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "a")]), None),
            Err(LaunchError::RankOutOfRange { rank: 2, world: 2 })
        );
    }

    /// Defect 1: torchrun's agent serves its TCPStore on MASTER_PORT, so topo
    /// takes a port of its own next to it, or TOPO_PORT.
    #[test]
    fn torchrun_store_port_is_not_topos() {
        let mut torchrun = env(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "n1"), ("MASTER_PORT", "29500")]);
        assert_eq!(detect(&torchrun, None).unwrap().unwrap().port, 29501);
        torchrun.insert("TOPO_PORT".into(), "40000".into());
        assert_eq!(detect(&torchrun, None).unwrap().unwrap().port, 40000);
        torchrun.insert("TOPO_PORT".into(), "x".into());
        assert_eq!(detect(&torchrun, None), Err(LaunchError::NotANumber("TOPO_PORT", "x".into())));
        assert_eq!(derived_port(65535), 65534);
    }

    /// Defect 4: sbatch exports SLURM_PROCID/SLURM_NTASKS to the batch script;
    /// only a step's tasks are ranks. Open MPI's variables win over Slurm's.
    #[test]
    fn slurm_variables_count_only_inside_a_step() {
        let batch = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_JOB_ID", "77"),
            ("SLURM_JOB_NODELIST", "gpu[1-2]"),
        ]);
        assert_eq!(detect(&batch, None), Ok(None));
        let mut batch_step = batch.clone();
        batch_step.insert("SLURM_STEP_ID".into(), "4294967291".into()); // SLURM_BATCH_SCRIPT
        assert_eq!(detect(&batch_step, None), Ok(None));
        let mut step = batch.clone();
        step.extend(env(&[
            ("SLURM_STEP_ID", "3"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_PROCID", "2"),
            ("SLURM_STEP_NODELIST", "node[03-04,7]"),
        ]));
        let launch = detect(&step, None).unwrap().unwrap();
        assert_eq!((launch.rank, launch.world, launch.master.as_str()), (2, 4, "node03"));
        assert_eq!(launch.token, "topo/77.3/4");
        let mut mpi_in_step = step.clone();
        mpi_in_step.extend(env(&[("OMPI_COMM_WORLD_RANK", "5"), ("OMPI_COMM_WORLD_SIZE", "8")]));
        let launch = detect(&mpi_in_step, None).unwrap().unwrap();
        assert_eq!((launch.source, launch.rank, launch.world), ("Open MPI", 5, 8));
        // torchrun inside srun: SLURM_PROCID numbers the agents, RANK the workers.
        let mut torchrun_in_step = step.clone();
        torchrun_in_step.extend(env(&[("RANK", "6"), ("WORLD_SIZE", "8"), ("MASTER_ADDR", "node03")]));
        assert_eq!(detect(&torchrun_in_step, None).unwrap().unwrap().rank, 6);
    }

    /// Issue 18 item 5: an absurd world size is refused, not allocated.
    #[test]
    fn huge_worlds_are_refused() {
        for world in ["100000000", "4294967295", "99999999999999999999"] {
            let result = detect(&env(&[("RANK", "0"), ("WORLD_SIZE", world), ("MASTER_ADDR", "a")]), None);
            assert!(
                matches!(result, Err(LaunchError::WorldTooLarge { .. }) | Err(LaunchError::NotANumber(..))),
                "{world}: {result:?}"
            );
        }
        let ok = detect(&env(&[("RANK", "0"), ("WORLD_SIZE", "65536"), ("MASTER_ADDR", "a")]), None);
        assert_eq!(ok.unwrap().unwrap().world, MAX_WORLD);
    }

    #[test]
    fn one_process_per_gpu_or_per_node() {
        let local = |pairs: &[(&str, &str)]| local_rank(&env(pairs)).map(|l| (l.rank, l.size));
        assert_eq!(local(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "8")]), Some((3, 8)));
        assert_eq!(local(&[("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")]), None);
        let step = [("SLURM_STEP_ID", "0"), ("SLURM_LOCALID", "1")];
        assert_eq!(local(&[step[0], step[1], ("SLURM_NTASKS_PER_NODE", "4")]), Some((1, 4)));
        assert_eq!(local(&[step[0], ("SLURM_LOCALID", "0")]), None);
    }

    /// Defect 3: `srun -N2 -n16` sets no SLURM_NTASKS_PER_NODE; the step's
    /// layout says 8 tasks on each node.
    #[test]
    fn slurm_local_ranks_from_the_step_layout() {
        let local = |pairs: &[(&str, &str)]| local_rank(&env(pairs)).map(|l| (l.rank, l.size));
        let srun = [("SLURM_STEP_ID", "0"), ("SLURM_LOCALID", "5"), ("SLURM_NODEID", "1")];
        assert_eq!(local(&[srun[0], srun[1], srun[2], ("SLURM_STEP_TASKS_PER_NODE", "8(x2)")]), Some((5, 8)));
        assert_eq!(local(&[srun[0], srun[1], srun[2], ("SLURM_TASKS_PER_NODE", "8(x2)")]), Some((5, 8)));
        let last = [("SLURM_STEP_ID", "0"), ("SLURM_LOCALID", "0"), ("SLURM_NODEID", "3")];
        assert_eq!(local(&[last[0], last[1], last[2], ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1")]), None);
        // The batch script (no step) is one process per node.
        assert_eq!(local(&[("SLURM_LOCALID", "0"), ("SLURM_TASKS_PER_NODE", "8")]), None);
        assert_eq!(tasks_per_node("2(x3),1", 0), Some(2));
        assert_eq!(tasks_per_node("2(x3),1", 2), Some(2));
        assert_eq!(tasks_per_node("2(x3),1", 3), Some(1));
        assert_eq!(tasks_per_node("2(x3),1", 4), None);
        assert_eq!(tasks_per_node("2(x3", 0), None);
        assert_eq!(tasks_per_node("", 0), None);
    }

    #[test]
    fn slurm_host_lists() {
        assert_eq!(first_host("gpu[007-010,12],cpu1").as_deref(), Some("gpu007"));
        assert_eq!(first_host("node12").as_deref(), Some("node12"));
        assert_eq!(first_host("a[1,3]").as_deref(), Some("a1"));
        assert_eq!(first_host(""), None);
        assert_eq!(
            expand_hosts("node[01-03,7],x,gpu[9-10]", 100).unwrap(),
            ["node01", "node02", "node03", "node7", "x", "gpu9", "gpu10"]
        );
        assert_eq!(expand_hosts("n[1-1000000000]", 3).unwrap(), ["n1", "n2", "n3"]);
        assert_eq!(expand_hosts("n[5-1]", 3), None);
        assert_eq!(expand_hosts("n[1-2", 3), None);
    }
}
