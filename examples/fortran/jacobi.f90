! A 7-point Jacobi solver in Fortran on haloport's host backend: the application's own arrays
! and loops, haloport filling the halos through its Fortran module. Verified bit-for-bit against
! one rank computing the whole grid.
!
!   mpif90 jacobi.f90 $(pkg-config --cflags --libs haloport-fortran haloport) -o jacobi
!   mpirun -np 4 ./jacobi
program jacobi
    use, intrinsic :: iso_c_binding
    use mpi
    use haloport
    implicit none

    integer(c_int64_t), parameter :: grid(3) = [40_c_int64_t, 36_c_int64_t, 32_c_int64_t]
    integer, parameter :: steps = 10
    type(c_ptr) :: backend, domain, exchange
    integer(c_int64_t) :: local(3), origin(3), alloc(3), halo_lo(3), halo_hi(3), pad(3)
    integer(c_size_t) :: bytes
    real(c_double), allocatable, target :: u(:, :, :), v(:, :, :), ru(:, :, :), rv(:, :, :)
    type(haloport_field) :: fields(1)
    integer :: ierr, rank, ranks, s
    integer(c_int64_t) :: x, y, z
    integer :: mismatches, total
    real(c_double) :: t0, per_step

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, ranks, ierr)

    ! Declare: periodic everywhere, one halo cell, faces only, one field of doubles.
    call check(haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0_c_int32_t, backend), "backend")
    call check(haloport_domain_new(grid, domain), "domain")
    call check(haloport_domain_set_periodic(domain, [1_c_int32_t, 1_c_int32_t, 1_c_int32_t]), "periodic")
    call check(haloport_domain_set_halo(domain, [1_c_int32_t, 1_c_int32_t, 1_c_int32_t], &
                                        [1_c_int32_t, 1_c_int32_t, 1_c_int32_t]), "halo")
    call check(haloport_domain_set_neighbourhood(domain, HALOPORT_NEIGHBOURHOOD_FACES), "faces")
    call check(haloport_domain_add_field(domain, 8_c_int32_t, 1_c_int32_t), "field")
    call check(haloport_exchange_new(backend, MPI_COMM_WORLD, domain, c_null_ptr, exchange), "exchange")
    call check(haloport_domain_free(domain), "domain free")
    call check(haloport_backend_free(backend), "backend free")

    call check(haloport_exchange_local(exchange, local, origin), "local")
    call check(haloport_exchange_allocation(exchange, alloc, halo_lo, halo_hi, pad), "allocation")
    call check(haloport_exchange_field_bytes(exchange, 0_c_size_t, bytes), "field bytes")
    ! x varies fastest in a Fortran array's first index: the layout haloport expects.
    allocate(u(0:alloc(1) - 1, 0:alloc(2) - 1, 0:alloc(3) - 1), source=0.0_c_double)
    allocate(v, mold=u)
    v = 0
    do z = 0, local(3) - 1
        do y = 0, local(2) - 1
            do x = 0, local(1) - 1
                u(halo_lo(1) + x, halo_lo(2) + y, halo_lo(3) + z) = &
                    initial(origin(1) + x, origin(2) + y, origin(3) + z)
            end do
        end do
    end do

    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    t0 = MPI_Wtime()
    do s = 1, steps
        fields(1) = haloport_field(c_loc(u), bytes)
        call check(haloport_exchange_exchange(exchange, fields, 1_c_size_t, c_null_ptr), "exchange")
        call step(u, v, halo_lo, halo_lo + local - 1)
        call swap(u, v)
    end do
    per_step = (MPI_Wtime() - t0) / steps
    call check(haloport_exchange_free(exchange), "exchange free")

    ! The reference: this rank computes the whole grid alone (periodic), and compares its part.
    allocate(ru(0:grid(1) - 1, 0:grid(2) - 1, 0:grid(3) - 1), rv(0:grid(1) - 1, 0:grid(2) - 1, 0:grid(3) - 1))
    do z = 0, grid(3) - 1
        do y = 0, grid(2) - 1
            do x = 0, grid(1) - 1
                ru(x, y, z) = initial(x, y, z)
            end do
        end do
    end do
    do s = 1, steps
        call step_periodic(ru, rv)
        call swap(ru, rv)
    end do
    mismatches = 0
    do z = 0, local(3) - 1
        do y = 0, local(2) - 1
            do x = 0, local(1) - 1
                if (transfer(u(halo_lo(1) + x, halo_lo(2) + y, halo_lo(3) + z), 0_c_int64_t) /= &
                    transfer(ru(origin(1) + x, origin(2) + y, origin(3) + z), 0_c_int64_t)) &
                    mismatches = mismatches + 1
            end do
        end do
    end do
    call MPI_Allreduce(mismatches, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        write (*, '(i0, a, f0.1, a)') ranks, " ranks, 40x36x32, 10 steps of the Fortran solver on the host backend: ", &
            per_step * 1.0d6, " us per step"
        if (total == 0) then
            print '(a)', "verified: bit-for-bit equal to one rank computing the whole grid"
        else
            print '(a, i0, a)', "MISMATCH: ", total, " cells differ from one rank computing the whole grid"
        end if
    end if
    call MPI_Finalize(ierr)
    if (total /= 0) error stop 1

contains

    pure real(c_double) function initial(gx, gy, gz)
        integer(c_int64_t), intent(in) :: gx, gy, gz
        initial = real(mod(gx * 7 + gy * 13 + gz * 29, 101_c_int64_t), c_double) / 101.0_c_double
    end function

    ! Each cell of [lo, hi] becomes the mean of itself and its 6 face neighbours, summed in one
    ! fixed order (the same as the reference's).
    subroutine step(a, b, lo, hi)
        real(c_double), intent(in) :: a(0:, 0:, 0:)
        real(c_double), intent(inout) :: b(0:, 0:, 0:)
        integer(c_int64_t), intent(in) :: lo(3), hi(3)
        integer(c_int64_t) :: i, j, k
        real(c_double) :: t
        do k = lo(3), hi(3)
            do j = lo(2), hi(2)
                do i = lo(1), hi(1)
                    t = a(i, j, k)
                    t = t + a(i - 1, j, k)
                    t = t + a(i + 1, j, k)
                    t = t + a(i, j - 1, k)
                    t = t + a(i, j + 1, k)
                    t = t + a(i, j, k - 1)
                    t = t + a(i, j, k + 1)
                    b(i, j, k) = t / 7.0_c_double
                end do
            end do
        end do
    end subroutine

    subroutine step_periodic(a, b)
        real(c_double), intent(in) :: a(0:, 0:, 0:)
        real(c_double), intent(inout) :: b(0:, 0:, 0:)
        integer(c_int64_t) :: i, j, k, n(3)
        real(c_double) :: t
        n = shape(a, kind=c_int64_t)
        do k = 0, n(3) - 1
            do j = 0, n(2) - 1
                do i = 0, n(1) - 1
                    t = a(i, j, k)
                    t = t + a(modulo(i - 1, n(1)), j, k)
                    t = t + a(modulo(i + 1, n(1)), j, k)
                    t = t + a(i, modulo(j - 1, n(2)), k)
                    t = t + a(i, modulo(j + 1, n(2)), k)
                    t = t + a(i, j, modulo(k - 1, n(3)))
                    t = t + a(i, j, modulo(k + 1, n(3)))
                    b(i, j, k) = t / 7.0_c_double
                end do
            end do
        end do
    end subroutine

    subroutine swap(a, b)
        real(c_double), allocatable, intent(inout) :: a(:, :, :), b(:, :, :)
        real(c_double), allocatable :: t(:, :, :)
        call move_alloc(a, t)
        call move_alloc(b, a)
        call move_alloc(t, b)
    end subroutine

    ! Ends the job on any failure, naming the step and haloport's message.
    subroutine check(status, what)
        integer(c_int), intent(in) :: status
        character(len=*), intent(in) :: what
        integer :: e
        if (status /= HALOPORT_STATUS_OK) then
            write (*, '(a, a, a, a, a)') what, ": ", haloport_status_text(status), ": ", haloport_error_message()
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine

end program jacobi
