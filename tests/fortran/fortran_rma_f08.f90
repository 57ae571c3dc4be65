! One-sided communication from `use mpi_f08`: an MPI_Win_create window, gets and puts whose origin
! is a vector of doubles, under fence, post/start/complete/wait, lock/unlock and lock_all with
! flushes, every result checked against values computed here. MPICH's mpi_f08 synchronises
! through PMPI_* directly; Loom's wrappers (interpose/fortran/mpich.cpp) must see those calls,
! or a get Loom staged would never land. Run on 2 ranks, natively and under loomrun.
program fortran_rma_f08
  use check_counts
  use mpi_f08
  implicit none
  integer, parameter :: n = 4000, elements = 1200
  integer :: rank, nranks, peer, provided, mode_length, i, round
  type(MPI_Datatype) :: vec
  type(MPI_Win) :: win
  type(MPI_Group) :: world, peer_group
  double precision, target :: memory(n)
  double precision :: origin(3 * elements), expected(3 * elements)
  integer(kind=MPI_ADDRESS_KIND) :: bytes, at
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
    if (rank == 0) print '(a)', 'fortran_rma_f08 needs exactly 2 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2)
  end if
  peer = 1 - rank
  check_rank = rank
  call MPI_Comm_group(MPI_COMM_WORLD, world)
  call MPI_Group_incl(world, 1, [peer], peer_group)

  call MPI_Type_vector(elements, 1, 3, MPI_DOUBLE_PRECISION, vec)
  call MPI_Type_commit(vec)
  bytes = 8 * n
  call MPI_Win_create(memory, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win)

  do round = 1, 4
    ! Gets: the peer's first `elements` doubles into every third double of origin.
    call fill(round)
    call open_epoch(round)
    at = 0
    call MPI_Get(origin, 1, vec, peer, at, elements, MPI_DOUBLE_PRECISION, win)
    call close_epoch(round)
    expected = -1.d0
    do i = 1, elements
      expected(3 * i - 2) = value(round, peer, i)
    end do
    call expect(all(origin == expected), 'get, ' // epoch_name(round))
    call MPI_Barrier(MPI_COMM_WORLD)

    ! Puts: every third double of origin into the peer's doubles from 2001 on.
    call fill(round + 10)
    do i = 1, 3 * elements
      origin(i) = dble(round * 100000 + rank * 10000 + i)
    end do
    call MPI_Barrier(MPI_COMM_WORLD)
    call open_epoch(round)
    at = 2000
    call MPI_Put(origin, 1, vec, peer, at, elements, MPI_DOUBLE_PRECISION, win)
    call close_epoch(round)
    call MPI_Barrier(MPI_COMM_WORLD)
    do i = 1, elements
      if (memory(2000 + i) /= dble(round * 100000 + peer * 10000 + 3 * i - 2)) exit
    end do
    call expect(i > elements, 'put, ' // epoch_name(round))
    call MPI_Barrier(MPI_COMM_WORLD)
  end do

  call MPI_Win_free(win)
  call MPI_Type_free(vec)
  call MPI_Group_free(peer_group)
  call MPI_Group_free(world)
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (failures == 0) then
      print '(a,i0,a)', 'fortran_rma_f08: OK, ', cases, ' checks'
    else
      print '(a,i0,a,i0,a)', 'fortran_rma_f08: FAILED, ', failures, ' of ', cases, ' checks'
    end if
  end if
  call MPI_Finalize()
  if (failures /= 0) stop 1

contains

  double precision function value(seed, owner, i)
    integer, intent(in) :: seed, owner, i
    value = dble(seed * 1000 + owner * 100000 + i)
  end function

  ! This rank's window holds value(seed, rank, i); origin a sentinel. Every rank has filled
  ! before any epoch opens.
  subroutine fill(seed)
    integer, intent(in) :: seed
    integer :: k
    do k = 1, n
      memory(k) = value(seed, rank, k)
    end do
    origin = -1.d0
    call MPI_Barrier(MPI_COMM_WORLD)
  end subroutine

  character(len=16) function epoch_name(kind)
    integer, intent(in) :: kind
    select case (kind)
    case (1)
      epoch_name = 'fence'
    case (2)
      epoch_name = 'pscw'
    case (3)
      epoch_name = 'lock'
    case default
      epoch_name = 'lock_all+flush'
    end select
  end function

  subroutine open_epoch(kind)
    integer, intent(in) :: kind
    select case (kind)
    case (1)
      call MPI_Win_fence(MPI_MODE_NOPRECEDE, win)
    case (2)
      call MPI_Win_post(peer_group, 0, win)
      call MPI_Win_start(peer_group, 0, win)
    case (3)
      call MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win)
    case default
      call MPI_Win_lock_all(0, win)
    end select
  end subroutine

  subroutine close_epoch(kind)
    integer, intent(in) :: kind
    select case (kind)
    case (1)
      call MPI_Win_fence(MPI_MODE_NOSUCCEED, win)
    case (2)
      call MPI_Win_complete(win)
      call MPI_Win_wait(win)
    case (3)
      call MPI_Win_unlock(peer, win)
    case default
      call MPI_Win_flush(peer, win)
      call MPI_Win_flush_local_all(win)
      call MPI_Win_unlock_all(win)
    end select
  end subroutine

end program
