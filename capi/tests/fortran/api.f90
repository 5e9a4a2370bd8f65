! The Fortran module's surface on 2 ranks of the host backend, from an mpi_f08 program: the
! communicator as type(MPI_Comm), streams as integer(c_intptr_t) (what CUDA Fortran's
! integer(cuda_stream_kind) holds) and as type(c_ptr), the allocation read back with its high
! halos and padding, a routes file and each neighbour's route, fused mode's refusals, status
! names and the version. Prints one line per check; exits non-zero if any failed.
!
!   mpif90 api.f90 $(pkg-config --cflags --libs haloport-fortran haloport) -o api && mpirun -np 2 ./api
program api
    use, intrinsic :: iso_c_binding
    use mpi_f08
    use haloport_f08
    implicit none

    type(c_ptr) :: backend, domain, exchange, graph, options
    type(c_ptr) :: descriptors(1), fused(2)
    integer(c_int64_t) :: local(3), origin(3), alloc(3), halo_lo(3), halo_hi(3), pad(3)
    integer(c_size_t) :: bytes
    real(c_double), allocatable, target :: u(:)
    type(haloport_field) :: fields(1)
    integer(c_intptr_t), parameter :: default_stream = 0
    integer :: rank, failures, total, unit
    integer(c_size_t) :: count, i
    integer(c_int32_t) :: direction(3), peer
    integer(c_int) :: link, routed, locality
    character(len=:), allocatable :: why
    character(len=512) :: tmp, routes
    logical :: as_filed

    failures = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call expect("the version", haloport_version_number() == 100 .and. len(haloport_version_text()) > 0)
    call expect("the host backend is built", index(haloport_backends_text(), "host") > 0)
    call expect("a status's name", haloport_status_text(HALOPORT_STATUS_TIMEOUT) == "HALOPORT_STATUS_TIMEOUT")
    call expect("an unknown status's name", haloport_status_text(99_c_int) == "unknown status")

    call expect("the backend", haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0_c_int32_t, backend) &
        == HALOPORT_STATUS_OK)
    call expect("the domain", haloport_domain_new([16_c_int64_t, 8_c_int64_t, 8_c_int64_t], domain) &
        == HALOPORT_STATUS_OK)
    call expect("halos 1/1/1 and 2/1/0", haloport_domain_set_halo(domain, [1_c_int32_t, 1_c_int32_t, 1_c_int32_t], &
        [2_c_int32_t, 1_c_int32_t, 0_c_int32_t]) == HALOPORT_STATUS_OK)
    call expect("padding 3/0/1", haloport_domain_set_pad(domain, [3_c_int32_t, 0_c_int32_t, 1_c_int32_t]) &
        == HALOPORT_STATUS_OK)
    call expect("a field", haloport_domain_add_field(domain, 8_c_int32_t, 1_c_int32_t) == HALOPORT_STATUS_OK)
    call expect("the exchange over a type(MPI_Comm)", &
        haloport_exchange_new(backend, MPI_COMM_WORLD, domain, c_null_ptr, exchange) == HALOPORT_STATUS_OK)
    call expect("its part", haloport_exchange_local(exchange, local, origin) == HALOPORT_STATUS_OK)
    call expect("its allocation", &
        haloport_exchange_allocation(exchange, alloc, halo_lo, halo_hi, pad) == HALOPORT_STATUS_OK)
    call expect("halo_hi and pad read back", all(halo_lo == [1, 1, 1]) .and. all(halo_hi == [2, 1, 0]) &
        .and. all(pad == [3, 0, 1]) .and. all(alloc == halo_lo + local + halo_hi + pad))
    call expect("the field's size", haloport_exchange_field_bytes(exchange, 0_c_size_t, bytes) == HALOPORT_STATUS_OK)
    allocate(u(bytes / 8))
    u = 0
    fields(1) = haloport_field(c_loc(u), bytes)
    call expect("an exchange on an integer(c_intptr_t) stream", &
        haloport_exchange_exchange(exchange, fields, 1_c_size_t, default_stream) == HALOPORT_STATUS_OK)
    call expect("start on an integer(c_intptr_t) stream", &
        haloport_exchange_start(exchange, fields, 1_c_size_t, default_stream) == HALOPORT_STATUS_OK)
    call expect("finish on a type(c_ptr) stream", haloport_exchange_finish(exchange, c_null_ptr) == HALOPORT_STATUS_OK)
    call expect("wait", haloport_exchange_wait(exchange) == HALOPORT_STATUS_OK)
    call expect("a count that does not fit the declaration", &
        haloport_exchange_exchange(exchange, fields, 1000000_c_size_t, default_stream) == HALOPORT_STATUS_INVALID_INPUT)
    call expect("... named in the message", index(haloport_error_message(), "1000000 were given") > 0)
    call expect("host-staged messages cannot be captured", &
        haloport_exchange_begin_capture(exchange, default_stream) == HALOPORT_STATUS_INVALID_INPUT)
    call expect("so there is no graph to end", &
        haloport_exchange_end_capture(exchange, default_stream, graph) == HALOPORT_STATUS_USAGE)
    call expect("fused_start before fuse", haloport_exchange_fused_start(exchange, 0_c_size_t, default_stream, &
        descriptors) == HALOPORT_STATUS_USAGE)
    call expect("fused_finish before fuse", &
        haloport_exchange_fused_finish(exchange, 0_c_size_t, c_null_ptr) == HALOPORT_STATUS_USAGE)
    call expect("fuse with host-staged neighbours (an ordinary exchange serves them)", &
        haloport_exchange_fuse(exchange, 2_c_size_t, fused) == HALOPORT_STATUS_OK)
    call expect("freeing the exchange", haloport_exchange_free(exchange) == HALOPORT_STATUS_OK)

    ! A routes file (as haloport tune writes it) putting mpi before ipc within the node.
    call get_environment_variable("TMPDIR", tmp)
    if (len_trim(tmp) == 0) tmp = "/tmp"
    write(routes, '(a, a, i0, a)') trim(tmp), "/haloport-routes-fortran-", rank, ".json"
    open(newunit=unit, file=trim(routes), status="replace", action="write")
    write(unit, '(a)') '{"schema": "haloport-routes/1", "within_node": ["mpi", "ipc"], "between_nodes": ["mpi"]}'
    close(unit)
    call expect("options", haloport_options_new(options) == HALOPORT_STATUS_OK)
    call expect("a routes file that does not exist", &
        haloport_options_set_routes_file(options, trim(routes) // ".missing") == HALOPORT_STATUS_INVALID_INPUT)
    call expect("... named in the message", index(haloport_error_message(), trim(routes) // ".missing") > 0)
    call expect("the routes file", haloport_options_set_routes_file(options, routes) == HALOPORT_STATUS_OK)
    call expect("an exchange with its routes", &
        haloport_exchange_new(backend, MPI_COMM_WORLD, domain, options, exchange) == HALOPORT_STATUS_OK)
    call expect("the neighbour count", haloport_exchange_neighbour_count(exchange, count) == HALOPORT_STATUS_OK)
    as_filed = .true.
    do i = 0, count - 1
        as_filed = as_filed .and. haloport_exchange_neighbour(exchange, i, direction, peer, link) == HALOPORT_STATUS_OK
        as_filed = as_filed .and. haloport_exchange_route(exchange, i, locality, routed, why) == HALOPORT_STATUS_OK
        if (peer == rank) then
            as_filed = as_filed .and. locality == HALOPORT_LOCALITY_ITSELF .and. routed == HALOPORT_LINK_LOCAL
        else
            as_filed = as_filed .and. locality == HALOPORT_LOCALITY_SAME_NODE .and. routed == HALOPORT_LINK_STAGED &
                .and. index(why, "routes given: the first of [mpi, ipc]") > 0
        end if
    end do
    call expect("every other rank's neighbour takes mpi, the file's first, saying why", as_filed)
    call expect("a neighbour beyond the count", &
        haloport_exchange_route(exchange, count, locality, routed, why) == HALOPORT_STATUS_INVALID_INPUT)
    call expect("freeing that exchange", haloport_exchange_free(exchange) == HALOPORT_STATUS_OK)
    call expect("freeing the options", haloport_options_free(options) == HALOPORT_STATUS_OK)
    open(newunit=unit, file=trim(routes), status="old")
    close(unit, status="delete")

    call expect("freeing the domain", haloport_domain_free(domain) == HALOPORT_STATUS_OK)
    call expect("freeing the backend", haloport_backend_free(backend) == HALOPORT_STATUS_OK)

    call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) print '(a, i0)', "fortran api: failed checks on all ranks: ", total
    call MPI_Finalize()
    if (total /= 0) error stop 1

contains

    subroutine expect(what, ok)
        character(len=*), intent(in) :: what
        logical, intent(in) :: ok
        if (.not. ok) then
            failures = failures + 1
            print '(a, i0, a, a, a, a)', "rank ", rank, ": FAIL - ", what, ": ", haloport_error_message()
        else if (rank == 0) then
            print '(a, a)', "rank 0: ok - ", what
        end if
    end subroutine

end program api
