//! Fused mode through the C ABI: the application's own kernels store boundary cells straight
//! into the neighbours' halos through the descriptors of `haloport_device.h` (installed beside
//! `haloport.h`, which includes it). The library allocates the fields (they are mapped into the
//! neighbours), the caller computes in them; each step is `_fused_start`, the caller's kernels,
//! `_fused_finish`. Everything is `haloport::foreign::ForeignExchange`'s; this file checks
//! pointers and counts and writes out-parameters.

use std::ffi::c_void;

use haloport::core::shared::haloport_fused;
use haloport::foreign::RawStream;

use crate::exchange::{HaloportExchange, EXCHANGE};
use crate::handles::null;
use crate::status::{entry, Failure, HaloportStatus};

/// Fused mode (see `haloport_device.h`): allocates `sets` sets of the domain's fields through
/// the library, zeroed, maps them into the neighbours and builds one descriptor per field and
/// set; writes the fields' device addresses to `fields_out`, set by set (`fields_out[s * F +
/// f]` is field `f` of set `s`, `F` the domain's number of fields), which must hold `sets * F`
/// pointers. Each field is the whole allocation (`haloport_exchange_field_bytes`), laid out as
/// `haloport_exchange_allocation` says. The fields belong to the exchange and stay allocated
/// until `haloport_exchange_free` (the neighbours store into them until then): compute in them,
/// never free them. Afterwards each step that writes set `s` calls
/// `haloport_exchange_fused_start` before its kernels store into the neighbours' halos and
/// `haloport_exchange_fused_finish` after. Ordinary exchanges of the same fields stay allowed
/// (`haloport_exchange_exchange`, e.g. once before the first step).
///
/// Collective: every rank calls it with the same `sets`. The descriptors lead to the
/// neighbours that are device-direct or this rank itself; the others (another node, or a route
/// chosen otherwise) are served by an ordinary exchange inside `haloport_exchange_fused_finish`.
/// The fields' cells must be of one 4- or 8-byte element. A NULL `exchange` or `fields_out` returns at once, before the
/// collective: pass valid pointers on every rank.
///
/// Errors, the same on every rank: `HALOPORT_STATUS_INVALID_INPUT` for 0 sets, different
/// `sets` on different ranks, a neighbour of another route (named), cells of another size;
/// `HALOPORT_STATUS_USAGE` when already fused; an allocation that fails on one rank returns
/// its error there and `HALOPORT_STATUS_OTHER_RANK` on the others.
#[no_mangle]
pub extern "C" fn haloport_exchange_fuse(
    exchange: *mut HaloportExchange,
    sets: usize,
    fields_out: *mut *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_fuse", || {
        if fields_out.is_null() {
            return Err(null("fields_out"));
        }
        EXCHANGE.with(exchange, |e| {
            let fields = e.fuse(sets)?;
            let addrs: Vec<*mut c_void> = fields
                .sets()
                .iter()
                .flatten()
                .map(|f| f.addr as *mut c_void)
                .collect();
            // SAFETY: non-null; the header asks for `sets * F` writable pointers, which is
            // what the library allocated.
            unsafe { std::ptr::copy_nonoverlapping(addrs.as_ptr(), fields_out, addrs.len()) };
            Ok(())
        })
    })
}

