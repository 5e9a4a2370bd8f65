//! Arrays of the caller's libraries as the raw fields the exchange adopts, never copied.
//!
//! An array is read through the first protocol it offers that suits the backend:
//! - host backend: NumPy's `__array_interface__`, else DLPack (`__dlpack__`) with a CPU device;
//! - CUDA: `__cuda_array_interface__` (CuPy, PyTorch, Numba), else DLPack (JAX) with a CUDA
//!   device; HIP: DLPack with a ROCm device.
//!
//! Every array is the whole allocation of one field (halos and padding included), shaped
//! `(az, ay, ax)`, or `(az, ay, ax, C)` for `C` components per cell, in C order (x fastest,
//! components interleaved), as the Rust library lays fields out (`haloport::core::domain`).
//! Shape, strides, dtype, device and writability are checked; anything else raises
//! `InvalidInputError` naming the field and what differs.

use std::ffi::{c_void, CStr};
use std::fmt;

use haloport::foreign::{BackendKind, RawField};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyString, PyTuple, PyType};

use crate::errors::invalid;

/// An element type as array libraries describe it: a kind (`f`loat, `i`nt, `u`nsigned,
/// `c`omplex, `b`ool, as NumPy's type strings) and a size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtype {
    kind: u8,
    bytes: u32,
}

/// The element types haloport moves (every size the region kernels have words for).
const DTYPES: [(&str, Dtype); 13] = [
    (
        "float16",
        Dtype {
            kind: b'f',
            bytes: 2,
        },
    ),
    (
        "float32",
        Dtype {
            kind: b'f',
            bytes: 4,
        },
    ),
    (
        "float64",
        Dtype {
            kind: b'f',
            bytes: 8,
        },
    ),
    (
        "complex64",
        Dtype {
            kind: b'c',
            bytes: 8,
        },
    ),
    (
        "complex128",
        Dtype {
            kind: b'c',
            bytes: 16,
        },
    ),
    (
        "int8",
        Dtype {
            kind: b'i',
            bytes: 1,
        },
    ),
    (
        "int16",
        Dtype {
            kind: b'i',
            bytes: 2,
        },
    ),
    (
        "int32",
        Dtype {
            kind: b'i',
            bytes: 4,
        },
    ),
    (
        "int64",
        Dtype {
            kind: b'i',
            bytes: 8,
        },
    ),
    (
        "uint8",
        Dtype {
            kind: b'u',
            bytes: 1,
        },
    ),
    (
        "uint16",
        Dtype {
            kind: b'u',
            bytes: 2,
        },
    ),
    (
        "uint32",
        Dtype {
            kind: b'u',
            bytes: 4,
        },
    ),
    (
        "uint64",
        Dtype {
            kind: b'u',
            bytes: 8,
        },
    ),
];

impl Dtype {
    /// `float64`, the default.
    pub const F64: Dtype = Dtype {
        kind: b'f',
        bytes: 8,
    };

    /// Bytes of one element.
    pub fn bytes(self) -> u32 {
        self.bytes
    }

    /// The array interfaces' type string, little-endian: `<f8`, `<u2`, `|b1`.
    pub fn typestr(self) -> String {
        match self.kind {
            b'b' => "|b1".to_owned(),
            kind => format!("<{}{}", kind as char, self.bytes),
        }
    }

    /// NumPy's name: `float64`, `uint8`, `bool`.
    pub fn name(self) -> String {
        DTYPES
            .iter()
            .find(|(_, d)| *d == self)
            .map(|(n, _)| (*n).to_owned())
            .unwrap_or_else(|| match self.kind {
                b'b' => "bool".to_owned(),
                kind => format!("{}{}", kind as char, self.bytes),
            })
    }

    /// A name (`float64`, `f8`, `double`, `torch.float64`, `<f8`) as a dtype.
    fn parse(text: &str) -> Option<Dtype> {
        let text = text.strip_prefix("torch.").unwrap_or(text);
        // Type strings of NumPy and the array interfaces: byte order, kind, size.
        let text = text.trim_start_matches(['<', '|', '=']);
        let alias = match text {
            "half" => "float16",
            "single" => "float32",
            "double" => "float64",
            "bool" | "bool_" | "b1" => {
                return Some(Dtype {
                    kind: b'b',
                    bytes: 1,
                })
            }
            other => other,
        };
        if let Some((_, d)) = DTYPES.iter().find(|(n, _)| *n == alias) {
            return Some(*d);
        }
        let (kind, size) = alias.split_at_checked(1)?;
        let kind = kind.as_bytes()[0];
        let bytes: u32 = size.parse().ok()?;
        DTYPES
            .iter()
            .map(|(_, d)| *d)
            .find(|d| d.kind == kind && d.bytes == bytes)
    }

