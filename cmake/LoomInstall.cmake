# Install rules shared by every Loom library (docs/install.md).
#
# One pattern per installable library: call loom_install_library() on its target. That installs
# it into a component of the CMake package (find_package(Loom COMPONENTS <component>), imported
# target Loom::<export name>) and writes a pkg-config file for it. loom_install_package(), once
# at the end of the top-level CMakeLists.txt, writes the package's config and version files.
#
# Layout (GNUInstallDirs; each MPI's build installs into the same prefix beside the other):
#   lib/libloom_match.{so,a}               MPI-free libraries, identical from either build
#   lib/loom/<mpi>/libloom.so              the interposer built against <mpi>
#   libexec/loom/<mpi>/loom-bench          loom-bench built against <mpi>
#   bin/loomrun, bin/loom-bench, bin/loom-plot   MPI-neutral dispatchers
#   lib/cmake/Loom/, lib/pkgconfig/        package files, one targets file per component
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LOOM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
set(LOOM_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# Per-MPI files live in a directory named after the MPI, so both builds share one prefix and
# each library keeps its plain name (-L<prefix>/lib/loom/mpich -lloom).
set(LOOM_INSTALL_MPI_LIBDIR ${CMAKE_INSTALL_LIBDIR}/loom/${LOOM_MPI})
set(LOOM_INSTALL_MPI_LIBEXECDIR ${CMAKE_INSTALL_LIBEXECDIR}/loom/${LOOM_MPI})

# loom_relative_install_path(<out> <from dir> <to dir>): the path from one install directory to
# another, for $ORIGIN RPATHs and for scripts that find their files from where they are, so an
# installed tree still works after `cmake --install --prefix` elsewhere or after being moved.
# Absolute install directories would break those relative paths, so they are refused.
function(loom_relative_install_path out from to)
  foreach(dir from to)
    if(IS_ABSOLUTE "${${dir}}")
      message(FATAL_ERROR "Loom installs a relocatable tree: install directories must be "
                          "relative to the prefix, not '${${dir}}' (see docs/install.md)")
    endif()
    set(${dir} "/loom-prefix/${${dir}}")
  endforeach()
  file(RELATIVE_PATH relative "${from}" "${to}")
  string(REGEX REPLACE "/$" "" relative "${relative}")
  if(relative STREQUAL "")
    set(relative ".")
  endif()
  set(${out} "${relative}" PARENT_SCOPE)
endfunction()

# loom_install_library(<target> COMPONENT <component> EXPORT_NAME <name> [PKG_NAME <pc file>]
#                      [DESCRIPTION <text>] [DESTINATION <library dir>] [PKG_REQUIRES <modules>]
#                      [PKG_LIBS <flags>] [PKG_LIBS_PRIVATE <flags>])
#   Installs <target> (DESTINATION defaults to CMAKE_INSTALL_LIBDIR) into the export set of
#   <component>, as imported target Loom::<name>. With PKG_NAME, also writes <pc file>.pc whose
#   Libs link the library (PKG_LIBS replaces the default -L<dir> -l<name>).
function(loom_install_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
                        "COMPONENT;EXPORT_NAME;PKG_NAME;DESCRIPTION;DESTINATION;PKG_REQUIRES"
                        "PKG_LIBS;PKG_LIBS_PRIVATE")
  if(NOT arg_COMPONENT OR NOT arg_EXPORT_NAME)
    message(FATAL_ERROR "loom_install_library(${target}): COMPONENT and EXPORT_NAME are required")
  endif()
  if(NOT arg_DESTINATION)
    set(arg_DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${arg_EXPORT_NAME})
  install(TARGETS ${target} EXPORT LoomTargets_${arg_COMPONENT}
          LIBRARY DESTINATION ${arg_DESTINATION} ARCHIVE DESTINATION ${arg_DESTINATION}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set_property(GLOBAL APPEND PROPERTY LOOM_INSTALL_COMPONENTS ${arg_COMPONENT})

  if(arg_PKG_NAME)
    # The .pc file finds the prefix from its own location, so the tree stays relocatable.
    loom_relative_install_path(pc_to_prefix ${LOOM_INSTALL_PKGCONFIGDIR} "")
    loom_relative_install_path(prefix_to_libdir "" ${arg_DESTINATION})
    loom_relative_install_path(prefix_to_includedir "" ${CMAKE_INSTALL_INCLUDEDIR})
    if(NOT arg_PKG_LIBS)
      get_target_property(output_name ${target} OUTPUT_NAME)
      if(NOT output_name)
        set(output_name ${target})
      endif()
      set(arg_PKG_LIBS "-L\${libdir} -l${output_name}")
    endif()
    list(JOIN arg_PKG_LIBS " " pkg_libs)
    list(JOIN arg_PKG_LIBS_PRIVATE " " pkg_libs_private)
    set(pkg_name ${arg_PKG_NAME})
    set(pkg_description "${arg_DESCRIPTION}")
    set(pkg_requires "${arg_PKG_REQUIRES}")
    configure_file(${PROJECT_SOURCE_DIR}/cmake/loom.pc.in
                   ${PROJECT_BINARY_DIR}/pkgconfig/${arg_PKG_NAME}.pc @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${arg_PKG_NAME}.pc
            DESTINATION ${LOOM_INSTALL_PKGCONFIGDIR})
  endif()
endfunction()

# Headers, docs, and the package's config and version files; one targets file per component.
function(loom_install_package)
  # The public headers; testing.h (loom-bench's and the tests' test-only API) is not one.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN testing.h EXCLUDE)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

  get_property(components GLOBAL PROPERTY LOOM_INSTALL_COMPONENTS)
  list(REMOVE_DUPLICATES components)
  foreach(component IN LISTS components)
    install(EXPORT LoomTargets_${component} FILE LoomTargets_${component}.cmake
            NAMESPACE Loom:: DESTINATION ${LOOM_INSTALL_CMAKEDIR})
  endforeach()
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/LoomConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/LoomConfig.cmake
                                INSTALL_DESTINATION ${LOOM_INSTALL_CMAKEDIR})
  # 0.x: only the same minor version promises compatibility.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/LoomConfig.cmake ${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake
          DESTINATION ${LOOM_INSTALL_CMAKEDIR})
endfunction()
