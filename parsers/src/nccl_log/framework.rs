//! Lines of the framework around NCCL that carry NCCL's words: PyTorch's
//! `DistBackendError: NCCL error in: ...`, `ncclSystemError: ...`, `Last error:`
//! followed by NCCL's last WARN text, the watchdog's timeout and abort lines,
//! and the same texts wrapped by DeepSpeed, Horovod or Ray. Which texts count
//! is the message table's framework rows; this module only finds candidates
//! cheaply and reads the rank tag.

use super::catalogue::{CATALOGUE, Level};

/// What a line was.
#[derive(Debug, PartialEq, Eq)]
pub enum Found<'a> {
    /// `Last error:` alone: the next line holds NCCL's text.
    LastErrorNext,
    /// `Last error: <text>` on one line.
    LastError(&'a str),
    /// XLA's quote of NCCL's last WARN opened and not closed on this line: a
    /// paste hard-wrapped at the terminal's width; the text goes on below.
    QuoteOpen(&'a str),
    /// A framework error line the table lists.
    Error,
    /// A watchdog line, also read as a timeout by the message parser.
    Watchdog,
}

/// Words one of which every framework row's line contains: a cheap gate
/// before the table is consulted (these lines are rare, application output is not).
/// A row whose words stand alone in a line (the host's, the launcher's, the driver's)
/// needs one of its own here; a test reads such lines as their programs print them.
/// `Nccl` is PaddlePaddle's spelling (`Nccl error, unhandled cuda error`).
/// `libfabric:`, `libibverbs:` and `mlx5:` begin those libraries' own log
/// lines, which users paste beside NCCL's (`fi_getinfo:` the libfabric text without its prefix); `Test CUDA failure` is nccl-tests' own check, and
/// `CUDA error:` / `Cuda error` a framework's, whose CUDA error text can name the cause (the
/// fabric manager's `system not yet initialized`); `c10d`, `DistNetworkError` and the
/// store's words (`DistStoreError`, TCPStore's `TCP client failed`) are PyTorch's
/// rendezvous failing before NCCL starts (its `client socket` errors stand alone
/// behind `RuntimeError:` too); PyTorch's debug wrapper reports a `mismatch
/// between collectives`, and its driver check `The NVIDIA driver on your system
/// is too old`, in their own words. The rest say why a
/// rank died: the kernel's and the scheduler's out-of-memory kills, a launcher's
/// SIGKILL, the GPU driver's Xid reports, CUDA errors by their enum names.
/// `both on CUDA device` is init.cc's duplicate-GPU check repeated without its
/// `Duplicate GPU detected :` head, as wrappers and write-ups quote it.
/// Horovod's stall inspector and shutdown status, and vLLM's and SGLang's
/// failed peer-access test, speak of ranks and P2P in their own words; UCX
/// (under NCCL's UCX net plugin) prints `UCX  ERROR` in its own log format.
/// DeepEP's kernels report their timeouts in their own words (`DeepEP timeout
/// for dispatch receive`), as NCCL EP's do with NCCL's name.
const GATE: [&str; 49] = [
    "NCCL",
    "nccl",
    "Nccl",
    "atchdog",
    "ProcessGroup",
    "Last error",
    "DistBackend",
    "libfabric:",
    "fi_getinfo:",
    "libibverbs:",
    "mlx5:",
    "c10d",
    "DistNetworkError",
    "Test CUDA failure",
    "CUDA error:",
    "Cuda error",
    "Out of memory",
    "Memory cgroup",
    "oom_kill",
    "oom-kill",
    "Out Of Memory",
    "OOMKilled",
    "OutOfMemoryError",
    "SIGKILL",
    "signal 9",
    "return code = -9",
    "waiting for clients",
    "client socket",
    "TCP client failed",
    "DistStoreError",
    "NVIDIA driver on your system",
    "mismatch between collectives",
    "store based barrier",
    "RendezvousTimeoutError",
    "server socket",
    "Connection was likely closed",
    "Heartbeat monitor",
    "dump signal",
    "Xid",
    "fallen off the bus",
    "NVML",
    "CUDA_ERROR_",
    "cudaError",
    "both on CUDA device",
    "remainder of ranks",
    "Horovod has been shut down",
    "GPU P2P capability",
    "UCX",
    "DeepEP",
];

/// How a fatal signal is reported: libc's `Bus error (core dumped)`, UCX's and
/// PyTorch's `Caught signal 7 (Bus error: ...)`, gdb's `received signal SIGBUS`.
/// The backtrace that follows says whether NCCL was on the stack.
const SIGNALS: [&str; 4] = ["SIGBUS", "Bus error", "SIGSEGV", "Segmentation fault"];

/// Whether a line reports a fatal signal (see [`SIGNALS`]).
pub fn crash_signal(text: &str) -> bool {
    SIGNALS.iter().any(|s| text.contains(s))
}

/// Whether a backtrace frame is in NCCL (`ncclShmOpen(...)`, `libnccl.so.2`).
pub fn nccl_frame(text: &str) -> bool {
    text.contains("nccl") && !text.contains("NCCL INFO") && !text.contains("NCCL WARN")
}

/// XLA's words before the NCCL WARN text it quotes (xla/service/gpu nccl errors).
const XLA_LAST_WARNING: &str = "Last NCCL warning(error)";

pub fn recognise(text: &str) -> Option<Found<'_>> {
    if !GATE.iter().any(|g| text.contains(g)) {
        return None;
    }
    let trimmed = without_rank_tag(text.trim());
    // `Last error:` ends the framework's message; NCCL's text follows on the
    // same line (flattened pastes, Horovod) or on the next one (PyTorch).
    if let Some(at) = trimmed.find("Last error:") {
        let rest = without_rank_tag(trimmed[at + "Last error:".len()..].trim());
        return Some(if rest.is_empty() { Found::LastErrorNext } else { Found::LastError(rest) });
    }
    // XLA (JAX, TensorFlow) quotes NCCL's last WARN: `Last NCCL warning(error)
    // log entry (may be unrelated) 'Bootstrap : no socket interface found'`.
    if let Some(at) = trimmed.find(XLA_LAST_WARNING) {
        let rest = &trimmed[at + XLA_LAST_WARNING.len()..];
        if let Some(open) = rest.find('\'') {
            let quoted = &rest[open + 1..];
            match quoted.rfind('\'') {
                Some(close) if !quoted[..close].trim().is_empty() => {
                    return Some(Found::LastError(quoted[..close].trim()));
                }
                Some(_) => {}
                None => return Some(Found::QuoteOpen(quoted.trim())),
            }
        }
    }
    let row = CATALOGUE.classify(Level::Framework, trimmed)?;
    let timeout = row.row.pattern.contains("atchdog") || row.row.pattern.contains("collective operation timeout");
    Some(if timeout { Found::Watchdog } else { Found::Error })
}

