//! The loaded kernel module and its functions, one per [`Kernel`].

use std::ffi::CString;

use haloport_core::{Error, Kernel, Result};

use crate::ffi;

/// `hipModuleLoadData` of the embedded bundle, with every kernel looked up.
pub struct Module {
    raw: ffi::hipModule_t,
    functions: Vec<(Kernel, ffi::hipFunction_t)>,
}

impl Module {
    pub(crate) fn load(image: &'static [u8]) -> Result<Module> {
        // SAFETY: image is the complete, 8-byte aligned offload bundle hipcc produced.
        let raw = unsafe { ffi::module_load_data(image.as_ptr())? };
        let mut module = Module {
            raw,
            functions: Vec::new(),
        };
        for kernel in Kernel::ALL {
            let name = CString::new(kernel.symbol()).map_err(|_| Error::KernelsUnavailable {
                backend: "hip",
                reason: format!("kernel name {:?} has a NUL byte", kernel.symbol()),
            })?;
            // SAFETY: raw is the module loaded above.
            let f = unsafe { ffi::module_function(module.raw, &name)? };
            module.functions.push((kernel, f));
        }
        Ok(module)
    }

    pub(crate) fn function(&self, kernel: Kernel) -> Result<ffi::hipFunction_t> {
        self.functions
            .iter()
            .find(|(k, _)| *k == kernel)
            .map(|(_, f)| *f)
            .ok_or_else(|| Error::Unsupported {
                backend: "hip",
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
