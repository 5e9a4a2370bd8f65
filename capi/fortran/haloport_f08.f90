! haloport for programs that use mpi_f08: everything module haloport gives, and
! haloport_exchange_new taking the communicator as type(MPI_Comm) besides an INTEGER handle.
! Built with the library where the MPI library has an mpi_f08 module.
module haloport_f08
    use, intrinsic :: iso_c_binding
    use haloport
    use mpi_f08, only: MPI_Comm
    implicit none

    interface haloport_exchange_new
        module procedure exchange_new_f08
    end interface

contains

    integer(c_int) function exchange_new_f08(backend, comm, domain, options, out) result(status)
        type(c_ptr), intent(in) :: backend, domain, options
        type(MPI_Comm), intent(in) :: comm
        type(c_ptr), intent(out) :: out
        status = haloport_exchange_new_f(backend, int(comm%MPI_VAL, c_int), domain, options, out)
    end function

end module haloport_f08