/// The framework's own error before the NCCL text it quotes on the same line
/// (XLA's `NCCL operation ncclCommInitRank(...) failed: internal error ...
/// Last NCCL warning(error) log entry ...`, a flattened `... unhandled system
/// error ... Last error: ...`): the result NCCL returned, a fact of its own
/// beside the quoted WARN, when the table lists it.
pub fn error_before_quote(text: &str) -> Option<&str> {
    let trimmed = without_rank_tag(text.trim());
    let at = trimmed.find("Last error:").or_else(|| trimmed.find(XLA_LAST_WARNING))?;
    let head = trimmed[..at].trim_end();
    (!head.is_empty() && CATALOGUE.classify(Level::Framework, head).is_some()).then_some(head)
}

/// The rank a framework line names: `[rank3]:`, `[Rank 3]`, `rank 3` in
/// `... on rank 3`, or Ray's `rank=3`.
pub fn rank_in(text: &str) -> Option<u32> {
    for key in ["[rank", "[Rank ", "Rank ", "rank=", " rank "] {
        if let Some(at) = text.find(key) {
            let digits: String = text[at + key.len()..].chars().take_while(char::is_ascii_digit).collect();
            if let Ok(rank) = digits.parse() {
                return Some(rank);
            }
        }
    }
    None
}

