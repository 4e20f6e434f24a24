//! NCCL, opened by path. cudarc's NCCL loader looks for `libnccl.so` and a few
//! `libnccl.so.N` but never `libnccl.so.2`, the only name pip's
//! `nvidia-nccl-cu12` wheels and distro runtime packages ship, and it panics
//! when nothing matches; so `topo` opens the file it found itself and binds
//! the calls it uses. Results stay plain integers (never a Rust enum a newer
//! NCCL could overflow), and every failure reads as NCCL's own words.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;

use super::LiveError;
use super::cuda::{Gpu, Stream};

/// `ncclComm_t`.
pub type RawComm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes rank 0 makes and every rank must receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId(pub [u8; 128]);

/// `ncclFloat32`, the one element type `topo` moves.
const NCCL_FLOAT32: c_int = 7;
/// `ncclSum`.
const NCCL_SUM: c_int = 0;

type Ret = c_int;
type Buffer = *const c_void;
type BufferMut = *mut c_void;
type CudaStream = *mut c_void;

/// The bound calls; the library stays open while they exist.
pub struct Nccl {
    _library: libloading::Library,
    get_version: unsafe extern "C" fn(*mut c_int) -> Ret,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> Ret,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, UniqueId, c_int) -> Ret,
    comm_destroy: unsafe extern "C" fn(RawComm) -> Ret,
    comm_abort: unsafe extern "C" fn(RawComm) -> Ret,
    get_error_string: unsafe extern "C" fn(Ret) -> *const c_char,
    group_start: unsafe extern "C" fn() -> Ret,
    group_end: unsafe extern "C" fn() -> Ret,
    all_reduce: unsafe extern "C" fn(Buffer, BufferMut, usize, c_int, c_int, RawComm, CudaStream) -> Ret,
    all_gather: unsafe extern "C" fn(Buffer, BufferMut, usize, c_int, RawComm, CudaStream) -> Ret,
    reduce_scatter: unsafe extern "C" fn(Buffer, BufferMut, usize, c_int, c_int, RawComm, CudaStream) -> Ret,
    broadcast: unsafe extern "C" fn(Buffer, BufferMut, usize, c_int, c_int, RawComm, CudaStream) -> Ret,
    reduce: unsafe extern "C" fn(Buffer, BufferMut, usize, c_int, c_int, c_int, RawComm, CudaStream) -> Ret,
    send: unsafe extern "C" fn(Buffer, usize, c_int, c_int, RawComm, CudaStream) -> Ret,
    recv: unsafe extern "C" fn(BufferMut, usize, c_int, c_int, RawComm, CudaStream) -> Ret,
    comm_count: unsafe extern "C" fn(RawComm, *mut c_int) -> Ret,
    comm_user_rank: unsafe extern "C" fn(RawComm, *mut c_int) -> Ret,
    /// `ncclGetLastError` (NCCL 2.13 and later): NCCL's own words for the last failure.
    get_last_error: Option<unsafe extern "C" fn(RawComm) -> *const c_char>,
    /// `ncclCommGetAsyncError`: a communicator's error from work in flight (a dead peer).
    comm_get_async_error: Option<unsafe extern "C" fn(RawComm, *mut Ret) -> Ret>,
    /// `ncclCommSplit` (NCCL 2.18 and later); `None` on older NCCL.
    comm_split: Option<unsafe extern "C" fn(RawComm, c_int, c_int, *mut RawComm, *mut c_void) -> Ret>,
}

macro_rules! bind {
    ($library:expr, $path:expr, $name:literal) => {{
        // SAFETY: the type written at the field is NCCL's documented signature.
        let symbol = unsafe { $library.get(concat!($name, "\0").as_bytes()) }.map_err(|e| LiveError::Library {
            library: $path.display().to_string(),
            message: format!("no symbol {}: {e}", $name),
        })?;
        *symbol
    }};
}

impl Nccl {
    pub fn open(path: &Path) -> Result<Nccl, LiveError> {
        // SAFETY: loading NCCL runs its constructors, which only set up its own state.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| LiveError::Library { library: path.display().to_string(), message: e.to_string() })?;
        Ok(Nccl {
            get_version: bind!(library, path, "ncclGetVersion"),
            get_unique_id: bind!(library, path, "ncclGetUniqueId"),
            comm_init_rank: bind!(library, path, "ncclCommInitRank"),
            comm_destroy: bind!(library, path, "ncclCommDestroy"),
            comm_abort: bind!(library, path, "ncclCommAbort"),
            get_error_string: bind!(library, path, "ncclGetErrorString"),
            group_start: bind!(library, path, "ncclGroupStart"),
            group_end: bind!(library, path, "ncclGroupEnd"),
            all_reduce: bind!(library, path, "ncclAllReduce"),
            all_gather: bind!(library, path, "ncclAllGather"),
            reduce_scatter: bind!(library, path, "ncclReduceScatter"),
            broadcast: bind!(library, path, "ncclBroadcast"),
            reduce: bind!(library, path, "ncclReduce"),
            send: bind!(library, path, "ncclSend"),
            recv: bind!(library, path, "ncclRecv"),
            comm_count: bind!(library, path, "ncclCommCount"),
            comm_user_rank: bind!(library, path, "ncclCommUserRank"),
            // SAFETY: NCCL's documented signatures; absent on old versions.
            get_last_error: unsafe { library.get(b"ncclGetLastError\0") }.ok().map(|symbol| *symbol),
            // SAFETY: as above.
            comm_get_async_error: unsafe { library.get(b"ncclCommGetAsyncError\0") }.ok().map(|symbol| *symbol),
            // SAFETY: NCCL's documented signature; absent before 2.18.
            comm_split: unsafe { library.get(b"ncclCommSplit\0") }.ok().map(|symbol| *symbol),
            _library: library,
        })
    }

