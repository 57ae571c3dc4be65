! The `use mpi_f08` counterpart of fortran_check.f90: a plain Fortran 2008 MPI program whose
! receives of derived datatypes are checked against values computed independently, through
! every completion call, persistent requests, MPI_TYPE_DUP and MPI_COMM_FREE. Run on 2 ranks,
! natively and under loomrun: both runs must print the same lines. LOOM_TEST_INIT_THREAD=1
! starts MPI with MPI_INIT_THREAD.
program fortran_check_f08
  use check_counts
  use mpi_f08
  implicit none
  integer, parameter :: n = 3999, elements = 1333
  integer :: rank, nranks, peer, provided, mode_length
  type(MPI_Datatype) :: vec, vec_dup, face, half
  ! half: every other double of the first half of a buffer, one block per rank in all-to-alls
  integer, parameter :: half_count = 900, half_extent = 2 * half_count - 1
  double precision :: dsend(n), drecv(n)
  real :: grid(16, 12, 10), rgrid(16, 12, 10)
  character(len=16) :: init_mode

  call get_environment_variable('LOOM_TEST_INIT_THREAD', init_mode, mode_length)
  if (mode_length > 0) then
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
  else
    call MPI_Init()
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  if (nranks /= 2) then
    if (rank == 0) print '(a)', 'fortran_check_f08 needs exactly 2 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2)
  end if
  peer = 1 - rank
  check_rank = rank

  ! 8-byte blocks at spread 3, and the y-face of a Fortran-order grid of reals.
  call MPI_Type_vector(elements, 1, 3, MPI_DOUBLE_PRECISION, vec)
  call MPI_Type_commit(vec)
  call MPI_Type_create_subarray(3, [16, 12, 10], [16, 2, 10], [0, 3, 0], MPI_ORDER_FORTRAN, &
                                MPI_REAL, face)
  call MPI_Type_commit(face)
  call MPI_Type_dup(vec, vec_dup)
  call MPI_Type_vector(half_count, 1, 2, MPI_DOUBLE_PRECISION, half)
  call MPI_Type_commit(half)

  call check_wait_and_waitall()
  call check_any_and_some()
  call check_tests()
  call check_persistent()
  call check_comm_free()
  call check_self()
  call check_collectives()

  call MPI_Type_free(vec_dup)
  call expect(vec_dup == MPI_DATATYPE_NULL, 'MPI_Type_free returns MPI_DATATYPE_NULL')
  call MPI_Type_free(vec)
  call MPI_Type_free(face)
  call MPI_Type_free(half)
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (failures == 0) then
      print '(a,i0,a)', 'fortran_check_f08: OK, ', cases, ' checks'
    else
      print '(a,i0,a,i0,a)', 'fortran_check_f08: FAILED, ', failures, ' of ', cases, ' checks'
    end if
  end if
  call MPI_Finalize()
  if (failures /= 0) stop 1

