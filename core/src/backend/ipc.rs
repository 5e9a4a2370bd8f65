//! What names device memory and devices across the processes of a node: IPC handles, the
//! physical device's identity, and the handles a backend exported.

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Device memory of one process in a form another process of the same node can open
/// ([`Backend::export_ipc`](super::Backend::export_ipc), [`Backend::open_ipc`](super::Backend::open_ipc)): it travels between ranks over MPI once,
/// at set-up (SPEC 12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpcHandle {
    /// The backend that made it ("cuda", "hip", "host"); only the same backend opens it.
    pub backend: String,
    /// The vendor's opaque handle (CUDA and HIP: the 64-byte `cu/hipIpcMemHandle_t`; host: the
    /// exporting process's id and the descriptor of its shared mapping).
    pub bytes: Vec<u8>,
    /// Size of the exported allocation in bytes.
    pub len: usize,
}

/// Which physical device a rank works on, as other ranks of its node see it: two ranks with the
/// same identity share one device; [`Backend::can_access_peer`](super::Backend::can_access_peer) says whether kernels on one can
/// store into memory of the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceIdentity {
    /// The backend ("cuda", "hip", "host").
    pub backend: String,
    /// A name unique to the physical device on its node: the PCI bus id for GPUs (e.g.
    /// `0000:1B:00.0`); the host backend's one "device" is the node's memory (`host`).
    pub id: String,
}

/// A PCI address: domain, bus, device, function.
pub type PciBusId = (u32, u32, u32, u32);

impl DeviceIdentity {
    /// Parses a PCI bus id, `domain:bus:device.function` in hex (`0000:1B:00.0`), into numbers,
    /// so that ids differing only in case or domain width compare equal; `None` when `id` is
    /// not one.
    pub fn parse_pci_bus_id(id: &str) -> Option<PciBusId> {
        fn hex(s: &str, max_digits: usize) -> Option<u32> {
            let digits =
                (1..=max_digits).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
            digits.then(|| u32::from_str_radix(s, 16).ok()).flatten()
        }
        let (domain, rest) = id.split_once(':')?;
        let (bus, rest) = rest.split_once(':')?;
        let (device, function) = rest.split_once('.')?;
        Some((
            hex(domain, 8)?,
            hex(bus, 2)?,
            hex(device, 2)?,
            hex(function, 1)?,
        ))
    }

    /// This identity's PCI bus id, once it is shown to be a device of `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for another backend's identity or an
    /// id that is no PCI bus id.
    pub fn pci_bus_id_for(&self, backend: &str) -> Result<PciBusId> {
        if self.backend != backend {
            return Err(crate::Error::InvalidInput(format!(
                "{backend}: cannot ask about peer access to a device of the {:?} backend ({})",
                self.backend, self.id
            )));
        }
        Self::parse_pci_bus_id(&self.id).ok_or_else(|| {
            crate::Error::InvalidInput(format!(
                "{backend}: peer device id {:?} is not a PCI bus id (domain:bus:device.function)",
                self.id
            ))
        })
    }
}

impl IpcHandle {
    /// The handle's bytes as the `N`-byte vendor handle (`vendor_type`, e.g. `CUipcMemHandle`)
    /// of `backend`, once it is shown to be one.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the backend that made it, or
    /// its length.
    pub fn vendor_bytes<const N: usize>(
        &self,
        backend: &str,
        vendor_type: &str,
    ) -> Result<[u8; N]> {
        if self.backend != backend {
            return Err(crate::Error::InvalidInput(format!(
                "{backend}: cannot open an IPC handle made by the {:?} backend (only the {backend} backend's)",
                self.backend
            )));
        }
        self.bytes.as_slice().try_into().map_err(|_| {
            crate::Error::InvalidInput(format!(
                "{backend}: an IPC handle ({vendor_type}) has {N} bytes, this one {}",
                self.bytes.len()
            ))
        })
    }
}

/// The IPC handles one process exported, each with the address of the allocation it names,
/// while that allocation lives: CUDA and HIP refuse to open a handle in the process that made
/// it, so backends recognise their own handles here and say so clearly.
pub struct ExportedHandles<const N: usize>(std::sync::Mutex<Vec<(u64, [u8; N])>>);

impl<const N: usize> ExportedHandles<N> {
    /// An empty list (usable in a `static`).
    pub const fn new() -> Self {
        ExportedHandles(std::sync::Mutex::new(Vec::new()))
    }

    /// The list; a panic elsewhere while it was held cannot leave it inconsistent (each change
    /// is one push or retain), so a poisoned lock is used as it is, and `Drop` never panics.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, [u8; N])>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that the allocation at `addr` was exported as `handle`.
    pub fn record(&self, addr: u64, handle: [u8; N]) {
        let mut list = self.lock();
        if !list.contains(&(addr, handle)) {
            list.push((addr, handle));
        }
    }

    /// Forgets the handles of the allocation at `addr` (it is being freed).
    pub fn forget(&self, addr: u64) {
        self.lock().retain(|(a, _)| *a != addr);
    }

    /// True when this process exported `handle` and its allocation still lives.
    pub fn contains(&self, handle: &[u8; N]) -> bool {
        self.lock().iter().any(|(_, h)| h == handle)
    }
}

impl<const N: usize> Default for ExportedHandles<N> {
    fn default() -> Self {
        Self::new()
    }
}
