! A plain Fortran ping-pong of derived datatypes (mpif.h, no Loom headers), to time a
! Fortran application natively and under loomrun:
!   mpiexec -n 2 ./fortran_pingpong ; loomrun -n 2 ./fortran_pingpong
! Prints the one-way time per message (median of 11 batches) for 8-byte blocks at a stride
! of 16 bytes and for the x = 1 face of a [8][ny][nz] Fortran-order grid of doubles, and
! the time of one MPI_NEIGHBOR_ALLTOALLW exchange of that face between the two ranks.
program fortran_pingpong
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, peer, k
  integer, parameter :: sizes(3) = (/ 8192, 131072, 524288 /)  ! packed doubles per message
  double precision, allocatable :: buf(:)
  integer :: vec, face, elements, graph

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, (/ peer /), MPI_UNWEIGHTED, 1, &
                                      (/ peer /), MPI_UNWEIGHTED, MPI_INFO_NULL, .false., &
                                      graph, ierr)
  if (rank == 0) print '(a)', 'shape          packed bytes   one-way us (nbr a2aw: per exchange)'
  do k = 1, size(sizes)
    elements = sizes(k)
    allocate(buf(8 * elements))
    buf = dble(rank)
    call MPI_TYPE_VECTOR(elements, 1, 2, MPI_DOUBLE_PRECISION, vec, ierr)
    call MPI_TYPE_COMMIT(vec, ierr)
    call time_shape('vector b8 s16', vec, elements * 8)
    call MPI_TYPE_FREE(vec, ierr)
    ! The x = 1 face of a grid 8 doubles deep in x: one double per 64-byte line.
    call MPI_TYPE_CREATE_SUBARRAY(3, (/ 8, 64, elements / 64 /), (/ 1, 64, elements / 64 /), &
                                  (/ 0, 0, 0 /), MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, face, ierr)
    call MPI_TYPE_COMMIT(face, ierr)
    call time_shape('grid x-face', face, elements * 8)
    call time_shape('x-face nbr a2aw', face, -elements * 8)
    call MPI_TYPE_FREE(face, ierr)
    deallocate(buf)
  end do
  call MPI_COMM_FREE(graph, ierr)
  call MPI_FINALIZE(ierr)

contains

  ! A negative `signed_bytes` times MPI_NEIGHBOR_ALLTOALLW exchanges (each rank sends its
  ! buffer's face and receives the peer's into the same face) instead of a ping-pong.
  subroutine time_shape(name, type, signed_bytes)
    character(len=*), intent(in) :: name
    integer, intent(in) :: type, signed_bytes
    integer :: bytes, one(1), types(1)
    integer(kind=MPI_ADDRESS_KIND) :: zero(1)
    integer, parameter :: batches = 11
    double precision :: times(batches), t0
    integer :: batch, trip, trips, i, j
    double precision :: swap
    bytes = abs(signed_bytes)
    one = 1
    zero = 0
    types = type
    trips = max(4, 20000000 / bytes)
    do batch = 0, batches
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      t0 = MPI_WTIME()
      do trip = 1, trips
        if (signed_bytes < 0) then
          ! Two exchanges per trip, so the time per trip halves like a round trip's.
          call MPI_NEIGHBOR_ALLTOALLW(buf, one, zero, types, buf, one, zero, types, graph, ierr)
          call MPI_NEIGHBOR_ALLTOALLW(buf, one, zero, types, buf, one, zero, types, graph, ierr)
        else if (rank == 0) then
          call MPI_SEND(buf, 1, type, peer, 1, MPI_COMM_WORLD, ierr)
          call MPI_RECV(buf, 1, type, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        else
          call MPI_RECV(buf, 1, type, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
          call MPI_SEND(buf, 1, type, peer, 1, MPI_COMM_WORLD, ierr)
        end if
      end do
      ! Batch 0 warms up.
      if (batch > 0) times(batch) = (MPI_WTIME() - t0) / (2 * trips)
    end do
    do i = 2, batches
      do j = i, 2, -1
        if (times(j) < times(j - 1)) then
          swap = times(j)
          times(j) = times(j - 1)
          times(j - 1) = swap
        end if
      end do
    end do
    if (rank == 0) print '(a14, i14, f13.2)', name, bytes, times(batches / 2 + 1) * 1.d6
  end subroutine

end program