    /// A dtype given from Python: a name, a NumPy or CuPy dtype (`.str`), a NumPy scalar type
    /// (`numpy.float64`) or a PyTorch dtype (`torch.float64`).
    ///
    /// # Errors
    /// `InvalidInputError` naming the value and the dtypes known.
    pub fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Dtype> {
        let text = if let Ok(s) = value.downcast::<PyString>() {
            s.to_string()
        } else if let Ok(s) = value.getattr("str").and_then(|s| s.extract::<String>()) {
            s
        } else if let Ok(t) = value.downcast::<PyType>() {
            t.name()?.to_string()
        } else {
            value.str()?.to_string()
        };
        Dtype::parse(&text).ok_or_else(|| {
            let known: Vec<&str> = DTYPES.iter().map(|(n, _)| *n).collect();
            invalid(format!(
                "unknown dtype {text:?}; known: {}, bool",
                known.join(", ")
            ))
        })
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What field `k`'s array must be.
#[derive(Debug, Clone)]
pub struct Expected {
    /// `(az, ay, ax)` or `(az, ay, ax, C)`.
    pub shape: Vec<u64>,
    /// Its elements.
    pub dtype: Dtype,
}

/// Where the exchange runs: which memory an array must live in.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The backend.
    pub backend: BackendKind,
    /// Its device's ordinal in this process.
    pub ordinal: usize,
    /// The stream the exchange is queued on (a DLPack producer orders its work before it).
    pub stream: usize,
}

/// An array as one protocol describes it.
struct Described {
    addr: u64,
    shape: Vec<u64>,
    /// In bytes; `None`: C-contiguous.
    strides: Option<Vec<i64>>,
    dtype: Result<Dtype, String>,
    readonly: bool,
    /// DLPack's `(device_type, device_id)`, where the protocol tells.
    device: Option<(i32, i32)>,
    /// The stream the producer's writes are queued on, where `__cuda_array_interface__`
    /// (version 3) names one: the consumer must order itself after it.
    stream: Option<usize>,
}

/// DLPack device types (dlpack.h `DLDeviceType`).
const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DL_CUDA_HOST: i32 = 3;
const DL_ROCM: i32 = 10;
const DL_CUDA_MANAGED: i32 = 13;

/// The memory `device_type` names, for messages.
fn device_name(device_type: i32) -> &'static str {
    match device_type {
        DL_CPU => "host memory",
        DL_CUDA => "CUDA device memory",
        DL_CUDA_HOST => "CUDA pinned host memory",
        DL_ROCM => "ROCm device memory",
        DL_CUDA_MANAGED => "CUDA managed memory",
        _ => "memory of another kind",
    }
}

/// Field `k` of the caller's arrays as a raw field of `target`, checked against `expected`,
/// and the stream its producer names, if any (not yet ordered before the exchange: the caller
/// does that).
///
/// # Errors
/// `InvalidInputError` naming the field and what differs; an array offering no protocol that
/// suits the backend.
pub fn raw_field(
    array: &Bound<'_, PyAny>,
    k: usize,
    expected: &Expected,
    target: Target,
) -> PyResult<(RawField, Option<usize>)> {
    let fail = |why: String| invalid(format!("field {k}: {why}"));
    let described = describe(array, target).map_err(|e| {
        // Ours already say what is wrong; a protocol's own failure is told as such.
        let ours = e
            .get_type(array.py())
            .name()
            .is_ok_and(|n| n == "InvalidInputError");
        let why = e.value(array.py()).to_string();
        fail(match ours {
            true => why,
            false => format!("could not read the array: {why}"),
        })
    })?;
    let Some(described) = described else {
        let wanted = match target.backend {
            BackendKind::Host => {
                "a host array (NumPy, or any with __array_interface__ or __dlpack__)"
            }
            BackendKind::Cuda => {
                "a CUDA array (CuPy, PyTorch, Numba, JAX: __cuda_array_interface__ or __dlpack__)"
            }
            BackendKind::Hip => "a ROCm array with __dlpack__",
        };
        return Err(fail(format!(
            "a {} is not usable on the {} backend: give {wanted}",
            array.get_type().name()?,
            target.backend.name()
        )));
    };
    check(&described, expected, target).map_err(fail)?;
    let bytes = expected.shape.iter().product::<u64>() * u64::from(expected.dtype.bytes());
    let field = RawField {
        addr: described.addr,
        bytes: usize::try_from(bytes).map_err(|_| fail("larger than memory".into()))?,
    };
    Ok((field, described.stream))
}

