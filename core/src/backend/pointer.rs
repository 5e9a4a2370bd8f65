//! Whether memory the application hands over is memory the exchange's kernels may use: every
//! backend asks its driver where an address lies ([`PointerFacts`]) and the decision is made
//! here, once for all of them.

use crate::error::{Error, Result};

/// Where an address lies, as a GPU driver says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerFacts {
    /// The driver knows the address (pageable host memory and freed memory it does not).
    pub known: bool,
    /// Device memory, as against (pinned) host memory.
    pub device_memory: bool,
    /// Managed memory: the driver moves it where kernels use it.
    pub managed: bool,
    /// The device the memory belongs to.
    pub device: i64,
    /// The allocation's first address and size, where the driver says.
    pub range: Option<(u64, u64)>,
}

/// Checks that the `bytes` bytes at `addr`, described by `facts`, are memory of device
/// `device` (named `device_name`) that its kernels may read and write: device memory of that
/// device within one allocation, or managed memory. `what` names the memory in the error.
///
/// # Errors
/// [`Error::InvalidInput`] naming `what`, its address and what is wrong.
pub fn check_device_memory(
    facts: &PointerFacts,
    addr: u64,
    bytes: u64,
    what: &str,
    (device, device_name): (i64, &str),
) -> Result<()> {
    let refuse = |why: String| Err(Error::InvalidInput(format!("{what} at {addr:#x}: {why}")));
    if !facts.known {
        return refuse(format!(
            "not memory the GPU driver knows (pageable host memory, or freed): the exchange needs device memory of device {device} ({device_name})"
        ));
    }
    if facts.managed {
        return Ok(());
    }
    if !facts.device_memory {
        return refuse(format!(
            "host memory: the exchange needs device memory of device {device} ({device_name}), or managed memory"
        ));
    }
    if facts.device != device {
        return refuse(format!(
            "memory of device {}, but the exchange runs on device {device} ({device_name})",
            facts.device
        ));
    }
    if let Some((start, size)) = facts.range {
        let end = start.saturating_add(size);
        if addr < start || addr.saturating_add(bytes) > end {
            return refuse(format!(
                "its {bytes} bytes run past the end of its allocation ({size} bytes from {start:#x})"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON_0: PointerFacts = PointerFacts {
        known: true,
        device_memory: true,
        managed: false,
        device: 0,
        range: Some((0x1000, 0x100)),
    };

    fn check(facts: PointerFacts, addr: u64, bytes: u64) -> Result<()> {
        check_device_memory(&facts, addr, bytes, "field 1 (f32 x2)", (0, "GPU 0"))
    }

    fn refusal(facts: PointerFacts, addr: u64, bytes: u64) -> String {
        check(facts, addr, bytes).expect_err("refused").to_string()
    }

    #[test]
    fn device_memory_of_the_exchanges_device_within_its_allocation_is_taken() {
        check(ON_0, 0x1000, 0x100).expect("taken");
        check(ON_0, 0x1080, 0x80).expect("taken");
        let no_range = PointerFacts {
            range: None,
            ..ON_0
        };
        check(no_range, 0x1000, 1 << 40).expect("taken");
    }

    #[test]
    fn managed_memory_is_taken_wherever_it_lives() {
        let managed = PointerFacts {
            device_memory: false,
            managed: true,
            device: 3,
            ..ON_0
        };
        check(managed, 0x1000, 0x100).expect("taken");
    }

    #[test]
    fn host_unknown_other_device_and_overrunning_memory_are_refused_naming_the_field() {
        let unknown = PointerFacts {
            known: false,
            ..ON_0
        };
        let e = refusal(unknown, 0x1000, 8);
        assert!(
            e.contains("field 1 (f32 x2) at 0x1000") && e.contains("pageable host"),
            "{e}"
        );
        let host = PointerFacts {
            device_memory: false,
            ..ON_0
        };
        assert!(refusal(host, 0x1000, 8).contains("host memory"));
        let other = PointerFacts { device: 1, ..ON_0 };
        let e = refusal(other, 0x1000, 8);
        assert!(
            e.contains("memory of device 1, but the exchange runs on device 0"),
            "{e}"
        );
        let e = refusal(ON_0, 0x1080, 0x81);
        assert!(
            e.contains("run past the end of its allocation (256 bytes from 0x1000)"),
            "{e}"
        );
        assert!(check(ON_0, 0xfff, 1).is_err());
    }
}