/// Exceptions that report another process's failure, not their own: a
/// launcher's summary of a child that failed, a signal it sent, a remote
/// worker's error re-raised by Ray.
const ECHOED_EXCEPTIONS: [&str; 7] = [
    "ChildFailedError",
    "ProcessRaisedException",
    "ProcessExitedException",
    "SignalException",
    "CalledProcessError",
    "RayTaskError",
    "RayActorError",
];

/// Words of an exception's text that point at the machine, the network or
/// the rendezvous rather than the program's own logic: such an error may be
/// the NCCL failure's cause or its echo, and the message table reads those.
const NOT_THE_PROGRAMS: [&str; 16] = [
    "CUDA",
    "cuda",
    "GPU",
    "out of memory",
    "driver",
    "NVML",
    "ocket",
    "onnect",
    "imed out",
    "imeout",
    "network",
    "address",
    "rendezvous",
    "Store",
    "store",
    "errno",
];

/// Exception types of the operating system's errors (connection refused,
/// reset, broken pipe, a timeout): the host's or the network's, not the program's.
const SYSTEM_EXCEPTIONS: [&str; 4] = ["OSError", "ConnectionError", "BrokenPipeError", "TimeoutError"];

/// The application's own exception line (`RuntimeError: Expected 2D tensor
/// in N-S, found 3 instead.`, `[rank3]: ValueError: ...`), without its
/// launcher tag: a Python exception type (dotted names allowed) ending in
/// `Error` or `Exception`, then `:` or the line's end, with no word of NCCL,
/// CUDA, the network or the system in it. A rank that raises one exits, and
/// a bare NCCL error after it on its peers is the echo.
pub fn application_error(text: &str) -> Option<&str> {
    let line = without_rank_tag(text.trim());
    let name_len = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(line.len());
    let (name, rest) = line.split_at(name_len);
    let short = name.rsplit('.').next().unwrap_or(name);
    // A bare `Error:` or `Exception:` is a logger's word, not a type.
    let typed = ["Error", "Exception"].iter().any(|end| short.len() > end.len() && short.ends_with(end))
        && name.len() <= 80
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let ends = rest.is_empty() || rest.starts_with(": ") || rest == ":";
    if !typed || !ends {
        return None;
    }
    let echoed = ECHOED_EXCEPTIONS.contains(&short) || SYSTEM_EXCEPTIONS.iter().any(|s| short.ends_with(s));
    let foreign = ["NCCL", "nccl", "Nccl"].iter().chain(&NOT_THE_PROGRAMS).any(|w| line.contains(w));
    (!echoed && !foreign).then_some(line)
}

/// The NCCL version a framework error names (`..., NCCL version 2.20.5`).
pub fn version_in(text: &str) -> Option<&str> {
    let at = text.find("NCCL version ")? + "NCCL version ".len();
    let version = text[at..].split(|c: char| c.is_whitespace() || c == ',' || c == ')').next()?;
    let version = version.trim_end_matches('.');
    (version.starts_with(|c: char| c.is_ascii_digit()) && version.contains('.')).then_some(version)
}