/// Compares what the array is with what the declaration says it must be.
fn check(array: &Described, expected: &Expected, target: Target) -> Result<(), String> {
    if let Some((device_type, device_id)) = array.device {
        let usable = match target.backend {
            BackendKind::Host => matches!(device_type, DL_CPU | DL_CUDA_HOST),
            BackendKind::Cuda => matches!(device_type, DL_CUDA | DL_CUDA_MANAGED),
            BackendKind::Hip => device_type == DL_ROCM,
        };
        if !usable {
            return Err(format!(
                "the array lies in {}; the {} backend exchanges {}",
                device_name(device_type),
                target.backend.name(),
                match target.backend {
                    BackendKind::Host => "host arrays",
                    BackendKind::Cuda => "arrays in CUDA device memory",
                    BackendKind::Hip => "arrays in ROCm device memory",
                }
            ));
        }
        let on_device = target.backend != BackendKind::Host && device_type != DL_CUDA_MANAGED;
        if on_device && usize::try_from(device_id).ok() != Some(target.ordinal) {
            return Err(format!(
                "the array is on device {device_id}; this exchange runs on device {}",
                target.ordinal
            ));
        }
    }
    match &array.dtype {
        Ok(d) if *d == expected.dtype => {}
        Ok(d) => {
            return Err(format!(
                "dtype {d}; the domain declares {} for it",
                expected.dtype
            ))
        }
        Err(d) => {
            return Err(format!(
                "dtype {d}; the domain declares {} for it",
                expected.dtype
            ))
        }
    }
    if array.shape != expected.shape {
        return Err(format!(
            "shape {}; the domain needs {} (the whole allocation, halos and padding included, z, y, x{})",
            shape_text(&array.shape),
            shape_text(&expected.shape),
            if expected.shape.len() == 4 { ", components" } else { "" }
        ));
    }
    if let Some(strides) = &array.strides {
        // C order: x fastest, components interleaved; a dimension of extent 1 has no stride.
        let mut contiguous = i64::from(expected.dtype.bytes());
        for (dim, (&extent, &stride)) in array.shape.iter().zip(strides).enumerate().rev() {
            if extent > 1 && stride != contiguous {
                return Err(format!(
                    "strides {strides:?} bytes: not C-contiguous (dimension {dim} steps {stride} bytes, not {contiguous}); haloport exchanges the array in place and never copies it, so give the whole contiguous allocation (padding is declared with pad=, not sliced away)"
                ));
            }
            contiguous *= i64::try_from(extent).map_err(|_| "extent too large".to_owned())?;
        }
    }
    if array.readonly {
        return Err("the array is read-only; the exchange writes its halos".into());
    }
    if array.addr == 0 {
        return Err("the array has no data (null address)".into());
    }
    Ok(())
}

