//! The loaded kernel module and its functions, one per [`Kernel`].

use std::ffi::CString;
use std::sync::Arc;

use haloport_core::{Error, Kernel, Result};

use crate::ffi;
use crate::Context;

/// `cuModuleLoadData` of the embedded image, with every kernel looked up.
pub struct Module {
    raw: ffi::CUmodule,
    functions: Vec<(Kernel, ffi::CUfunction)>,
    _ctx: Arc<Context>,
}

impl Module {
    pub(crate) fn load(ctx: &Arc<Context>, image: &'static [u8]) -> Result<Module> {
        // SAFETY: image is the complete, 8-byte aligned fatbin nvcc produced (kernels::image).
        let raw = unsafe { ffi::module_load_data(image.as_ptr())? };
        let mut module = Module {
            raw,
            functions: Vec::new(),
            _ctx: Arc::clone(ctx),
        };
        for kernel in Kernel::ALL {
            let name = CString::new(kernel.symbol()).map_err(|_| Error::KernelsUnavailable {
                backend: "cuda",
                reason: format!("kernel name {:?} has a NUL byte", kernel.symbol()),
            })?;
            // SAFETY: raw is the module loaded above.
            let f = unsafe { ffi::module_function(module.raw, name)? };
            module.functions.push((kernel, f));
        }
        Ok(module)
    }

    pub(crate) fn function(&self, kernel: Kernel) -> Result<ffi::CUfunction> {
        self.functions
            .iter()
            .find(|(k, _)| *k == kernel)
            .map(|(_, f)| *f)
            .ok_or_else(|| Error::Unsupported {
                backend: "cuda",
                what: format!("kernel {kernel:?}"),
            })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: raw is live and unloaded once; streams that ran its kernels were dropped (and
        // synchronized) before the backend that owns this module.
        if let Err(e) = unsafe { ffi::module_unload(self.raw) } {
            tracing::error!("{e}");
        }
    }
}
