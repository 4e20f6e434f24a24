//! The CUDA driver calls the copy measurements need, through cudarc's thin
//! `result` layer: primary contexts, streams, events, pinned host memory and
//! device memory, each owned by a type that frees it. The safe layer is not
//! used on purpose: its per-copy event tracking would sit inside the timed
//! loop, and this set of calls exists in every driver from R535 on.

use std::ffi::c_void;

use cudarc::driver::{result, sys};

use super::LiveError;

/// A driver call's failure in words: `cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
pub(crate) fn driver_error(call: &'static str, error: result::DriverError) -> LiveError {
    let name =
        error.error_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", error.0));
    let text = error.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    LiveError::Cuda { call, message: if text.is_empty() { name } else { format!("{name} ({text})") } }
}

trait Check<T> {
    fn during(self, call: &'static str) -> Result<T, LiveError>;
}

impl<T> Check<T> for Result<T, result::DriverError> {
    fn during(self, call: &'static str) -> Result<T, LiveError> {
        self.map_err(|e| driver_error(call, e))
    }
}

/// Whether the driver library can be opened at all; cudarc panics on the
/// first call when it cannot, so this is asked first.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the candidate names; nothing is called.
    unsafe { sys::is_culib_present() }
}

/// `cuInit` and the driver's CUDA version (`12.4`).
pub fn init() -> Result<String, LiveError> {
    result::init().during("cuInit")?;
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result().during("cuDriverGetVersion")?;
    Ok(format!("{}.{}", version / 1000, version % 1000 / 10))
}

/// One GPU with its primary context retained for the life of the value.
pub struct Gpu {
    pub ordinal: u32,
    pub name: String,
    /// `0000:17:00.0`.
    pub bus_id: String,
    device: sys::CUdevice,
    context: sys::CUcontext,
}

impl Gpu {
    pub fn count() -> Result<u32, LiveError> {
        Ok(result::device::get_count().during("cuDeviceGetCount")?.max(0) as u32)
    }

    /// Name and bus ID (`0000:17:00.0`) of `ordinal`, without a context, so a
    /// GPU that cannot be opened is still named.
    pub fn describe(ordinal: u32) -> Result<(String, String), LiveError> {
        let device = result::device::get(ordinal as i32).during("cuDeviceGet")?;
        Self::identify(device)
    }