/// `(4, 6, 10)`.
fn shape_text(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    match parts.len() {
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

/// The array through the first protocol it offers that suits the backend; `None` if none.
fn describe(array: &Bound<'_, PyAny>, target: Target) -> PyResult<Option<Described>> {
    let interface = match target.backend {
        BackendKind::Host => Some("__array_interface__"),
        BackendKind::Cuda => Some("__cuda_array_interface__"),
        BackendKind::Hip => None,
    };
    if let Some(name) = interface {
        if let Ok(dict) = array.getattr(name) {
            let mut described = from_interface(&dict.downcast_into::<PyDict>()?)?;
            if target.backend != BackendKind::Host {
                // The interface does not say where the memory is; DLPack's device query does.
                described.device = dlpack_device(array)?;
            }
            return Ok(Some(described));
        }
    }
    if array.hasattr("__dlpack__")? {
        // The device first: a producer exports only to consumers of its own kind of memory.
        if let Some((device_type, device_id)) = dlpack_device(array)? {
            let usable = match target.backend {
                BackendKind::Host => matches!(device_type, DL_CPU | DL_CUDA_HOST),
                _ => !matches!(device_type, DL_CPU | DL_CUDA_HOST),
            };
            if !usable {
                return Ok(Some(Described {
                    addr: 0,
                    shape: Vec::new(),
                    strides: None,
                    dtype: Err("unknown".into()),
                    readonly: false,
                    device: Some((device_type, device_id)),
                    stream: None,
                }));
            }
        }
        return from_dlpack(array, target).map(Some);
    }
    Ok(None)
}

/// `__array_interface__` or `__cuda_array_interface__` (version 2 or 3).
fn from_interface(dict: &Bound<'_, PyDict>) -> PyResult<Described> {
    let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        dict.get_item(key)?
            .ok_or_else(|| invalid(format!("the array interface has no '{key}'")))
    };
    if dict.get_item("mask")?.is_some_and(|m| !m.is_none()) {
        return Err(invalid("masked arrays are not exchanged"));
    }
    let data = item("data")?;
    let (addr, readonly): (u64, bool) = data
        .extract()
        .map_err(|_| invalid("the array interface's data is not an (address, read-only) pair"))?;
    let offset: u64 = match dict.get_item("offset")? {
        Some(o) if !o.is_none() => o.extract()?,
        _ => 0,
    };
    let shape: Vec<u64> = item("shape")?.extract()?;
    let strides = match dict.get_item("strides")? {
        Some(s) if !s.is_none() => Some(s.extract::<Vec<i64>>()?),
        _ => None,
    };
    let typestr: String = item("typestr")?.extract()?;
    let dtype = if typestr.starts_with('>') && !typestr.ends_with('1') {
        Err(format!("{typestr} (big-endian)"))
    } else {
        Dtype::parse(&typestr).ok_or_else(|| typestr.clone())
    };
    // Version 3's `stream`: absent or None, no synchronization needed; 1 the legacy default
    // stream, 2 the per-thread default stream, any other value a stream handle; 0 is
    // disallowed (it is ambiguous between the two defaults).
    let stream = match dict.get_item("stream")? {
        Some(s) if !s.is_none() => {
            let handle: usize = s.extract().map_err(|_| {
                invalid(format!(
                    "the array interface's stream {s} is not a stream handle (a positive integer)"
                ))
            })?;
            if handle == 0 {
                return Err(invalid(
                    "the array interface's stream is 0, which the CUDA array interface disallows (1: the legacy default stream, 2: the per-thread one)",
                ));
            }
            Some(handle)
        }
        _ => None,
    };
    let addr = addr.checked_add(offset).ok_or_else(|| {
        invalid(format!(
            "the array interface's address {addr:#x} plus its offset {offset} overflows 64 bits"
        ))
    })?;
    Ok(Described {
        addr,
        shape,
        strides,
        dtype,
        readonly,
        device: None,
        stream,
    })
}

/// `__dlpack_device__()`, where the array has it.
fn dlpack_device(array: &Bound<'_, PyAny>) -> PyResult<Option<(i32, i32)>> {
    match array.getattr("__dlpack_device__") {
        Ok(method) => {
            let (device_type, device_id): (i32, i32) = method.call0()?.extract()?;
            Ok(Some((device_type, device_id)))
        }
        Err(_) => Ok(None),
    }
}

/// dlpack.h's `DLDevice`.
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// dlpack.h's `DLDataType`.
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// dlpack.h's `DLTensor`.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// dlpack.h's `DLManagedTensor` (the capsule named `dltensor`); the deleter is the producer's.
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// dlpack.h's `DLPackVersion`.
#[repr(C)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

/// dlpack.h's `DLManagedTensorVersioned` (DLPack 1.0, the capsule named
/// `dltensor_versioned`): a version and flags before the tensor.
#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the tensor (JAX's arrays).
const DL_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer exported a copy, not the array itself.
const DL_IS_COPIED: u64 = 1 << 1;

/// The DLPack versions this consumer reads: 1.0's versioned capsule, or the unversioned one.
const DLPACK_MAX_VERSION: (u32, u32) = (1, 0);

/// The array through `__dlpack__`, asking for DLPack 1.0's versioned capsule (which carries
/// the read-only and copied flags) and falling back to the unversioned one for producers older
/// than the keyword (their `__dlpack__` raises `TypeError` on it). The capsule is read, not
/// consumed: dropping it unconsumed lets the producer release its export (DLPack's rule for a
/// capsule still named `dltensor` or `dltensor_versioned`), while the array object the caller
/// holds keeps the memory alive.
///
/// Python specification: <https://dmlc.github.io/dlpack/latest/python_spec.html>.
fn from_dlpack(array: &Bound<'_, PyAny>, target: Target) -> PyResult<Described> {
    let py = array.py();
    let kwargs = PyDict::new(py);
    if target.backend != BackendKind::Host {
        // DLPack reserves 0; 1 is the legacy default stream, which 0 means in CUDA calls.
        let stream = if target.stream == 0 { 1 } else { target.stream };
        kwargs.set_item("stream", stream)?;
    }
    let versioned = kwargs.copy()?;
    versioned.set_item("max_version", DLPACK_MAX_VERSION)?;
    // Never a copy: the exchange writes the halos of the array itself.
    versioned.set_item("copy", false)?;
    let capsule = match array.call_method("__dlpack__", (), Some(&versioned)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            array.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let capsule = capsule.downcast::<PyCapsule>()?;
    let name = capsule.name()?;
    let pointer = capsule.pointer();
    if pointer.is_null() {
        return Err(invalid("__dlpack__ returned an empty capsule"));
    }
    let (tensor, flags) = if name == Some(c"dltensor_versioned") {
        let managed = pointer.cast::<DlManagedTensorVersioned>();
        // SAFETY: a capsule named `dltensor_versioned` holds a `DLManagedTensorVersioned`
        // (DLPack's Python specification), valid while the capsule lives, which it does until
        // this function returns; it is only read.
        let managed = unsafe { &*managed };
        if managed.version.major != DLPACK_MAX_VERSION.0 {
            return Err(invalid(format!(
                "__dlpack__ returned DLPack {}.{}; haloport reads DLPack 1.x",
                managed.version.major, managed.version.minor
            )));
        }
        (&managed.dl_tensor, managed.flags)
    } else if name == Some(c"dltensor") {
        let managed = pointer.cast::<DlManagedTensor>();
        // SAFETY: a capsule named `dltensor` holds a `DLManagedTensor` (DLPack's Python
        // specification), valid while the capsule lives, which it does until this function
        // returns; it is only read.
        (unsafe { &(*managed).dl_tensor }, 0)
    } else {
        return Err(invalid(format!(
            "__dlpack__ returned a capsule named {:?}, not 'dltensor_versioned' or 'dltensor'",
            name.map(CStr::to_string_lossy)
        )));
    };
    if flags & DL_IS_COPIED != 0 {
        return Err(invalid(
            "the array's producer exported a copy of it through DLPack; haloport exchanges an array in place and needs the array itself",
        ));
    }
    let ndim = usize::try_from(tensor.ndim).unwrap_or(0);
    let read = |p: *const i64| -> Vec<i64> {
        if p.is_null() || ndim == 0 {
            return Vec::new();
        }
        // SAFETY: DLPack's `shape` and non-null `strides` point at `ndim` integers owned by
        // the tensor, alive with the capsule.
        unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
    };
    let shape: Vec<u64> = read(tensor.shape)
        .into_iter()
        .map(|e| u64::try_from(e).unwrap_or(0))
        .collect();
    let lanes = tensor.dtype.lanes;
    let kind = match tensor.dtype.code {
        0 => Some(b'i'),
        1 => Some(b'u'),
        2 => Some(b'f'),
        5 => Some(b'c'),
        6 => Some(b'b'),
        _ => None,
    };
    let bytes = u32::from(tensor.dtype.bits) / 8;
    let dtype = match kind {
        Some(kind) if lanes == 1 && tensor.dtype.bits % 8 == 0 => {
            let d = Dtype { kind, bytes };
            Ok(d)
        }
        _ => Err(format!(
            "DLPack code {} of {} bits x {lanes} lanes",
            tensor.dtype.code, tensor.dtype.bits
        )),
    };
    let itemsize = i64::from(bytes.max(1));
    let strides = (!tensor.strides.is_null()).then(|| {
        read(tensor.strides)
            .into_iter()
            .map(|s| s * itemsize)
            .collect()
    });
    Ok(Described {
        addr: (tensor.data as u64)
            .checked_add(tensor.byte_offset)
            .ok_or_else(|| {
                invalid("the DLPack tensor's address plus its byte offset overflows 64 bits")
            })?,
        shape,
        strides,
        dtype,
        // The unversioned capsule cannot say; its producers refuse to export a read-only
        // array instead (NumPy does).
        readonly: flags & DL_READ_ONLY != 0,
        // The tensor's own device: checked whether or not the array has `__dlpack_device__`.
        device: Some((tensor.device.device_type, tensor.device.device_id)),
        stream: None,
    })
}

/// The caller's arrays: a list or tuple of them, or one array for a domain of one field.
pub fn as_list<'py>(arrays: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = arrays.downcast::<pyo3::types::PyList>() {
        return Ok(list.iter().collect());
    }
    if let Ok(tuple) = arrays.downcast::<PyTuple>() {
        return Ok(tuple.iter().collect());
    }
    Ok(vec![arrays.clone()])
}