/// The text without a leading launcher tag (`[rank3]:`, `[default0]:`,
/// `[1,0]<stderr>:`, `3: `), so that the same error from many ranks is one entry.
pub fn without_rank_tag(text: &str) -> &str {
    let mut rest = text.trim_start();
    // Launchers nest a few tags at most (Ray's, then torchrun's `[rank3]:`);
    // a line of thousands of them is not a tagged line, and the bound keeps
    // the work linear in the line.
    for _ in 0..MAX_TAGS {
        let before = rest;
        if rest.starts_with('[')
            && let Some(end) = rest.find("]:").or_else(|| rest.find(">:"))
            && end < 40
        {
            rest = rest[end + 2..].trim_start();
        }
        // Ray's `(RayTrainWorker pid=615, ip=10.0.0.1) `, `(pid=909597) `.
        rest = super::prefix::after_ray_tag(rest).unwrap_or(rest);
        let digits = rest.bytes().take(7).take_while(u8::is_ascii_digit).count();
        if (1..=6).contains(&digits)
            && let Some(tail) = rest[digits..].strip_prefix(": ")
        {
            rest = tail.trim_start();
        }
        if rest == before {
            return rest;
        }
    }
    rest
}

/// The most launcher tags read before a line's text (see [`without_rank_tag`]).
const MAX_TAGS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    /// PyTorch 1.7-1.8's timeout raised by the waiting call (NCCL_BLOCKING_WAIT)
    /// is the watchdog's report in its older words: read as a timeout, with its
    /// rank, operation and times; 1.8-1.10's note that another rank aborted its
    /// communicators is that abort.
    #[test]
    fn older_pytorch_timeout_and_abort_words() {
        let old = "RuntimeError: [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, TensorShape=[1], Timeout(ms)=1800000) ran for 1800102 milliseconds before timing out.";
        assert_eq!(recognise(old), Some(Found::Watchdog));
        let Some(super::super::message::Event::WatchdogTimeout { rank, op, timeout_ms, ran_ms, seq, .. }) =
            super::super::message::watchdog(old)
        else {
            panic!("not a timeout: {old}");
        };
        assert_eq!((rank, op, timeout_ms, ran_ms, seq), (Some(0), "BROADCAST", Some(1_800_000), Some(1_800_102), None));
        let aborted = "[E ProcessGroupNCCL.cpp:737] [Rank 3] Found key in store: NCCLABORTEDCOMM:3a0c, from rank: 1. This means that rank has aborted its NCCL communicators previously and is not in a healthy state.";
        assert_eq!(recognise(aborted), Some(Found::Error));
        assert_eq!(CATALOGUE.classify(Level::Framework, aborted).map(|m| m.row.class), Some("comm-aborted"));
    }

    /// PyTorch's store errors stand behind a bare `RuntimeError:` too, and its
    /// debug wrapper and driver check name no NCCL: all pass the gate.
    #[test]
    fn store_and_debug_wrapper_errors_pass_the_gate() {
        for line in [
            "RuntimeError: The client socket has timed out after 1800s while trying to connect to (10.0.0.1, 29500).",
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: x, but Rank 1 is running collective: y.",
            "[E TCPStore.cpp:370] TCP client failed to connect/validate to host 10.0.0.1:29500 - retrying (try=0): Connection refused",
            "torch.distributed.DistStoreError: Socket Timeout",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
        ] {
            assert_eq!(recognise(line), Some(Found::Error), "{line}");
        }
    }

    #[test]
    fn why_a_rank_died_in_the_words_of_host_launcher_and_driver() {
        // As these programs print them (Slurm's and torchelastic's lines as seen in public
        // logs; the kernel's, Open MPI's, the driver's and PyTorch's from their sources).
        let lines = [
            (
                "[Tue Nov 25 10:00:00 2026] Out of memory: Killed process 12345 (python) total-vm:1kB",
                "resource-exhausted",
            ),
            (
                "[2026-09-14T17:14:38.784] error: Detected 1 oom_kill event in StepId=22035606.1. Some of the step tasks have been OOM Killed.",
                "resource-exhausted",
            ),
            ("srun: error: ana: task 0: Out Of Memory", "resource-exhausted"),
            ("  traceback : Signal 9 (SIGKILL) received by PID 56213", "peer-lost"),
            ("mpirun noticed that process rank 1 with PID 0 on node node2 exited on signal 9 (Killed).", "peer-lost"),
            (
                "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
                "bootstrap-connect-failure",
            ),
            (
                "RuntimeError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote side exit?",
                "peer-lost",
            ),
            ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", "cuda-error"),
            (
                "NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python, NVLink: fatal error detected on link 11(0x0, 0x0)",
                "nvlink-fabric-failure",
            ),
            ("Failed to initialize NVML: Driver/library version mismatch", "version-mismatch"),
            (
                "XlaRuntimeError: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                "cuda-error",
            ),
            ("ImportError: /opt/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister", "version-mismatch"),
            (
                "[PG ID 0 PG GUID 0(default_pg) Rank 1] Heartbeat monitor timed out! Process will be terminated",
                "collective-timeout",
            ),
        ];
        for (line, class) in lines {
            assert!(recognise(line).is_some(), "not recognised: {line}");
            let row = CATALOGUE.classify(super::super::catalogue::Level::Framework, without_rank_tag(line));
            assert_eq!(row.map(|m| m.row.class), Some(class), "{line}");
        }
        // Words that only look alike stay out.
        assert_eq!(recognise("loaded 9 (SIGKILL-safe) handlers; out of memory budget: 0"), None);
    }

    /// Horovod's stall warning and shutdown, vLLM's failed P2P test and a UCX
    /// error, as their sources print them (horovod/common/stall_inspector.cc
    /// and common.h; vllm custom_all_reduce.py; the UCX line of corpus 1486,
    /// ROCm/rccl#1261); vLLM's note that it skips its own
    /// all-reduce on more than two PCIe GPUs is no fault and stays out.
    #[test]
    fn horovod_stall_and_framework_p2p_test_words() {
        let lines = [
            (
                "[1,0]<stderr>:[2021-03-01 10:00:00.000000: W horovod/common/stall_inspector.cc:107] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. ",
                "collective-mismatch",
            ),
            (
                "tensorflow.python.framework.errors_impl.UnknownError: Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished execution.",
                "peer-lost",
            ),
            (
                "(VllmWorkerProcess pid=180) WARNING 03-19 08:09:03 custom_all_reduce.py:134] Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
                "p2p-disabled",
            ),
            (
                "[1721186746.658016] [node02:10366:1]          rcache.c:985  UCX  ERROR failed to insert region 0x1479900ba210 [0x0..0x0]: Invalid parameter",
                "net-plugin-failure",
            ),
        ];
        for (line, class) in lines {
            assert_eq!(recognise(line), Some(Found::Error), "{line}");
            let row = CATALOGUE.classify(Level::Framework, without_rank_tag(line));
            assert_eq!(row.map(|m| m.row.class), Some(class), "{line}");
        }
        let normal = "(VllmWorkerProcess pid=180) WARNING 03-19 08:09:03 custom_all_reduce.py:134] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.";
        assert_eq!(recognise(normal), None);
    }

    /// The program's own exceptions, as Python prints them, against the
    /// lines that only look alike: NCCL's and CUDA's words, the system's and
    /// the network's errors, a launcher's echo of a failed child.
    #[test]
    fn application_errors_are_the_programs_own() {
        for (line, kept) in [
            // corpus 1980 (mlcommons/submissions_algorithms, torchrun's rank tag)
            ("[rank3]: RuntimeError: Expected 2D tensor in N-S, found 3 instead.", true),
            ("ValueError: too many values to unpack (expected 2)", true),
            ("UnboundLocalError: local variable 'model' referenced before assignment", true),
            ("omegaconf.errors.ConfigAttributeError: Missing key lr", true),
            ("AssertionError", true),
            ("KeyError: 'labels'", true),
            ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", false),
            ("torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error", false),
            ("ConnectionResetError: [Errno 104] Connection reset by peer", false),
            ("TimeoutError: timed out", false),
            ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", false),
            ("RuntimeError: The server socket has failed to listen on any local network address.", false),
            ("Error: loss is nan", false),
            ("RuntimeErrorCount: 3", false),
            ("  File \"train.py\", line 3, in <module>", false),
        ] {
            assert_eq!(application_error(line).is_some(), kept, "{line}");
        }
        assert_eq!(
            application_error("[rank3]: RuntimeError: Expected 2D tensor in N-S, found 3 instead."),
            Some("RuntimeError: Expected 2D tensor in N-S, found 3 instead.")
        );
    }

    #[test]
    fn launcher_tags_are_read_a_few_deep() {
        assert_eq!(without_rank_tag("(RayWorkerWrapper pid=7) [rank1]: 3: ncclInternalError"), "ncclInternalError");
        // Hostile input: thousands of tags are not a tagged line (the work
        // was quadratic in the line before the bound: 11 s for 48 MB).
        let many = "(pid=1) ".repeat(2000) + "x";
        assert_eq!(without_rank_tag(&many).len(), many.len() - MAX_TAGS * "(pid=1) ".len());
        assert_eq!(without_rank_tag("1234567: not a tag"), "1234567: not a tag");
    }

    #[test]
    fn xla_quotes_the_last_warning() {
        // marin-community/marin#7018 (JAX on Kubernetes), as XLA printed it.
        let line = "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'";
        assert_eq!(recognise(line), Some(Found::LastError("Bootstrap : no socket interface found")));
        let longer = "NCCL operation ncclCommInitRank(...) failed: unhandled system error. Last NCCL warning(error) log \
                      entry (may be unrelated) 'Call to connect returned Connection refused'.";
        assert_eq!(recognise(longer), Some(Found::LastError("Call to connect returned Connection refused")));
        // The result XLA reports is a fact of its own beside the quote.
        assert_eq!(
            error_before_quote(longer),
            Some("NCCL operation ncclCommInitRank(...) failed: unhandled system error.")
        );
        // Wrapped by the terminal after the quote opened (corpus 900): the rest is below.
        let wrapped = "NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)  'Error ";
        assert_eq!(recognise(wrapped), Some(Found::QuoteOpen("Error")));
        // An empty quote says nothing: the line is read by the table alone.
        let empty = "NCCL operation ncclGroupEnd() failed: internal error. Last NCCL warning(error) log entry ''";
        assert!(matches!(recognise(empty), Some(Found::Error)), "{:?}", recognise(empty));
    }

    #[test]
    fn pytorch_errors_and_last_error() {
        let line = "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5";
        assert_eq!(recognise(line), Some(Found::Error));
        assert_eq!(rank_in(line), Some(1));
        assert!(without_rank_tag(line).starts_with("torch.distributed"));
        assert_eq!(recognise("[rank1]: Last error:"), Some(Found::LastErrorNext));
        assert_eq!(
            recognise("Last error: socketPollConnect: Connect to 10.0.0.2<3333> failed : Connection refused"),
            Some(Found::LastError("socketPollConnect: Connect to 10.0.0.2<3333> failed : Connection refused"))
        );
        assert_eq!(recognise("loss 0.25 at step 100"), None);
        assert_eq!(recognise("INFO: using NCCL backend"), None);
        assert_eq!(without_rank_tag("3: [1,0]<stderr>: ncclInternalError"), "ncclInternalError");
        assert_eq!(version_in(line), Some("2.20.5"));
        // Flattened: the framework's words and NCCL's last WARN on one line.
        let flat = "ncclRemoteError: A call failed possibly due to a network error. Last error: NET/IB : Got completion from peer 1.2.3.4<5> with error 12";
        assert_eq!(
            recognise(flat),
            Some(Found::LastError("NET/IB : Got completion from peer 1.2.3.4<5> with error 12"))
        );
        let tagged = "(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] Last error:";
        assert_eq!(recognise(tagged), Some(Found::LastErrorNext));
    }
}
