//! Streams of the caller's libraries as the raw handle the exchange queues its kernels on.
//!
//! Accepted: `None` (the array library's current stream: CuPy's
//! `cupy.cuda.get_current_stream()`, PyTorch's `torch.cuda.current_stream()`, else the stream
//! a `__cuda_array_interface__` names, else the default stream), any object with the CUDA
//! stream protocol (`__cuda_stream__()` returning `(version, handle)`), a PyTorch stream
//! (`.cuda_stream`), a CuPy stream (`.ptr`), or a raw integer `cudaStream_t` / `hipStream_t`
//! (0: the default stream). The host backend has no streams: the value is ignored there.

use haloport::foreign::{BackendKind, RawStream};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyInt};

use crate::errors::invalid;

/// `stream` as a raw handle, with `first` (the first array) telling the library whose current
/// stream `None` means.
///
/// # Errors
/// `InvalidInputError` for an object that is no stream, a negative handle.
pub fn raw_stream(
    stream: Option<&Bound<'_, PyAny>>,
    first: Option<&Bound<'_, PyAny>>,
    backend: BackendKind,
) -> PyResult<RawStream> {
    if backend == BackendKind::Host {
        return Ok(RawStream(0));
    }
    let handle = match stream {
        Some(s) if !s.is_none() => handle_of(s)?,
        _ => match first {
            // A CPU tensor given to the cuda backend fails here first; say so in our words.
            Some(array) => current_stream(array).map_err(|e| {
                invalid(format!(
                    "stream: the current stream of the arrays' library could not be found: {e}"
                ))
            })?,
            None => 0,
        },
    };
    Ok(RawStream(handle))
}

/// The handle a stream object carries.
fn handle_of(stream: &Bound<'_, PyAny>) -> PyResult<usize> {
    let value = if stream.is_instance_of::<PyInt>() {
        stream.clone()
    } else if let Ok(protocol) = stream.getattr("__cuda_stream__") {
        let pair = protocol.call0()?;
        let (_version, handle): (i64, Bound<'_, PyAny>) = pair
            .extract()
            .map_err(|_| invalid("__cuda_stream__() did not return a (version, handle) pair"))?;
        handle
    } else if let Ok(handle) = stream.getattr("cuda_stream") {
        handle
    } else if let Ok(handle) = stream.getattr("ptr") {
        handle
    } else {
        return Err(invalid(format!(
            "stream: a {} is not a stream; give a CuPy or PyTorch stream, an object with __cuda_stream__, or a raw handle (int)",
            stream.get_type().name()?
        )));
    };
    value.extract::<usize>().map_err(|_| {
        invalid(format!(
            "stream: {value} is not a stream handle (a non-negative integer)"
        ))
    })
}

/// `cupy.cuda.get_current_stream`, looked up once (this runs on every call).
static CUPY_CURRENT: GILOnceCell<PyObject> = GILOnceCell::new();
/// `torch.cuda.current_stream`, likewise.
static TORCH_CURRENT: GILOnceCell<PyObject> = GILOnceCell::new();

/// `module.name`, looked up the first time.
fn function<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<PyObject>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || Ok(py.import(module)?.getattr(name)?.unbind()))
        .map(|f| f.bind(py).clone())
}

/// The current stream of the library `array` belongs to.
fn current_stream(array: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = array.py();
    let module = array.get_type().module()?;
    let module = module.to_cow()?;
    if module.starts_with("cupy") {
        let current = function(py, &CUPY_CURRENT, "cupy.cuda", "get_current_stream")?;
        return current.call0()?.getattr("ptr")?.extract();
    }
    if module.starts_with("torch") {
        let current = function(py, &TORCH_CURRENT, "torch.cuda", "current_stream")?;
        return current
            .call1((array.getattr("device")?,))?
            .getattr("cuda_stream")?
            .extract();
    }
    // Version 3 of the interface names the stream the producer last used.
    if let Ok(interface) = array.getattr("__cuda_array_interface__") {
        if let Ok(dict) = interface.downcast_into::<PyDict>() {
            if let Some(stream) = dict.get_item("stream")? {
                if !stream.is_none() {
                    return stream.extract();
                }
            }
        }
    }
    Ok(0)
}
