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
        // The smallest field's size here; the exchange checks each field against its own shape
        // ([`Field::adopt_field`] does when it is adopted).
        let shapes = plan.spec.field_shapes();
        let least = shapes
            .iter()
            .map(|f| f.cell_bytes())
            .min()
            .unwrap_or(u64::from(plan.spec.elem.bytes()));
        check_address(addr, plan, "adopting a field")?;
        let needed = field_bytes(plan, least)?;
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

    /// Adopts device memory the caller owns as field `k` of `plan`, checked against that
    /// field's own shape: its size against its cells, its address against the word the
    /// exchange moves it in ([`DomainSpec::word_bytes`](crate::domain::DomainSpec::word_bytes)).
    /// Errors name the field and its type ("field 1 (4-byte x3, 12 bytes a cell)").
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a field the declaration does not have, a null or misaligned
    /// address, or fewer bytes than the field needs.
    ///
    /// # Safety
    /// As [`Field::adopt`].
    pub unsafe fn adopt_field(
        addr: u64,
        bytes: usize,
        plan: &HaloPlan,
        k: usize,
    ) -> Result<Field<B>> {
        let shapes = plan.spec.field_shapes();
        let shape = *shapes.get(k).ok_or_else(|| {
            Error::InvalidInput(format!(
                "field {k}: the declaration has {} fields",
                shapes.len()
            ))
        })?;
        let what = format!("field {k} ({})", describe_field(plan, shape));
        check_address(addr, plan, &what)?;
        let needed = field_bytes(plan, shape.cell_bytes())?;
        if bytes < needed {
            return Err(Error::InvalidInput(format!(
                "{what}: {bytes} bytes given, its allocation needs {needed} ({} cells of {} bytes)",
                plan.decomposition.alloc_elems(),
                shape.cell_bytes()
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

/// A field's cells in words, as messages name a field's own type: the element type of a
/// declaration of one type (`"f64, 8 bytes a cell"`), else the element size and components
/// (`"4-byte x3, 12 bytes a cell"`).
pub fn describe_field(plan: &HaloPlan, shape: FieldShape) -> String {
    if plan.spec.layout.fields.is_none() {
        format!("{}, {} bytes a cell", plan.spec.elem, shape.cell_bytes())
    } else {
        describe_shape(shape)
    }
}

/// A cell shape in words: `"4-byte x3, 12 bytes a cell"`.
pub fn describe_shape(shape: FieldShape) -> String {
    format!(
        "{}-byte x{}, {} bytes a cell",
        shape.elem_bytes,
        shape.components,
        shape.cell_bytes()
    )
}

/// Refuses a null address, and one not aligned to the word the exchange moves the plan's
/// fields in: the kernels load and store whole words of
/// [`DomainSpec::word_bytes`](crate::domain::DomainSpec::word_bytes), so two 4-byte components
/// make 8-byte words and need an address at 0 mod 8.
fn check_address(addr: u64, plan: &HaloPlan, what: &str) -> Result<()> {
    let word = u64::from(plan.spec.word_bytes()?);
    if addr == 0 || addr % word != 0 {
        return Err(Error::InvalidInput(format!(
            "{what} at {addr:#x}: the address must be non-null and aligned to {word} bytes, the words the exchange moves these fields in (it is {} mod {word})",
            addr % word
        )));
    }
    Ok(())
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
