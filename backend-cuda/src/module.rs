//! The loaded kernel modules (one per compilation unit, [`KernelUnit`]) and their functions,
//! one per [`Kernel`].

use std::ffi::CString;
use std::sync::Arc;

use haloport_core::{Error, Kernel, KernelUnit, Result};

use crate::ffi;
use crate::Context;

/// `cuModuleLoadData` of each embedded image, with every kernel looked up in its unit's.
pub struct Module {
    /// By [`KernelUnit::index`].
    raws: Vec<ffi::CUmodule>,
    functions: Vec<(Kernel, ffi::CUfunction)>,
    _ctx: Arc<Context>,
}

impl Module {
    pub(crate) fn load(
        ctx: &Arc<Context>,
        images: [&'static [u8]; KernelUnit::ALL.len()],
    ) -> Result<Module> {
        let mut module = Module {
            raws: Vec::with_capacity(images.len()),
            functions: Vec::new(),
            _ctx: Arc::clone(ctx),
        };
        for image in images {
            // SAFETY: image is a complete, 8-byte aligned fatbin nvcc produced (kernels::image);
            // a module loaded before a failure here is unloaded by `drop`.
            let raw = unsafe { ffi::module_load_data(image.as_ptr())? };
            module.raws.push(raw);
        }
        for kernel in Kernel::ALL {
            let name = CString::new(kernel.symbol()).map_err(|_| Error::KernelsUnavailable {
                backend: "cuda",
                reason: format!("kernel name {:?} has a NUL byte", kernel.symbol()),
            })?;
            // SAFETY: the unit's module was loaded above.
            let f = unsafe { ffi::module_function(module.raws[kernel.unit().index()], name)? };
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
        for &raw in &self.raws {
            // SAFETY: raw is live and unloaded once; streams that ran its kernels were dropped
            // (and synchronized) before the backend that owns this module.
            if let Err(e) = unsafe { ffi::module_unload(raw) } {
                tracing::error!("{e}");
            }
        }
    }
}
