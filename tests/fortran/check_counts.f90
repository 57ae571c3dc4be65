! Counting of checks for the Fortran test programs: each check passes or prints what failed.
module check_counts
  implicit none
  integer :: cases = 0, failures = 0
  integer :: check_rank = 0  ! printed with a failure

contains

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    cases = cases + 1
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,a,a)', 'rank ', check_rank, ' FAILED: ', what
    end if
  end subroutine

end module
