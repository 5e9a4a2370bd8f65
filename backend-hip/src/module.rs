//! The loaded kernel modules (one per compilation unit, [`KernelUnit`]) and their functions,
//! one per [`Kernel`].

use std::ffi::CString;

use haloport_core::{Error, Kernel, KernelUnit, Result};

use crate::ffi;

/// `hipModuleLoadData` of each embedded image, with every kernel looked up in its unit's.
pub struct Module {
    /// By [`KernelUnit::index`].
    raws: Vec<ffi::hipModule_t>,
    functions: Vec<(Kernel, ffi::hipFunction_t)>,
}

impl Module {
    pub(crate) fn load(images: [&'static [u8]; KernelUnit::ALL.len()]) -> Result<Module> {
        let mut module = Module {
            raws: Vec::with_capacity(images.len()),
            functions: Vec::new(),
        };
        for image in images {
            // SAFETY: image is a complete, 8-byte aligned offload bundle hipcc produced (or the
            // layer's fatbin); a module loaded before a failure here is unloaded by `drop`.
            let raw = unsafe { ffi::module_load_data(image.as_ptr())? };
            module.raws.push(raw);
        }
        for kernel in Kernel::ALL {
            let name = CString::new(kernel.symbol()).map_err(|_| Error::KernelsUnavailable {
                backend: "hip",
                reason: format!("kernel name {:?} has a NUL byte", kernel.symbol()),
            })?;
            // SAFETY: the unit's module was loaded above.
            let f = unsafe { ffi::module_function(module.raws[kernel.unit().index()], &name)? };
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
        for &raw in &self.raws {
            // SAFETY: raw is live and unloaded once; streams that ran its kernels were dropped
            // (and synchronized) before the backend that owns this module.
            if let Err(e) = unsafe { ffi::module_unload(raw) } {
                tracing::error!("{e}");
            }
        }
    }
}