/// Before a step's kernels store set `set`'s boundary cells into the neighbours' halos: queues
/// on `stream` (a `cudaStream_t` / `hipStream_t`; NULL: the default stream; ignored on the host
/// backend) this rank's word that it is done reading the halos of set `set` (everything queued
/// on `stream` before), and a wait, on the device, until every neighbour said the same; then
/// writes the device address of each field's descriptor (a `const haloport_fused *` for the
/// kernels, in device memory) to `descriptors_out`, which holds one pointer per field of the
/// domain. The kernels queued on `stream` afterwards store through them (`haloport_store_f64`,
/// `haloport_block_done`). The addresses stay the same from step to step and live until
/// `haloport_exchange_free`. On the host backend it returns once every neighbour is done
/// reading.
///
/// Errors: `HALOPORT_STATUS_USAGE` before `haloport_exchange_fuse` or for a set it did not
/// make (`set` counts from 0); `HALOPORT_STATUS_TIMEOUT` naming the neighbour and halo of an
/// earlier wait that gave up (the exchange must then be built anew).
#[no_mangle]
pub extern "C" fn haloport_exchange_fused_start(
    exchange: *mut HaloportExchange,
    set: usize,
    stream: *mut c_void,
    descriptors_out: *mut *const c_void,
) -> HaloportStatus {
    entry("haloport_exchange_fused_start", || {
        if descriptors_out.is_null() {
            return Err(null("descriptors_out"));
        }
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the stream's contract is this function's (the header).
            let addrs = unsafe { e.fused_start(set, RawStream(stream as usize))? };
            let addrs: Vec<*const c_void> = addrs.iter().map(|&a| a as *const c_void).collect();
            // SAFETY: non-null; the header asks for one writable pointer per field, and the
            // set has one descriptor per field.
            unsafe {
                std::ptr::copy_nonoverlapping(addrs.as_ptr(), descriptors_out, addrs.len());
            }
            Ok(())
        })
    })
}

/// After a step's kernels stored set `set`'s cells: queues on `stream` (NULL: the default
/// stream) a wait, on the device, until every cell of every incoming message of the set
/// arrived; work queued on `stream` afterwards sees this rank's halos of the set filled. On the
/// host backend it returns once they are filled. A wait that gives up is reported by the next
/// call (`haloport_exchange_wait` among them) as `HALOPORT_STATUS_TIMEOUT` naming the neighbour
/// and halo.
///
/// Errors: as `haloport_exchange_fused_start`.
#[no_mangle]
pub extern "C" fn haloport_exchange_fused_finish(
    exchange: *mut HaloportExchange,
    set: usize,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_fused_finish", || {
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the stream's contract is this function's (the header).
            unsafe { e.fused_finish(set, RawStream(stream as usize)) }.map_err(Into::into)
        })
    })
}

/// Copies set `set`'s descriptors into `out` (host memory), one per field: `count` must be the
/// domain's number of fields. On the host backend these are what a CPU code stores through
/// (`haloport_target`, then an atomic add of the cells to each message's `counter`, as
/// `haloport_block_done` does); on a GPU they show where each message goes. They stay the same
/// from step to step.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` when `count` differs from the number of fields;
/// `HALOPORT_STATUS_USAGE` as for `haloport_exchange_fused_start`.
#[no_mangle]
pub extern "C" fn haloport_exchange_fused_descriptors(
    exchange: *const HaloportExchange,
    set: usize,
    out: *mut haloport_fused,
    count: usize,
) -> HaloportStatus {
    entry("haloport_exchange_fused_descriptors", || {
        if out.is_null() {
            return Err(null("out"));
        }
        EXCHANGE.with(exchange, |e| {
            let descriptors = e.fused_descriptors(set)?;
            if count != descriptors.len() {
                return Err(Failure::invalid(format!(
                    "set {set} has {} descriptors (one per field of the domain); count is {count}",
                    descriptors.len()
                )));
            }
            // SAFETY: non-null; the header asks for `count` writable descriptors, which is
            // how many are copied.
            unsafe { std::ptr::copy_nonoverlapping(descriptors.as_ptr(), out, count) };
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_out_parameters_are_refused_before_the_handle_is_read() {
        let bogus = std::ptr::null_mut::<HaloportExchange>();
        assert_eq!(
            haloport_exchange_fuse(bogus, 2, std::ptr::null_mut()),
            HaloportStatus::NullArgument
        );
        assert_eq!(
            haloport_exchange_fused_start(bogus, 0, std::ptr::null_mut(), std::ptr::null_mut()),
            HaloportStatus::NullArgument
        );
        let mut d = haloport_fused::default();
        assert_eq!(
            haloport_exchange_fused_descriptors(bogus, 0, &mut d, 1),
            HaloportStatus::NullArgument
        );
    }
}