    fn check(&self, call: &'static str, code: Ret) -> Result<(), LiveError> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for any code.
        let text = unsafe { (self.get_error_string)(code) };
        let text = if text.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        let last = self.last_error();
        let message = if last.is_empty() { text } else { format!("{text}; NCCL: {last}") };
        Err(LiveError::Nccl { call, code, message })
    }

    /// `ncclGetLastError`: what NCCL itself said about its last failure
    /// (which peer, which transport), control characters removed; empty when
    /// this NCCL cannot say.
    pub fn last_error(&self) -> String {
        let Some(get) = self.get_last_error else { return String::new() };
        // SAFETY: NCCL returns a NUL-terminated string it owns (or null); no communicator needed.
        let text = unsafe { get(std::ptr::null_mut()) };
        if text.is_null() {
            return String::new();
        }
        // SAFETY: non-null and NUL-terminated.
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        text.chars().filter(|c| !c.is_control()).take(1024).collect()
    }

    /// `2.21.5`.
    pub fn version(&self) -> Result<String, LiveError> {
        let mut code = 0;
        // SAFETY: writes one int.
        self.check("ncclGetVersion", unsafe { (self.get_version)(&mut code) })?;
        // 2.9 and later encode major*10000 + minor*100 + patch; before, major*1000 + minor*100 + patch.
        let (major, rest) = if code >= 10000 { (code / 10000, code % 10000) } else { (code / 1000, code % 1000) };
        Ok(format!("{major}.{}.{}", rest / 100, rest % 100))
    }

    pub fn unique_id(&self) -> Result<UniqueId, LiveError> {
        let mut id = UniqueId([0; 128]);
        // SAFETY: writes 128 bytes.
        self.check("ncclGetUniqueId", unsafe { (self.get_unique_id)(&mut id) })?;
        Ok(id)
    }

    /// Joins this process's GPUs, `(NCCL rank, GPU)`, into a `world`-rank
    /// communicator, in one group as NCCL requires for several GPUs per process.
    pub fn init_ranks<'n>(
        &'n self,
        id: &UniqueId,
        world: u32,
        ranks: &[(u32, &Gpu)],
    ) -> Result<Vec<Comm<'n>>, LiveError> {
        let mut comms = vec![std::ptr::null_mut(); ranks.len()];
        self.group(|| {
            for ((rank, gpu), comm) in ranks.iter().zip(comms.iter_mut()) {
                gpu.bind()?;
                // SAFETY: `comm` is written on success; id is 128 bytes.
                let code = unsafe { (self.comm_init_rank)(comm, world as c_int, *id, *rank as c_int) };
                self.check("ncclCommInitRank", code)?;
            }
            Ok(())
        })?;
        Ok(comms.into_iter().zip(ranks).map(|(raw, (rank, _))| Comm { nccl: self, raw, rank: *rank, world }).collect())
    }

    /// Runs `enqueue` between `ncclGroupStart` and `ncclGroupEnd`.
    pub fn group(&self, enqueue: impl FnOnce() -> Result<(), LiveError>) -> Result<(), LiveError> {
        // SAFETY: no arguments.
        self.check("ncclGroupStart", unsafe { (self.group_start)() })?;
        let inside = enqueue();
        // SAFETY: closes the group opened above, even after a failed call.
        let end = self.check("ncclGroupEnd", unsafe { (self.group_end)() });
        inside.and(end)
    }
}

/// One rank's communicator, destroyed (or aborted, if destroying fails) on drop.
pub struct Comm<'n> {
    nccl: &'n Nccl,
    raw: RawComm,
    pub rank: u32,
    pub world: u32,
}

/// The operation a rank enqueues; buffers are device pointers of `f32`s.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    AllReduce { send: u64, recv: u64, count: usize },
    AllGather { send: u64, recv: u64, count: usize },
    ReduceScatter { send: u64, recv: u64, count: usize },
    Broadcast { send: u64, recv: u64, count: usize, root: u32 },
    Reduce { send: u64, recv: u64, count: usize, root: u32 },
    Send { send: u64, count: usize, peer: u32 },
    Recv { recv: u64, count: usize, peer: u32 },
}