    fn identify(device: sys::CUdevice) -> Result<(String, String), LiveError> {
        let name = result::device::get_name(device).during("cuDeviceGetName")?;
        let attribute = |attribute| {
            // SAFETY: a plain query of a valid device.
            unsafe { result::device::get_attribute(device, attribute) }.during("cuDeviceGetAttribute")
        };
        use sys::CUdevice_attribute::*;
        let bus_id = format!(
            "{:04x}:{:02x}:{:02x}.0",
            attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        Ok((name, bus_id))
    }

    /// Retains the GPU's primary context. Fails per GPU: another process
    /// holding it in exclusive-process mode (CUDA_ERROR_DEVICE_UNAVAILABLE),
    /// an uncorrectable ECC error (CUDA_ERROR_ECC_UNCORRECTABLE).
    pub fn open(ordinal: u32) -> Result<Gpu, LiveError> {
        let device = result::device::get(ordinal as i32).during("cuDeviceGet")?;
        let (name, bus_id) = Self::identify(device)?;
        // SAFETY: the device is valid; released in Drop.
        let context = unsafe { result::primary_ctx::retain(device) }.during("cuDevicePrimaryCtxRetain")?;
        Ok(Gpu { ordinal, name, bus_id, device, context })
    }

    /// Makes this GPU's context current on the calling thread; every call that
    /// allocates or enqueues does this first.
    pub fn bind(&self) -> Result<(), LiveError> {
        // SAFETY: the context is retained while self lives.
        unsafe { result::ctx::set_current(self.context) }.during("cuCtxSetCurrent")
    }

    /// Whether this GPU can read and write `peer`'s memory directly.
    pub fn can_access(&self, peer: &Gpu) -> Result<bool, LiveError> {
        let mut can = 0;
        // SAFETY: writes one int; both devices are valid.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.device, peer.device) }
            .result()
            .during("cuDeviceCanAccessPeer")?;
        Ok(can != 0)
    }

    /// Turns off this context's access to `peer` again: a context may have only
    /// eight peers on at once on boxes without NVSwitch (the ninth
    /// `cuCtxEnablePeerAccess` answers CUDA_ERROR_TOO_MANY_PEERS), so each pair
    /// gives its access back when measured. Not on is fine.
    pub fn disable_peer_access(&self, peer: &Gpu) -> Result<(), LiveError> {
        self.bind()?;
        // SAFETY: both contexts are retained.
        match unsafe { sys::cuCtxDisablePeerAccess(peer.context) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => Ok(()),
            other => Err(driver_error("cuCtxDisablePeerAccess", result::DriverError(other))),
        }
    }

    /// Turns on this context's access to `peer` (process-local; nothing on the
    /// machine changes). Already on is fine.
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<(), LiveError> {
        self.bind()?;
        // SAFETY: both contexts are retained.
        match unsafe { sys::cuCtxEnablePeerAccess(peer.context, 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            other => Err(driver_error("cuCtxEnablePeerAccess", result::DriverError(other))),
        }
    }

    pub fn stream(&self) -> Result<Stream, LiveError> {
        self.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking).during("cuStreamCreate")?;
        Ok(Stream { raw, context: self.context })
    }

    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, LiveError> {
        self.bind()?;
        // SAFETY: plain allocation; freed in Drop with this context current.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }.during("cuMemAlloc")?;
        Ok(DeviceBuffer { ptr, bytes, context: self.context })
    }

    pub fn context(&self) -> sys::CUcontext {
        self.context
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: retained in `open`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

/// A non-blocking stream of one GPU.
pub struct Stream {
    pub(crate) raw: sys::CUstream,
    context: sys::CUcontext,
}

impl Stream {
    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Makes the stream's context current: every call that enqueues on the
    /// stream does this first, since the driver takes the current context,
    /// not the stream's, for most of them (and fails on a mismatch).
    pub fn bind(&self) -> Result<(), LiveError> {
        // SAFETY: the context is retained by the Gpu that outlives its streams.
        unsafe { result::ctx::set_current(self.context) }.during("cuCtxSetCurrent")
    }

    pub fn synchronize(&self) -> Result<(), LiveError> {
        // SAFETY: the stream lives while self does.
        unsafe { result::stream::synchronize(self.raw) }.during("cuStreamSynchronize")
    }

    fn event(&self) -> Result<Event, LiveError> {
        self.bind()?;
        let raw = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).during("cuEventCreate")?;
        Ok(Event { raw })
    }

    fn record(&self) -> Result<Event, LiveError> {
        let event = self.event()?;
        // SAFETY: both live.
        unsafe { result::event::record(event.raw, self.raw) }.during("cuEventRecord")?;
        Ok(event)
    }

    fn wait(&self, event: &Event) -> Result<(), LiveError> {
        self.bind()?;
        // SAFETY: both live.
        unsafe { result::stream::wait_event(self.raw, event.raw, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .during("cuStreamWaitEvent")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created in Gpu::stream; the context is still retained.
        unsafe {
            let _ = result::ctx::set_current(self.context);
            let _ = result::stream::destroy(self.raw);
        }
    }
}

struct Event {
    raw: sys::CUevent,
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in Stream::event.
        let _ = unsafe { result::event::destroy(self.raw) };
    }
}

/// Device memory, freed on drop.
pub struct DeviceBuffer {
    pub(crate) ptr: sys::CUdeviceptr,
    pub bytes: usize,
    context: sys::CUcontext,
}

impl DeviceBuffer {
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Sets every byte to `byte` (0xff makes every `f32` a NaN, which equals
    /// nothing, so an element a collective failed to write is counted wrong).
    pub fn fill(&self, byte: u8, stream: &Stream) -> Result<(), LiveError> {
        stream.bind()?;
        // SAFETY: the whole allocation, on a stream of its GPU.
        unsafe { result::memset_d8_async(self.ptr, byte, self.bytes, stream.raw) }.during("cuMemsetD8Async")?;
        stream.synchronize()
    }

    /// Copies `host` in at element `offset` (bytes), waiting for it.
    pub fn write(&self, offset: usize, host: &[u8], stream: &Stream) -> Result<(), LiveError> {
        let end = offset.checked_add(host.len()).filter(|end| *end <= self.bytes);
        if end.is_none() {
            return Err(LiveError::Usage(format!(
                "write of {} bytes at {offset} past a {}-byte buffer",
                host.len(),
                self.bytes
            )));
        }
        stream.bind()?;
        // SAFETY: the range is inside the allocation (checked above); synchronised before `host` can go.
        unsafe { result::memcpy_htod_async(self.ptr + offset as u64, host, stream.raw) }.during("cuMemcpyHtoDAsync")?;
        stream.synchronize()
    }

    /// Copies `f32`s out from `offset` (bytes) into `host`, waiting for it.
    pub fn read(&self, offset: usize, host: &mut [f32], stream: &Stream) -> Result<(), LiveError> {
        let bytes = std::mem::size_of_val(host);
        if offset.checked_add(bytes).is_none_or(|end| end > self.bytes) {
            return Err(LiveError::Usage(format!(
                "read of {bytes} bytes at {offset} past a {}-byte buffer",
                self.bytes
            )));
        }
        stream.bind()?;
        // SAFETY: as in write; every bit pattern is a valid f32.
        unsafe { result::memcpy_dtoh_async(host, self.ptr + offset as u64, stream.raw) }.during("cuMemcpyDtoHAsync")?;
        stream.synchronize()
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in Gpu::alloc under this context.
        unsafe {
            let _ = result::ctx::set_current(self.context);
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// Page-locked host memory, usable by every context (`CU_MEMHOSTALLOC_PORTABLE`).
pub struct PinnedBuffer {
    ptr: *mut c_void,
    pub bytes: usize,
}

impl PinnedBuffer {
    pub fn new(gpu: &Gpu, bytes: usize) -> Result<PinnedBuffer, LiveError> {
        gpu.bind()?;
        // SAFETY: plain allocation; freed in Drop.
        let ptr =
            unsafe { result::malloc_host(bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) }.during("cuMemHostAlloc")?;
        // SAFETY: `bytes` bytes were just allocated; zeroing makes them initialised for the slice views below.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(PinnedBuffer { ptr, bytes })
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `bytes` initialised bytes, alive while self is.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.bytes) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the view unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.bytes) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in new.
        let _ = unsafe { result::free_host(self.ptr) };
    }
}

/// One copy to enqueue. Buffers are borrowed for the whole timed loop.
pub enum Copy<'a> {
    HostToDevice { from: &'a PinnedBuffer, to: &'a DeviceBuffer },
    DeviceToHost { from: &'a DeviceBuffer, to: &'a mut PinnedBuffer },
    DeviceToDevice { from: &'a DeviceBuffer, to: &'a DeviceBuffer },
    Peer { from: &'a DeviceBuffer, to: &'a DeviceBuffer },
}

impl Copy<'_> {
    fn bytes(&self) -> usize {
        match self {
            Copy::HostToDevice { from, to } => from.bytes.min(to.bytes),
            Copy::DeviceToHost { from, to } => from.bytes.min(to.bytes),
            Copy::DeviceToDevice { from, to } | Copy::Peer { from, to } => from.bytes.min(to.bytes),
        }
    }

    fn enqueue(&mut self, stream: &Stream) -> Result<(), LiveError> {
        stream.bind()?;
        let bytes = self.bytes();
        // SAFETY: every buffer is alive for the loop (borrowed by self) and
        // the ranges are within both buffers (`bytes` is the smaller size).
        unsafe {
            match self {
                Copy::HostToDevice { from, to } => {
                    result::memcpy_htod_async(to.ptr, &from.as_slice()[..bytes], stream.raw).during("cuMemcpyHtoDAsync")
                }
                Copy::DeviceToHost { from, to } => {
                    result::memcpy_dtoh_async(&mut to.as_mut_slice()[..bytes], from.ptr, stream.raw)
                        .during("cuMemcpyDtoHAsync")
                }
                Copy::DeviceToDevice { from, to } => {
                    result::memcpy_dtod_async(to.ptr, from.ptr, bytes, stream.raw).during("cuMemcpyDtoDAsync")
                }
                Copy::Peer { from, to } => {
                    result::memcpy_peer_async(to.context, to.ptr, from.context, from.ptr, bytes, stream.raw)
                        .during("cuMemcpyPeerAsync")
                }
            }
        }
    }
}

/// Seconds per iteration of `copies`, each on its own stream, all started
/// together (the later streams wait on the first one's start event) and timed
/// with CUDA events from that start until the last stream is done.
pub fn time_copies(mut copies: Vec<(Copy<'_>, &Stream)>, warmup: u32, iterations: u32) -> Result<f64, LiveError> {
    for _ in 0..warmup {
        for (copy, stream) in copies.iter_mut() {
            copy.enqueue(stream)?;
        }
    }
    let streams: Vec<&Stream> = copies.iter().map(|(_, s)| *s).collect();
    let seconds = time_streams(&streams, iterations, |_| {
        for (copy, stream) in copies.iter_mut() {
            copy.enqueue(stream)?;
        }
        Ok(())
    })?;
    Ok(seconds)
}

/// Streams held until every copy of a measurement is queued, as nvbandwidth
/// holds them with its blocking kernel (`spinKernel` on a host latch,
/// kernels.cuh): each waits (`cuStreamWaitValue32`, GEQ 1) on a word of
/// pinned, device-mapped host memory that the host sets once all is queued.
/// Without it a stream fed one small copy at a time idles between launches
/// and the figure is the launch rate. Dropping the hold always releases and
/// then waits for the streams, so no stream is left waiting on freed memory.
/// Only pinned or device memory may be copied behind a hold: a copy from
/// pageable memory returns only once the stream has taken it, and the held
/// stream would wait for a host that waits for it.
struct Hold<'s> {
    word: *mut u32,
    streams: Vec<&'s Stream>,
}

impl<'s> Hold<'s> {
    /// `None` when this driver or device cannot hold a stream this way (no
    /// stream memory operations): the copies are then timed unheld.
    fn new(streams: &[&'s Stream]) -> Option<Hold<'s>> {
        let first = streams.first()?;
        first.bind().ok()?;
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: a 4-byte allocation, freed in Drop.
        let word = unsafe { result::malloc_host(std::mem::size_of::<u32>(), flags) }.ok()?.cast::<u32>();
        // SAFETY: just allocated, 4 bytes.
        unsafe { std::ptr::write_volatile(word, 0) };
        let mut hold = Hold { word, streams: Vec::new() };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `word` is a device-mapped pinned allocation; writes one pointer.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, word.cast(), 0) }.result().ok()?;
        for stream in streams {
            stream.bind().ok()?;
            let geq = sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32;
            // SAFETY: the stream lives; `device` maps `word`, alive until Drop, which releases first.
            unsafe { sys::cuStreamWaitValue32_v2(stream.raw, device, 1, geq) }.result().ok()?;
            hold.streams.push(stream);
        }
        Some(hold)
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        // SAFETY: the word lives until the free below; the device reads it.
        unsafe { std::ptr::write_volatile(self.word, 1) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        for stream in &self.streams {
            let _ = stream.synchronize();
        }
        // SAFETY: allocated in new; no stream waits on it any more.
        let _ = unsafe { result::free_host(self.word.cast()) };
    }
}

/// Seconds per iteration of what `enqueue` puts on `streams`: start and end
/// events on the first stream, which the others wait on and join back into;
/// every stream held until all is queued.
pub fn time_streams(
    streams: &[&Stream],
    iterations: u32,
    mut enqueue: impl FnMut(u32) -> Result<(), LiveError>,
) -> Result<f64, LiveError> {
    let Some(first) = streams.first() else { return Ok(0.0) };
    for stream in streams {
        stream.synchronize()?;
    }
    let hold = Hold::new(streams);
    let start = first.record()?;
    for other in &streams[1..] {
        other.wait(&start)?;
    }
    for iteration in 0..iterations.max(1) {
        enqueue(iteration)?;
    }
    let mut joins = Vec::new();
    for other in &streams[1..] {
        let done = other.record()?;
        first.wait(&done)?;
        joins.push(done);
    }
    let end = first.record()?;
    drop(hold);
    // SAFETY: both events live; recorded above.
    let milliseconds = unsafe {
        result::event::synchronize(end.raw).during("cuEventSynchronize")?;
        result::event::elapsed(start.raw, end.raw).during("cuEventElapsedTime")?
    };
    drop(joins);
    Ok(f64::from(milliseconds) / 1e3 / f64::from(iterations.max(1)))
}

/// Seconds per iteration on each stream separately (one rank per stream):
/// every stream records its own start and end around the same loop.
pub fn time_each_stream(
    streams: &[&Stream],
    iterations: u32,
    mut enqueue: impl FnMut(u32) -> Result<(), LiveError>,
) -> Result<Vec<f64>, LiveError> {
    for stream in streams {
        stream.synchronize()?;
    }
    let starts = streams.iter().map(|s| s.record()).collect::<Result<Vec<_>, _>>()?;
    for iteration in 0..iterations.max(1) {
        enqueue(iteration)?;
    }
    let ends = streams.iter().map(|s| s.record()).collect::<Result<Vec<_>, _>>()?;
    let mut seconds = Vec::with_capacity(streams.len());
    for (start, end) in starts.iter().zip(&ends) {
        // SAFETY: both events live; recorded above.
        let milliseconds = unsafe {
            result::event::synchronize(end.raw).during("cuEventSynchronize")?;
            result::event::elapsed(start.raw, end.raw).during("cuEventElapsedTime")?
        };
        seconds.push(f64::from(milliseconds) / 1e3 / f64::from(iterations.max(1)));
    }
    Ok(seconds)
}
