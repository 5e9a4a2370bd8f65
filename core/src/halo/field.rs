//! Fields: the user's arrays the halo exchange reads and writes, in device memory.

// Adopting a raw device pointer is an unsafe promise of the caller.
#![allow(unsafe_code)]

use std::sync::Arc;

use crate::backend::{Backend, DeviceMemory};
use crate::domain::{ElemType, FieldShape, HaloPlan};
use crate::error::{Error, Result};

/// The memory behind a field, opaque: an exchange keeps a share of it while its kernels may
/// use the field.
pub struct FieldMemory<B: Backend>(Memory<B>);

/// Allocated through the backend, or the user's own.
enum Memory<B: Backend> {
    Owned(B::DeviceMemory),
    Adopted { addr: u64 },
}

impl<B: Backend> FieldMemory<B> {
    fn addr(&self) -> u64 {
        match &self.0 {
            Memory::Owned(m) => m.device_addr(),
            Memory::Adopted { addr } => *addr,
        }
    }
}

/// One field of a domain: `plan.decomposition.alloc_elems()` elements of the plan's element
/// type, halos included, laid out `x + ax * (y + ay * z)` in allocated coordinates
/// ([`Decomposition::index`](crate::domain::Decomposition::index)).
///
/// The exchange keeps a share of an allocated field's memory until the kernels it queued on
/// the field have completed, so dropping a field early cannot free memory a kernel still uses.
pub struct Field<B: Backend> {
    memory: Arc<FieldMemory<B>>,
    bytes: usize,
    elem: ElemType,
}

impl<B: Backend> Field<B> {
    /// Allocates a zeroed field for `plan` through the backend (field 0's shape where the
    /// declaration gives fields of several shapes: [`Field::alloc_field`]).
    ///
    /// # Errors
    /// The backend's allocation error.
    pub fn alloc(backend: &B, plan: &HaloPlan) -> Result<Field<B>> {
        Self::alloc_field(backend, plan, 0)
    }

    /// Allocates a zeroed field for field `k` of `plan` (its cells' shape,
    /// [`Layout::fields`](crate::domain::Layout::fields)).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a field the declaration does not have; the backend's
    /// allocation error.
    pub fn alloc_field(backend: &B, plan: &HaloPlan, k: usize) -> Result<Field<B>> {
        let shapes = plan.spec.field_shapes();
        let shape = shapes.get(k).ok_or_else(|| {
            Error::InvalidInput(format!(
                "field {k}: the declaration has {} fields",
                shapes.len()
            ))
        })?;
        let bytes = field_bytes(plan, shape.cell_bytes())?;
        Ok(Field {
            memory: Arc::new(FieldMemory(Memory::Owned(backend.alloc_device(bytes)?))),
            bytes,
            elem: plan.spec.elem,
        })
    }

    /// Adopts device memory the caller owns (e.g. from its own allocator or framework) as a
    /// field of `plan`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `bytes` is smaller than the field needs or `addr` is null or
    /// not aligned for the element type.
    ///
    /// # Safety
    /// 1. `addr` is a device address of this backend's device (what its kernels dereference),
    ///    valid for reads and writes of `bytes` bytes.
    /// 2. The memory stays allocated until every exchange that used this field has completed:
    ///    until the stream the exchange ran on was synchronized, or [`super::HaloExchange::wait`]
    ///    or [`super::HaloExchange::exchange`] returned.
    /// 3. While an exchange runs, nothing else writes the field's halo cells or reads them
    ///    before the exchange's unpack (ordered on the same stream) completed.
    pub unsafe fn adopt(addr: u64, bytes: usize, plan: &HaloPlan) -> Result<Field<B>> {
        // The smallest field's size and alignment here; the exchange checks each field against
        // its own shape.
        let shapes = plan.spec.field_shapes();
        let least = |of: fn(&FieldShape) -> u64| {
            shapes
                .iter()
                .map(of)
                .min()
                .unwrap_or(u64::from(plan.spec.elem.bytes()))
        };
        let needed = field_bytes(plan, least(|f| f.cell_bytes()))?;
        let align = least(|f| u64::from(f.elem_bytes));
        if addr == 0 || addr % align != 0 {
            return Err(Error::InvalidInput(format!(
                "adopting a field at {addr:#x}: the address must be non-null and aligned to {align} bytes ({})",
                plan.spec.elem
            )));
        }
        if bytes < needed {
            return Err(Error::InvalidInput(format!(
                "adopting a field of {bytes} bytes: the plan's local array (with halos) needs {needed} bytes"
            )));
        }
        Ok(Field {
            memory: Arc::new(FieldMemory(Memory::Adopted { addr })),
            bytes,
            elem: plan.spec.elem,
        })
    }

    /// The address kernels dereference.
    pub fn device_addr(&self) -> u64 {
        self.memory.addr()
    }

    /// Size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// The backend allocation, for copies; `None` for adopted memory.
    pub fn device_memory(&self) -> Option<&B::DeviceMemory> {
        match &self.memory.0 {
            Memory::Owned(m) => Some(m),
            Memory::Adopted { .. } => None,
        }
    }

    /// A share of the memory, kept by the exchange while its kernels may use it.
    pub(crate) fn share(&self) -> Arc<FieldMemory<B>> {
        Arc::clone(&self.memory)
    }
}

/// Bytes of one field of `plan` whose cells are `cell_bytes` bytes.
fn field_bytes(plan: &HaloPlan, cell_bytes: u64) -> Result<usize> {
    let elems = plan.decomposition.alloc_elems();
    elems
        .checked_mul(cell_bytes)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "a local array of {elems} elements does not fit in memory"
            ))
        })
}
