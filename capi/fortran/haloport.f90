! haloport's Fortran module: the C ABI of haloport.h through iso_c_binding. Every function
! returns a status (HALOPORT_STATUS_OK is 0); haloport_error_message() gives the last error's
! text. Handles are type(c_ptr). Arrays of three are x, y, z: a field declared as
! real(c_double) :: u(0:ax-1, 0:ay-1, 0:az-1) has the layout haloport expects (x fastest).
! The communicator is the Fortran handle (an INTEGER, or comm%MPI_VAL with mpi_f08).
module haloport
    use, intrinsic :: iso_c_binding
    implicit none
    private

    integer(c_int), parameter, public :: &
        HALOPORT_STATUS_OK = 0, HALOPORT_STATUS_INVALID_INPUT = 1, &
        HALOPORT_STATUS_NULL_ARGUMENT = 2, HALOPORT_STATUS_INVALID_HANDLE = 3, &
        HALOPORT_STATUS_USAGE = 4, HALOPORT_STATUS_TIMEOUT = 5, &
        HALOPORT_STATUS_VERIFICATION = 6, HALOPORT_STATUS_DEVICE = 7, &
        HALOPORT_STATUS_MPI = 8, HALOPORT_STATUS_OTHER_RANK = 9, HALOPORT_STATUS_INTERNAL = 10
    integer(c_int32_t), parameter, public :: &
        HALOPORT_BACKEND_KIND_HOST = 0, HALOPORT_BACKEND_KIND_CUDA = 1, &
        HALOPORT_BACKEND_KIND_HIP = 2, &
        HALOPORT_NEIGHBOURHOOD_FACES = 0, HALOPORT_NEIGHBOURHOOD_FACES_EDGES = 1, &
        HALOPORT_NEIGHBOURHOOD_ALL = 2, &
        HALOPORT_TRANSPORT_MPI = 0, HALOPORT_TRANSPORT_IPC = 1, &
        HALOPORT_STRATEGY_BASE = 0, HALOPORT_STRATEGY_TASKQUEUE = 1, &
        HALOPORT_LINK_LOCAL = 0, HALOPORT_LINK_STAGED = 1, HALOPORT_LINK_DIRECT = 2

    !> One field: the allocation's first cell and its size in bytes.
    type, bind(c), public :: haloport_field
        type(c_ptr) :: data = c_null_ptr
        integer(c_size_t) :: bytes = 0
    end type haloport_field

    public :: haloport_backend_new, haloport_backend_free
    public :: haloport_domain_new, haloport_domain_free, haloport_domain_set_procs, &
        haloport_domain_set_periodic, haloport_domain_set_halo, haloport_domain_set_pad, &
        haloport_domain_set_neighbourhood, haloport_domain_set_parts, haloport_domain_add_field
    public :: haloport_options_new, haloport_options_free, haloport_options_set_transport, &
        haloport_options_set_strategy, haloport_options_set_timeout, haloport_options_set_checked
    public :: haloport_exchange_new_f, haloport_exchange_free, haloport_exchange_start, &
        haloport_exchange_finish, haloport_exchange_wait, haloport_exchange_run, &
        haloport_exchange_local, haloport_exchange_allocation, haloport_exchange_process_grid, &
        haloport_exchange_field_bytes, haloport_exchange_neighbour_count, haloport_exchange_neighbour
    public :: haloport_version_number, haloport_error_message

    interface
        integer(c_int) function haloport_backend_new(kind, device, out) &
                bind(c, name="haloport_backend_new")
            import :: c_int, c_int32_t, c_ptr
            integer(c_int32_t), value :: kind, device
            type(c_ptr), intent(out) :: out
        end function
        integer(c_int) function haloport_backend_free(backend) bind(c, name="haloport_backend_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: backend
        end function

        integer(c_int) function haloport_domain_new(grid, out) bind(c, name="haloport_domain_new")
            import :: c_int, c_int64_t, c_ptr
            integer(c_int64_t), intent(in) :: grid(3)
            type(c_ptr), intent(out) :: out
        end function
        integer(c_int) function haloport_domain_free(domain) bind(c, name="haloport_domain_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: domain
        end function
        integer(c_int) function haloport_domain_set_procs(domain, procs) &
                bind(c, name="haloport_domain_set_procs")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), intent(in) :: procs(3)
        end function
        integer(c_int) function haloport_domain_set_periodic(domain, periodic) &
                bind(c, name="haloport_domain_set_periodic")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), intent(in) :: periodic(3)
        end function
        integer(c_int) function haloport_domain_set_halo(domain, lo, hi) &
                bind(c, name="haloport_domain_set_halo")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), intent(in) :: lo(3), hi(3)
        end function
        integer(c_int) function haloport_domain_set_pad(domain, pad) &
                bind(c, name="haloport_domain_set_pad")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), intent(in) :: pad(3)
        end function
        integer(c_int) function haloport_domain_set_neighbourhood(domain, neighbourhood) &
                bind(c, name="haloport_domain_set_neighbourhood")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), value :: neighbourhood
        end function
        integer(c_int) function haloport_domain_set_parts(domain, dim, starts, count) &
                bind(c, name="haloport_domain_set_parts")
            import :: c_int, c_int32_t, c_int64_t, c_size_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), value :: dim
            integer(c_int64_t), intent(in) :: starts(*)
            integer(c_size_t), value :: count
        end function
        integer(c_int) function haloport_domain_add_field(domain, elem_bytes, components) &
                bind(c, name="haloport_domain_add_field")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: domain
            integer(c_int32_t), value :: elem_bytes, components
        end function

        integer(c_int) function haloport_options_new(out) bind(c, name="haloport_options_new")
            import :: c_int, c_ptr
            type(c_ptr), intent(out) :: out
        end function
        integer(c_int) function haloport_options_free(options) bind(c, name="haloport_options_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: options
        end function
        integer(c_int) function haloport_options_set_transport(options, transport) &
                bind(c, name="haloport_options_set_transport")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: options
            integer(c_int32_t), value :: transport
        end function
        integer(c_int) function haloport_options_set_strategy(options, strategy) &
                bind(c, name="haloport_options_set_strategy")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: options
            integer(c_int32_t), value :: strategy
        end function
        integer(c_int) function haloport_options_set_timeout(options, seconds) &
                bind(c, name="haloport_options_set_timeout")
            import :: c_int, c_double, c_ptr
            type(c_ptr), value :: options
            real(c_double), value :: seconds
        end function
        integer(c_int) function haloport_options_set_checked(options, checked) &
                bind(c, name="haloport_options_set_checked")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: options
            integer(c_int32_t), value :: checked
        end function

        !> Collective over comm (a Fortran communicator handle); options may be c_null_ptr.
        integer(c_int) function haloport_exchange_new_f(backend, comm, domain, options, out) &
                bind(c, name="haloport_exchange_new_f")
            import :: c_int, c_ptr
            type(c_ptr), value :: backend, domain, options
            integer(c_int), value :: comm
            type(c_ptr), intent(out) :: out
        end function
        integer(c_int) function haloport_exchange_free(exchange) bind(c, name="haloport_exchange_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange
        end function
        integer(c_int) function haloport_exchange_start(exchange, fields, count, stream) &
                bind(c, name="haloport_exchange_start")
            import :: c_int, c_size_t, c_ptr, haloport_field
            type(c_ptr), value :: exchange, stream
            type(haloport_field), intent(in) :: fields(*)
            integer(c_size_t), value :: count
        end function
        integer(c_int) function haloport_exchange_finish(exchange, stream) &
                bind(c, name="haloport_exchange_finish")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange, stream
        end function
        integer(c_int) function haloport_exchange_wait(exchange) bind(c, name="haloport_exchange_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange
        end function
        integer(c_int) function haloport_exchange_run(exchange, fields, count, stream) &
                bind(c, name="haloport_exchange_run")
            import :: c_int, c_size_t, c_ptr, haloport_field
            type(c_ptr), value :: exchange, stream
            type(haloport_field), intent(in) :: fields(*)
            integer(c_size_t), value :: count
        end function
        integer(c_int) function haloport_exchange_local(exchange, extent, offset) &
                bind(c, name="haloport_exchange_local")
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_int64_t), intent(out) :: extent(3), offset(3)
        end function
        integer(c_int) function haloport_exchange_allocation(exchange, alloc, interior) &
                bind(c, name="haloport_exchange_allocation")
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_int64_t), intent(out) :: alloc(3), interior(3)
        end function
        integer(c_int) function haloport_exchange_process_grid(exchange, procs, coords) &
                bind(c, name="haloport_exchange_process_grid")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_int32_t), intent(out) :: procs(3), coords(3)
        end function
        integer(c_int) function haloport_exchange_field_bytes(exchange, field, bytes) &
                bind(c, name="haloport_exchange_field_bytes")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_size_t), value :: field
            integer(c_size_t), intent(out) :: bytes
        end function
        integer(c_int) function haloport_exchange_neighbour_count(exchange, count) &
                bind(c, name="haloport_exchange_neighbour_count")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_size_t), intent(out) :: count
        end function
        integer(c_int) function haloport_exchange_neighbour(exchange, index, direction, rank, link) &
                bind(c, name="haloport_exchange_neighbour")
            import :: c_int, c_int32_t, c_size_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_size_t), value :: index
            integer(c_int32_t), intent(out) :: direction(3), rank
            integer(c_int), intent(out) :: link
        end function

        integer(c_int32_t) function haloport_version_number() bind(c, name="haloport_version_number")
            import :: c_int32_t
        end function
        type(c_ptr) function c_last_error() bind(c, name="haloport_last_error")
            import :: c_ptr
        end function
        integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: s
        end function
    end interface

contains

    !> The message of this thread's last failed call, as a Fortran string.
    function haloport_error_message() result(message)
        character(len=:), allocatable :: message
        type(c_ptr) :: text
        character(kind=c_char), pointer :: chars(:)
        integer(c_size_t) :: n, i
        text = c_last_error()
        n = c_strlen(text)
        call c_f_pointer(text, chars, [n])
        allocate(character(len=n) :: message)
        do i = 1, n
            message(i:i) = chars(i)
        end do
    end function haloport_error_message

end module haloport