contains

  ! Send buffers hold a pattern of (seed, sender); receive buffers a sentinel.
  subroutine fill(seed)
    integer, intent(in) :: seed
    integer :: i, j, k
    do i = 1, n
      dsend(i) = dble(seed) * 1000003.d0 + dble(rank) * 7919.d0 + dble(i)
    end do
    do k = 1, 10
      do j = 1, 12
        do i = 1, 16
          grid(i, j, k) = real(seed * 1000 + rank * 100000 + i + 16 * j + 192 * k)
        end do
      end do
    end do
    drecv = -1.d0
    rgrid = -1.0
  end subroutine

  ! What the receive buffers hold once the peer's fill(seed) arrived: computed here, not
  ! by any MPI.
  subroutine expect_from_peer(seed, what)
    integer, intent(in) :: seed
    character(len=*), intent(in) :: what
    double precision :: expected(n)
    real :: expected_grid(16, 12, 10)
    integer :: i, j, k
    expected = -1.d0
    do i = 1, n, 3
      expected(i) = dble(seed) * 1000003.d0 + dble(peer) * 7919.d0 + dble(i)
    end do
    expected_grid = -1.0
    do k = 1, 10
      do j = 4, 5
        do i = 1, 16
          expected_grid(i, j, k) = real(seed * 1000 + peer * 100000 + i + 16 * j + 192 * k)
        end do
      end do
    end do
    call expect(all(drecv == expected), what // ': vector')
    call expect(all(rgrid == expected_grid), what // ': grid face')
  end subroutine

  subroutine expect_status(status, type, what)
    type(MPI_Status), intent(in) :: status
    type(MPI_Datatype), intent(in) :: type
    character(len=*), intent(in) :: what
    integer :: count
    call MPI_Get_count(status, type, count)
    call expect(status%MPI_SOURCE == peer .and. count == 1, what // ': status')
  end subroutine

  subroutine post(reqs)
    type(MPI_Request), intent(out) :: reqs(4)
    call MPI_Irecv(drecv, 1, vec, peer, 1, MPI_COMM_WORLD, reqs(1))
    call MPI_Irecv(rgrid, 1, face, peer, 2, MPI_COMM_WORLD, reqs(2))
    call MPI_Isend(dsend, 1, vec, peer, 1, MPI_COMM_WORLD, reqs(3))
    call MPI_Isend(grid, 1, face, peer, 2, MPI_COMM_WORLD, reqs(4))
  end subroutine

  subroutine check_wait_and_waitall()
    type(MPI_Request) :: reqs(4)
    type(MPI_Status) :: status, statuses(4)
    call fill(1)
    call post(reqs)
    call MPI_Wait(reqs(1), status)
    call expect(reqs(1) == MPI_REQUEST_NULL, 'MPI_Wait frees the request')
    call expect_status(status, vec, 'MPI_Wait')
    call MPI_Waitall(4, reqs, statuses)
    call expect(all(reqs == MPI_REQUEST_NULL), 'MPI_Waitall frees every request')
    call expect_status(statuses(2), face, 'MPI_Waitall')
    call expect_from_peer(1, 'MPI_Wait/MPI_Waitall')
    call fill(2)
    call post(reqs)
    call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE)
    call expect_from_peer(2, 'MPI_Waitall, MPI_STATUSES_IGNORE')
  end subroutine

  subroutine check_any_and_some()
    type(MPI_Request) :: reqs(4)
    type(MPI_Status) :: status, statuses(4)
    integer :: index, outcount, indices(4), done, i
    logical :: some_ok
    call fill(3)
    call post(reqs)
    call MPI_Waitany(4, reqs, index, status)
    call expect(index >= 1 .and. index <= 4, 'MPI_Waitany: 1-based index')
    call expect(reqs(index) == MPI_REQUEST_NULL, 'MPI_Waitany frees the request it returns')
    ! How many calls MPI_Waitsome takes depends on timing; the checks are counted once.
    done = 1
    some_ok = .true.
    do while (done < 4 .and. some_ok)
      call MPI_Waitsome(4, reqs, outcount, indices, statuses)
      some_ok = outcount >= 1
      do i = 1, max(outcount, 0)
        some_ok = some_ok .and. reqs(indices(i)) == MPI_REQUEST_NULL
      end do
      done = done + max(outcount, 0)
    end do
    call expect(some_ok, 'MPI_Waitsome: 1-based indices')
    call MPI_Waitany(4, reqs, index, MPI_STATUS_IGNORE)
    call expect(index == MPI_UNDEFINED, 'MPI_Waitany on null requests: MPI_UNDEFINED')
    call expect_from_peer(3, 'MPI_Waitany/MPI_Waitsome')
  end subroutine

  subroutine check_tests()
    type(MPI_Request) :: reqs(4), req
    type(MPI_Status) :: status, statuses(4)
    integer :: index, outcount, indices(4), done
    logical :: flag
    call fill(4)
    call post(reqs)
    flag = .false.
    do while (.not. flag)
      call MPI_Request_get_status(reqs(1), flag, status)
    end do
    call expect(reqs(1) /= MPI_REQUEST_NULL, 'MPI_Request_get_status keeps the request')
    flag = .false.
    do while (.not. flag)
      call MPI_Test(reqs(1), flag, status)
    end do
    call expect(reqs(1) == MPI_REQUEST_NULL, 'MPI_Test frees the request')
    call expect_status(status, vec, 'MPI_Test')
    flag = .false.
    do while (.not. flag)
      call MPI_Testany(4, reqs, index, flag, status)
    end do
    call expect(index >= 2 .and. index <= 4, 'MPI_Testany: 1-based index')
    done = 2
    do while (done < 3)
      call MPI_Testsome(4, reqs, outcount, indices, statuses)
      if (outcount > 0) done = done + outcount
    end do
    flag = .false.
    do while (.not. flag)
      call MPI_Testall(4, reqs, flag, statuses)
    end do
    call expect(all(reqs == MPI_REQUEST_NULL), 'MPI_Testall frees every request')
    call expect_from_peer(4, 'MPI_Test/MPI_Testany/MPI_Testsome/MPI_Testall')
    ! A send request freed while active still delivers its message.
    call fill(5)
    call MPI_Irecv(drecv, 1, vec, peer, 3, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(dsend, 1, vec, peer, 3, MPI_COMM_WORLD, req)
    call MPI_Request_free(req)
    call expect(req == MPI_REQUEST_NULL, 'MPI_Request_free returns MPI_REQUEST_NULL')
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
    call MPI_Barrier(MPI_COMM_WORLD)
    rgrid = -1.0
    call MPI_Sendrecv(grid, 1, face, peer, 4, rgrid, 1, face, peer, 4, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE)
    call expect_from_peer(5, 'MPI_Request_free on an active send')
  end subroutine

  subroutine check_persistent()
    type(MPI_Request) :: reqs(4)
    integer :: iteration
    call MPI_Recv_init(drecv, 1, vec_dup, peer, 6, MPI_COMM_WORLD, reqs(1))
    call MPI_Recv_init(rgrid, 1, face, peer, 7, MPI_COMM_WORLD, reqs(2))
    call MPI_Send_init(dsend, 1, vec_dup, peer, 6, MPI_COMM_WORLD, reqs(3))
    call MPI_Send_init(grid, 1, face, peer, 7, MPI_COMM_WORLD, reqs(4))
    do iteration = 1, 4
      call fill(10 + iteration)
      if (mod(iteration, 2) == 0) then
        call MPI_Startall(4, reqs)
      else
        call MPI_Start(reqs(1))
        call MPI_Start(reqs(2))
        call MPI_Start(reqs(3))
        call MPI_Start(reqs(4))
      end if
      call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE)
      call expect(all(reqs /= MPI_REQUEST_NULL), 'MPI_Waitall keeps persistent requests')
      call expect_from_peer(10 + iteration, 'MPI_Start/MPI_Startall')
    end do
    call MPI_Request_free(reqs(1))
    call MPI_Request_free(reqs(2))
    call MPI_Request_free(reqs(3))
    call MPI_Request_free(reqs(4))
  end subroutine

  subroutine check_comm_free()
    type(MPI_Comm) :: dup
    type(MPI_Request) :: reqs(4)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call fill(20)
    call MPI_Irecv(drecv, 1, vec, peer, 1, dup, reqs(1))
    call MPI_Irecv(rgrid, 1, face, peer, 2, dup, reqs(2))
    call MPI_Isend(dsend, 1, vec, peer, 1, dup, reqs(3))
    call MPI_Isend(grid, 1, face, peer, 2, dup, reqs(4))
    call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE)
    call expect_from_peer(20, 'a duplicated communicator')
    call MPI_Comm_free(dup)
    call expect(dup == MPI_COMM_NULL, 'MPI_Comm_free returns MPI_COMM_NULL')
  end subroutine

  ! Collectives of derived types: on MPICH the f08 module starts them through the C entry
  ! points (Loom stages them) and completes them through PMPI_Wait, which left the receive
  ! buffer unfilled before Loom wrapped MPI_Wait_f08.
  ! Messages to oneself (Loom's channel, on a communicator of their own): MPI_Iprobe and
  ! MPI_Probe see a queued message, and MPI_Cancel withdraws a receive posted before its send.
  subroutine check_self()
    type(MPI_Comm) :: comm
    type(MPI_Request) :: req
    type(MPI_Status) :: status
    logical :: flag
    integer :: count, i
    double precision :: expected(n)
    call fill(40)
    call MPI_Comm_dup(MPI_COMM_WORLD, comm)
    drecv = -1.d0
    call MPI_Isend(dsend, 1, vec, rank, 7, comm, req)
    call MPI_Iprobe(rank, 7, comm, flag, status)
    call MPI_Get_count(status, vec, count)
    call expect(flag .and. count == 1 .and. status%MPI_SOURCE == rank, &
                'MPI_Iprobe finds a message to oneself')
    call MPI_Probe(rank, MPI_ANY_TAG, comm, status)
    call expect(status%MPI_TAG == 7, 'MPI_Probe to oneself: tag')
    call MPI_Recv(drecv, 1, vec, rank, 7, comm, status)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    expected = -1.d0
    do i = 1, n, 3
      expected(i) = dsend(i)
    end do
    call expect(all(drecv == expected), 'a message to oneself: vector')
    call MPI_Irecv(drecv, 1, vec, rank, 8, comm, req)
    call MPI_Cancel(req)
    call MPI_Wait(req, status)
    call MPI_Test_cancelled(status, flag)
    call expect(flag, 'MPI_Cancel of a receive from oneself')
    drecv = -1.d0
    ! Non-blocking: a blocking send to oneself before its receive may wait forever.
    call MPI_Isend(dsend, 1, vec, rank, 8, comm, req)
    call expect(all(drecv == -1.d0), 'a cancelled receive from oneself gets nothing')
    call MPI_Recv(drecv, 1, vec, rank, 8, comm, MPI_STATUS_IGNORE)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call expect(all(drecv == expected), 'a message to oneself after a cancel: vector')
    call MPI_Comm_free(comm)
  end subroutine

  subroutine check_collectives()
    type(MPI_Request) :: req
    integer :: iteration, k, j
    logical :: ok
    do iteration = 1, 2
      call fill(30 + iteration)
      drecv = -1.d0
      if (iteration == 1) then
        call MPI_Alltoall(dsend, 1, half, drecv, 1, half, MPI_COMM_WORLD)
      else
        call MPI_Ialltoall(dsend, 1, half, drecv, 1, half, MPI_COMM_WORLD, req)
        call MPI_Wait(req, MPI_STATUS_IGNORE)
      end if
      ! Block j of rank r's send starts at element 1 + j * extent; it lands at 1 + r * extent.
      ok = .true.
      do j = 0, 1
        do k = 0, half_count - 1
          ok = ok .and. drecv(1 + j * half_extent + 2 * k) == dble(30 + iteration) * 1000003.d0 &
               + dble(j) * 7919.d0 + dble(1 + rank * half_extent + 2 * k)
        end do
      end do
      if (iteration == 1) then
        call expect(ok, 'MPI_Alltoall of a vector')
      else
        call expect(ok, 'MPI_Ialltoall of a vector, completed by MPI_Wait')
      end if
    end do
  end subroutine

end program