impl<'n> Comm<'n> {
    /// `ncclCommSplit`: every rank of this communicator calls it; ranks with
    /// the same `color` form a new one, ordered by `key`; `None` as color
    /// (`NCCL_SPLIT_NOCOLOR`) joins none and gets `None` back.
    pub fn split(&self, color: Option<u32>, key: u32) -> Result<Option<Comm<'n>>, LiveError> {
        let Some(split) = self.nccl.comm_split else {
            return Err(LiveError::Usage("this NCCL has no ncclCommSplit (needs NCCL 2.18 or later)".into()));
        };
        let mut raw: RawComm = std::ptr::null_mut();
        let color = color.map_or(-1, |c| c as c_int);
        // SAFETY: a live communicator; `raw` is written on success; no config.
        let code = unsafe { split(self.raw, color, key as c_int, &mut raw, std::ptr::null_mut()) };
        self.nccl.check("ncclCommSplit", code)?;
        if raw.is_null() {
            return Ok(None);
        }
        let mut size = 0;
        let mut rank = 0;
        // SAFETY: a communicator NCCL just made.
        unsafe {
            self.nccl.check("ncclCommCount", (self.nccl.comm_count)(raw, &mut size))?;
            self.nccl.check("ncclCommUserRank", (self.nccl.comm_user_rank)(raw, &mut rank))?;
        }
        Ok(Some(Comm { nccl: self.nccl, raw, rank: rank as u32, world: size as u32 }))
    }

    /// Enqueues `op` on `stream`. Inside a group it only queues.
    pub fn enqueue(&self, op: Op, stream: &Stream) -> Result<(), LiveError> {
        let n = self.nccl;
        let s = stream.raw().cast::<c_void>();
        let c = self.raw;
        let buffer = |p: u64| p as usize as Buffer;
        let buffer_mut = |p: u64| p as usize as BufferMut;
        // SAFETY: pointers are device allocations of at least the sizes the
        // caller computed for `op`; the stream belongs to this rank's GPU.
        let (call, code) = unsafe {
            match op {
                Op::AllReduce { send, recv, count } => (
                    "ncclAllReduce",
                    (n.all_reduce)(buffer(send), buffer_mut(recv), count, NCCL_FLOAT32, NCCL_SUM, c, s),
                ),
                Op::AllGather { send, recv, count } => {
                    ("ncclAllGather", (n.all_gather)(buffer(send), buffer_mut(recv), count, NCCL_FLOAT32, c, s))
                }
                Op::ReduceScatter { send, recv, count } => (
                    "ncclReduceScatter",
                    (n.reduce_scatter)(buffer(send), buffer_mut(recv), count, NCCL_FLOAT32, NCCL_SUM, c, s),
                ),
                Op::Broadcast { send, recv, count, root } => (
                    "ncclBroadcast",
                    (n.broadcast)(buffer(send), buffer_mut(recv), count, NCCL_FLOAT32, root as c_int, c, s),
                ),
                Op::Reduce { send, recv, count, root } => (
                    "ncclReduce",
                    (n.reduce)(buffer(send), buffer_mut(recv), count, NCCL_FLOAT32, NCCL_SUM, root as c_int, c, s),
                ),
                Op::Send { send, count, peer } => {
                    ("ncclSend", (n.send)(buffer(send), count, NCCL_FLOAT32, peer as c_int, c, s))
                }
                Op::Recv { recv, count, peer } => {
                    ("ncclRecv", (n.recv)(buffer_mut(recv), count, NCCL_FLOAT32, peer as c_int, c, s))
                }
            }
        };
        n.check(call, code)
    }
}

impl Comm<'_> {
    /// `ncclCommGetAsyncError`: `Some(code)` when work on this communicator
    /// failed in flight (a peer died, a network error); `None` when all is
    /// well or this NCCL cannot say.
    pub fn async_error(&self) -> Option<i32> {
        let get = self.nccl.comm_get_async_error?;
        let mut code: Ret = 0;
        // SAFETY: a live communicator; writes one int.
        let asked = unsafe { get(self.raw, &mut code) };
        // ncclInProgress (7) is a non-blocking init still under way, not an error.
        (asked == 0 && code != 0 && code != 7).then_some(code)
    }
}

/// Destroyed when healthy; aborted when its work failed, since
/// `ncclCommDestroy` waits for kernels that a dead peer keeps from finishing
/// and would hang the process.
impl Drop for Comm<'_> {
    fn drop(&mut self) {
        let broken = self.async_error().is_some() || std::thread::panicking();
        // SAFETY: made by ncclCommInitRank or ncclCommSplit; dropped once.
        unsafe {
            if broken || (self.nccl.comm_destroy)(self.raw) != 0 {
                let _ = (self.nccl.comm_abort)(self.raw);
            }
        }
    }
}
