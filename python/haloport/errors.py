"""The exceptions haloport raises: one base class, one subclass per kind of failure.

Every error the library reports is an instance of :class:`Error` (also spelled
:class:`HaloportError`); the subclass says what went wrong, the message says where. The Rust
library sorts its errors into these kinds (``haloport::foreign::ErrorKind``); the extension
only picks the class.
"""

import builtins

__all__ = [
    "Error",
    "HaloportError",
    "InvalidInputError",
    "UsageError",
    "TimeoutError",
    "VerificationError",
    "DeviceError",
    "MpiError",
    "OtherRankError",
    "InternalError",
]


class Error(Exception):
    """Base class of every exception haloport raises."""


HaloportError = Error


class InvalidInputError(Error, ValueError):
    """A declaration, option, array or stream that is wrong: a shape, dtype, stride or device
    that does not match the declaration, an unknown name, a grid the job cannot split."""


class UsageError(Error, RuntimeError):
    """A call out of order: ``finish`` before ``start``, an exchange used after ``close``."""


class TimeoutError(Error, builtins.TimeoutError):
    """A wait that gave up after the exchange's time-out: a peer that never sent (it did not
    call the exchange, or it failed), a device that never finished. The halos of that exchange
    are stale."""


class VerificationError(Error):
    """Received data that is not what was sent."""


class DeviceError(Error):
    """The GPU, its driver or haloport's kernels failed or are missing (no device, out of
    memory, a backend this build lacks a feature for)."""


class MpiError(Error):
    """An MPI call failed."""


class OtherRankError(Error):
    """Another rank failed a step every rank takes together (set-up); its own error is in the
    message, and that rank raised it."""


class InternalError(Error):
    """A fault of haloport itself; please report it."""
