! haloport's Fortran module: the C ABI of haloport.h through iso_c_binding, with its names.
! Every function returns a status (HALOPORT_STATUS_OK is 0); haloport_error_message() gives the
! last error's text and haloport_status_text(status) the status's name. Handles are
! type(c_ptr). Arrays of three are x, y, z: a field declared as
! real(c_double) :: u(0:ax-1, 0:ay-1, 0:az-1) has the layout haloport expects (x fastest).
! The communicator: haloport_exchange_new takes the Fortran handle (an INTEGER, from use mpi);
! module haloport_f08 (haloport_f08.f90) adds type(MPI_Comm) from use mpi_f08. A stream is
! type(c_ptr) (c_null_ptr: the default stream) or an integer(c_intptr_t), which is what CUDA
! Fortran's integer(cuda_stream_kind) holds.
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
        HALOPORT_TRANSPORT_MPI = 0, HALOPORT_TRANSPORT_IPC = 1, HALOPORT_TRANSPORT_NCCL = 2, &
        HALOPORT_TRANSPORT_AUTO = 3, &
        HALOPORT_STRATEGY_BASE = 0, HALOPORT_STRATEGY_TASKQUEUE = 1, &
        HALOPORT_LINK_LOCAL = 0, HALOPORT_LINK_STAGED = 1, HALOPORT_LINK_DIRECT = 2, &
        HALOPORT_LINK_DEVICE_MPI = 3, HALOPORT_LINK_NCCL = 4, &
        HALOPORT_GPU_AWARE_MPI_AUTO = 0, HALOPORT_GPU_AWARE_MPI_ON = 1, &
        HALOPORT_GPU_AWARE_MPI_OFF = 2, &
        HALOPORT_LOCALITY_ITSELF = 0, HALOPORT_LOCALITY_SAME_NODE = 1, &
        HALOPORT_LOCALITY_OTHER_NODE = 2, HALOPORT_LOCALITY_NOT_ASKED = 3

    !> One field: the allocation's first cell and its size in bytes.
    type, bind(c), public :: haloport_field
        type(c_ptr) :: data = c_null_ptr
        integer(c_size_t) :: bytes = 0
    end type haloport_field

    public :: haloport_backend_new, haloport_backend_free
    public :: haloport_domain_new, haloport_domain_free, haloport_domain_set_procs, &
        haloport_domain_set_periodic, haloport_domain_set_halo, haloport_domain_set_pad, &
        haloport_domain_set_neighbourhood, haloport_domain_set_splits, haloport_domain_add_field
    public :: haloport_options_new, haloport_options_free, haloport_options_set_transport, &
        haloport_options_set_strategy, haloport_options_set_timeout, haloport_options_set_checked, &
        haloport_options_set_gpu_aware_mpi, haloport_options_set_routes_file
    public :: haloport_exchange_new, haloport_exchange_new_f, haloport_exchange_free, &
        haloport_exchange_start, haloport_exchange_finish, haloport_exchange_wait, &
        haloport_exchange_exchange, haloport_exchange_begin_capture, haloport_exchange_end_capture, &
        haloport_exchange_replay, haloport_graph_free, &
        haloport_exchange_local, haloport_exchange_allocation, haloport_exchange_process_grid, &
        haloport_exchange_field_bytes, haloport_exchange_neighbour_count, haloport_exchange_neighbour, &
        haloport_exchange_route
    public :: haloport_exchange_fuse, haloport_exchange_fused_start, haloport_exchange_fused_finish
    public :: haloport_version_number, haloport_version_text, haloport_backends_text, &
        haloport_status_text, haloport_error_message

    !> Collective over comm; options may be c_null_ptr. comm: an INTEGER handle here, or
    !> type(MPI_Comm) with module haloport_f08.
    interface haloport_exchange_new
        module procedure exchange_new_int
    end interface
    !> The stream: type(c_ptr) or integer(c_intptr_t) (CUDA Fortran's cuda_stream_kind).
    interface haloport_exchange_start
        module procedure start_ptr, start_int
    end interface
    interface haloport_exchange_finish
        module procedure finish_ptr, finish_int
    end interface
    interface haloport_exchange_exchange
        module procedure exchange_ptr, exchange_int
    end interface
    interface haloport_exchange_begin_capture
        module procedure begin_capture_ptr, begin_capture_int
    end interface
    interface haloport_exchange_end_capture
        module procedure end_capture_ptr, end_capture_int
    end interface
    interface haloport_exchange_replay
        module procedure replay_ptr, replay_int
    end interface
    !> Fused mode: set counts from 0; descriptors(F) receives one device address per field, for
    !> the application's own kernels (CUDA Fortran: type(c_ptr) to a haloport_fused there).
    interface haloport_exchange_fused_start
        module procedure fused_start_ptr, fused_start_int
    end interface
    interface haloport_exchange_fused_finish
        module procedure fused_finish_ptr, fused_finish_int
    end interface

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
        integer(c_int) function haloport_domain_set_splits(domain, dim, starts, count) &
                bind(c, name="haloport_domain_set_splits")
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
        integer(c_int) function haloport_options_set_gpu_aware_mpi(options, setting) &
                bind(c, name="haloport_options_set_gpu_aware_mpi")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: options
            integer(c_int32_t), value :: setting
        end function
        integer(c_int) function c_options_set_routes_file(options, path) &
                bind(c, name="haloport_options_set_routes_file")
            import :: c_int, c_char, c_ptr
            type(c_ptr), value :: options
            character(kind=c_char), intent(in) :: path(*)
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
        integer(c_int) function c_exchange_start(exchange, fields, count, stream) &
                bind(c, name="haloport_exchange_start")
            import :: c_int, c_size_t, c_ptr, haloport_field
            type(c_ptr), value :: exchange, stream
            type(haloport_field), intent(in) :: fields(*)
            integer(c_size_t), value :: count
        end function
        integer(c_int) function c_exchange_finish(exchange, stream) &
                bind(c, name="haloport_exchange_finish")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange, stream
        end function
        integer(c_int) function haloport_exchange_wait(exchange) bind(c, name="haloport_exchange_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange
        end function
        integer(c_int) function c_exchange_exchange(exchange, fields, count, stream) &
                bind(c, name="haloport_exchange_exchange")
            import :: c_int, c_size_t, c_ptr, haloport_field
            type(c_ptr), value :: exchange, stream
            type(haloport_field), intent(in) :: fields(*)
            integer(c_size_t), value :: count
        end function
        integer(c_int) function c_exchange_begin_capture(exchange, stream) &
                bind(c, name="haloport_exchange_begin_capture")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange, stream
        end function
        integer(c_int) function c_exchange_end_capture(exchange, stream, graph) &
                bind(c, name="haloport_exchange_end_capture")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange, stream
            type(c_ptr), intent(out) :: graph
        end function
        integer(c_int) function c_exchange_replay(exchange, graph, stream) &
                bind(c, name="haloport_exchange_replay")
            import :: c_int, c_ptr
            type(c_ptr), value :: exchange, graph, stream
        end function
        integer(c_int) function haloport_graph_free(graph) bind(c, name="haloport_graph_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: graph
        end function
        !> Collective: allocates sets x F fields (F: the domain's fields) through the library and
        !> writes their device addresses to fields(sets * F), set by set; they live until
        !> haloport_exchange_free (c_f_pointer gives Fortran arrays over them on the host backend).
        integer(c_int) function haloport_exchange_fuse(exchange, sets, fields) &
                bind(c, name="haloport_exchange_fuse")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_size_t), value :: sets
            type(c_ptr), intent(out) :: fields(*)
        end function
        integer(c_int) function c_exchange_fused_start(exchange, set, stream, descriptors) &
                bind(c, name="haloport_exchange_fused_start")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange, stream
            integer(c_size_t), value :: set
            type(c_ptr), intent(out) :: descriptors(*)
        end function
        integer(c_int) function c_exchange_fused_finish(exchange, set, stream) &
                bind(c, name="haloport_exchange_fused_finish")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange, stream
            integer(c_size_t), value :: set
        end function
        integer(c_int) function haloport_exchange_local(exchange, local, origin) &
                bind(c, name="haloport_exchange_local")
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_int64_t), intent(out) :: local(3), origin(3)
        end function
        !> alloc = halo_lo + local + halo_hi + pad per dimension.
        integer(c_int) function haloport_exchange_allocation(exchange, alloc, halo_lo, halo_hi, pad) &
                bind(c, name="haloport_exchange_allocation")
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_int64_t), intent(out) :: alloc(3), halo_lo(3), halo_hi(3), pad(3)
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
        integer(c_int) function c_exchange_route(exchange, index, locality, link, why) &
                bind(c, name="haloport_exchange_route")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: exchange
            integer(c_size_t), value :: index
            integer(c_int), intent(out) :: locality, link
            type(c_ptr), intent(out) :: why
        end function

        integer(c_int32_t) function haloport_version_number() bind(c, name="haloport_version_number")
            import :: c_int32_t
        end function
        type(c_ptr) function c_version() bind(c, name="haloport_version")
            import :: c_ptr
        end function
        type(c_ptr) function c_backends() bind(c, name="haloport_backends")
            import :: c_ptr
        end function
        type(c_ptr) function c_status_name(status) bind(c, name="haloport_status_name")
            import :: c_ptr, c_int32_t
            integer(c_int32_t), value :: status
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

    integer(c_int) function exchange_new_int(backend, comm, domain, options, out) result(status)
        type(c_ptr), intent(in) :: backend, domain, options
        integer, intent(in) :: comm
        type(c_ptr), intent(out) :: out
        status = haloport_exchange_new_f(backend, int(comm, c_int), domain, options, out)
    end function

    integer(c_int) function fused_start_ptr(exchange, set, stream, descriptors) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        integer(c_size_t), intent(in) :: set
        type(c_ptr), intent(out) :: descriptors(*)
        status = c_exchange_fused_start(exchange, set, stream, descriptors)
    end function
    integer(c_int) function fused_start_int(exchange, set, stream, descriptors) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_size_t), intent(in) :: set
        integer(c_intptr_t), intent(in) :: stream
        type(c_ptr), intent(out) :: descriptors(*)
        status = c_exchange_fused_start(exchange, set, transfer(stream, c_null_ptr), descriptors)
    end function
    integer(c_int) function fused_finish_ptr(exchange, set, stream) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        integer(c_size_t), intent(in) :: set
        status = c_exchange_fused_finish(exchange, set, stream)
    end function
    integer(c_int) function fused_finish_int(exchange, set, stream) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_size_t), intent(in) :: set
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_fused_finish(exchange, set, transfer(stream, c_null_ptr))
    end function

    integer(c_int) function start_ptr(exchange, fields, count, stream) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        type(haloport_field), intent(in) :: fields(*)
        integer(c_size_t), intent(in) :: count
        status = c_exchange_start(exchange, fields, count, stream)
    end function
    integer(c_int) function start_int(exchange, fields, count, stream) result(status)
        type(c_ptr), intent(in) :: exchange
        type(haloport_field), intent(in) :: fields(*)
        integer(c_size_t), intent(in) :: count
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_start(exchange, fields, count, transfer(stream, c_null_ptr))
    end function
    integer(c_int) function finish_ptr(exchange, stream) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        status = c_exchange_finish(exchange, stream)
    end function
    integer(c_int) function finish_int(exchange, stream) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_finish(exchange, transfer(stream, c_null_ptr))
    end function
    integer(c_int) function exchange_ptr(exchange, fields, count, stream) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        type(haloport_field), intent(in) :: fields(*)
        integer(c_size_t), intent(in) :: count
        status = c_exchange_exchange(exchange, fields, count, stream)
    end function
    integer(c_int) function exchange_int(exchange, fields, count, stream) result(status)
        type(c_ptr), intent(in) :: exchange
        type(haloport_field), intent(in) :: fields(*)
        integer(c_size_t), intent(in) :: count
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_exchange(exchange, fields, count, transfer(stream, c_null_ptr))
    end function
    integer(c_int) function begin_capture_ptr(exchange, stream) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        status = c_exchange_begin_capture(exchange, stream)
    end function
    integer(c_int) function begin_capture_int(exchange, stream) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_begin_capture(exchange, transfer(stream, c_null_ptr))
    end function
    integer(c_int) function end_capture_ptr(exchange, stream, graph) result(status)
        type(c_ptr), intent(in) :: exchange, stream
        type(c_ptr), intent(out) :: graph
        status = c_exchange_end_capture(exchange, stream, graph)
    end function
    integer(c_int) function end_capture_int(exchange, stream, graph) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_intptr_t), intent(in) :: stream
        type(c_ptr), intent(out) :: graph
        status = c_exchange_end_capture(exchange, transfer(stream, c_null_ptr), graph)
    end function
    integer(c_int) function replay_ptr(exchange, graph, stream) result(status)
        type(c_ptr), intent(in) :: exchange, graph, stream
        status = c_exchange_replay(exchange, graph, stream)
    end function
    integer(c_int) function replay_int(exchange, graph, stream) result(status)
        type(c_ptr), intent(in) :: exchange, graph
        integer(c_intptr_t), intent(in) :: stream
        status = c_exchange_replay(exchange, graph, transfer(stream, c_null_ptr))
    end function

    !> Reads the routes file at path (trailing blanks dropped) and applies it: the auto
    !> transport with the file's routes, and the settings it measured.
    integer(c_int) function haloport_options_set_routes_file(options, path) result(status)
        type(c_ptr), intent(in) :: options
        character(len=*), intent(in) :: path
        status = c_options_set_routes_file(options, trim(path) // c_null_char)
    end function

    !> Neighbour index's route (0-based, the order of haloport_exchange_neighbour): where it
    !> is (HALOPORT_LOCALITY_*), how its messages travel (HALOPORT_LINK_*) and why.
    integer(c_int) function haloport_exchange_route(exchange, index, locality, link, why) result(status)
        type(c_ptr), intent(in) :: exchange
        integer(c_size_t), intent(in) :: index
        integer(c_int), intent(out) :: locality, link
        character(len=:), allocatable, intent(out) :: why
        type(c_ptr) :: text
        status = c_exchange_route(exchange, index, locality, link, text)
        if (status == HALOPORT_STATUS_OK) then
            why = from_c(text)
        else
            why = ""
        end if
    end function

    !> A C string the library owns, as a Fortran string.
    function from_c(text) result(string)
        type(c_ptr), intent(in) :: text
        character(len=:), allocatable :: string
        character(kind=c_char), pointer :: chars(:)
        integer(c_size_t) :: n, i
        n = c_strlen(text)
        call c_f_pointer(text, chars, [n])
        allocate(character(len=n) :: string)
        do i = 1, n
            string(i:i) = chars(i)
        end do
    end function from_c

    !> The message of this thread's last failed call.
    function haloport_error_message() result(message)
        character(len=:), allocatable :: message
        message = from_c(c_last_error())
    end function haloport_error_message

    !> The name of a status ("HALOPORT_STATUS_TIMEOUT"), or "unknown status".
    function haloport_status_text(status) result(name)
        integer(c_int), intent(in) :: status
        character(len=:), allocatable :: name
        name = from_c(c_status_name(int(status, c_int32_t)))
    end function haloport_status_text

    !> The library's version ("0.1.0").
    function haloport_version_text() result(version)
        character(len=:), allocatable :: version
        version = from_c(c_version())
    end function haloport_version_text

    !> The backends built into the library ("host,cuda").
    function haloport_backends_text() result(backends)
        character(len=:), allocatable :: backends
        backends = from_c(c_backends())
    end function haloport_backends_text

end module haloport
