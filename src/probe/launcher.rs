//! Who am I in this job: rank, world size and where rank 0 listens, read from
//! the launcher that started the process (torchrun, Slurm, Open MPI, PMI).
//! No home-made cluster engine: the launcher places the processes; `topo` only
//! reads what it says.

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub rank: u32,
    pub world: u32,
    /// Rank 0's address for the rendezvous (`MASTER_ADDR`, or Slurm's first node).
    pub master: String,
    pub port: u16,
    /// Names the job, so processes of two jobs on one port never mix.
    pub token: String,
    /// Which launcher's variables were read.
    pub source: &'static str,
}

/// The rendezvous port when `MASTER_PORT` is not set.
pub const DEFAULT_PORT: u16 = 29431;

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
}

/// Reads the launcher's variables from `env` (the process environment in
/// `topo`; a map in tests). `None`: no launcher, a single process.
pub fn detect(env: &HashMap<String, String>, master_flag: Option<&str>) -> Result<Option<Launch>, LaunchError> {
    let get = |name: &str| env.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let number = |name: &'static str| -> Result<Option<u32>, LaunchError> {
        get(name).map(|v| v.trim().parse().map_err(|_| LaunchError::NotANumber(name, v.to_string()))).transpose()
    };
    let launchers: [(&'static str, &'static str, &'static str); 4] = [
        ("torchrun", "RANK", "WORLD_SIZE"),
        ("Slurm", "SLURM_PROCID", "SLURM_NTASKS"),
        ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI", "PMI_RANK", "PMI_SIZE"),
    ];
    let mut found = None;
    for (source, rank, world) in launchers {
        if let (Some(rank), Some(world)) = (number(rank)?, number(world)?) {
            found = Some((source, rank, world));
            break;
        }
    }
    let Some((source, rank, world)) = found else { return Ok(None) };
    if rank >= world {
        return Err(LaunchError::RankOutOfRange { rank, world });
    }
    let (flag_host, flag_port) = match master_flag {
        Some(text) => match text.rsplit_once(':') {
            Some((host, port)) if port.parse::<u16>().is_ok() => (Some(host.to_string()), port.parse::<u16>().ok()),
            _ => (Some(text.to_string()), None),
        },
        None => (None, None),
    };
    let master = flag_host
        .or_else(|| get("MASTER_ADDR").map(str::to_string))
        .or_else(|| get("SLURM_JOB_NODELIST").or_else(|| get("SLURM_NODELIST")).and_then(first_host))
        .ok_or(LaunchError::NoMaster { launcher: source, rank, world })?;
    let port = match flag_port {
        Some(port) => port,
        None => match get("MASTER_PORT") {
            Some(p) => p.parse().map_err(|_| LaunchError::NotANumber("MASTER_PORT", p.to_string()))?,
            None => DEFAULT_PORT,
        },
    };
    let job = ["TOPO_JOB_TOKEN", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMI_ID"]
        .iter()
        .find_map(|v| get(v))
        .unwrap_or("no-job-id");
    let token = format!("topo/{job}/{world}");
    Ok(Some(Launch { rank, world, master, port, token, source }))
}

/// When the launcher started several processes on this node (torchrun
/// `--nproc-per-node 8`, `srun --ntasks-per-node 8`, `mpirun -npernode 8`),
/// this process's local rank: it drives that one GPU. `None`: one process
/// per node, which drives all of the node's GPUs.
pub fn local_rank(env: &HashMap<String, String>) -> Option<u32> {
    let number = |name: &str| env.get(name).and_then(|v| v.trim().parse::<u32>().ok());
    [
        ("LOCAL_RANK", "LOCAL_WORLD_SIZE"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
        ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ]
    .into_iter()
    .find_map(|(rank, size)| Some((number(rank)?, number(size)?)))
    .filter(|(_, size)| *size > 1)
    .map(|(rank, _)| rank)
}

/// The first host of a Slurm host list: `gpu[007-010,12],cpu1` -> `gpu007`.
pub fn first_host(list: &str) -> Option<String> {
    let first = list.split(',').next()?.trim();
    let (prefix, rest) = match first.split_once('[') {
        Some(split) => split,
        None => return (!first.is_empty()).then(|| first.to_string()),
    };
    let range = rest.split([',', ']']).next()?;
    let start = range.split('-').next()?;
    (!prefix.is_empty() || !start.is_empty()).then(|| format!("{prefix}{start}"))
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
        assert_eq!(
            (launch.rank, launch.world, launch.master.as_str(), launch.port, launch.source),
            (3, 8, "node1", 29500, "torchrun")
        );
        assert_eq!(launch.token, "topo/abc/8");

        let slurm = env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_NODELIST", "gpu[007-010]"),
            ("SLURM_JOB_ID", "77"),
        ]);
        let launch = detect(&slurm, None).unwrap().unwrap();
        assert_eq!(
            (launch.master.as_str(), launch.port, launch.source, launch.token.as_str()),
            ("gpu007", DEFAULT_PORT, "Slurm", "topo/77/4")
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

    #[test]
    fn one_process_per_gpu_or_per_node() {
        assert_eq!(local_rank(&env(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "8")])), Some(3));
        assert_eq!(local_rank(&env(&[("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")])), None);
        assert_eq!(local_rank(&env(&[("SLURM_LOCALID", "1"), ("SLURM_NTASKS_PER_NODE", "4")])), Some(1));
        assert_eq!(local_rank(&env(&[("SLURM_LOCALID", "0")])), None);
    }

    #[test]
    fn slurm_host_lists() {
        assert_eq!(first_host("gpu[007-010,12],cpu1").as_deref(), Some("gpu007"));
        assert_eq!(first_host("node12").as_deref(), Some("node12"));
        assert_eq!(first_host("a[1,3]").as_deref(), Some("a1"));
        assert_eq!(first_host(""), None);
    }
}
