# Layer rules the build enforces (docs/architecture.md, "Rules that keep it so").
#
# No target has the source root as an include directory. A folder's headers are reached through
# its view, <build>/layers/<folder>/<folder> (a link to the folder), so includes keep their form
# (`#include "pack/plan.hpp"`), and a view is an include directory only of the folder's own
# library and of the targets that link it: a target that includes a header of a layer it does
# not link does not compile. What every target may include (base/, header-only, and the public
# API in include/loom/) comes with loom_base. tests/layering checks each target's include
# directories and links against the layer table (loom_write_layer_table below).

set(LOOM_LAYER_VIEWS ${PROJECT_BINARY_DIR}/layers)

# loom_folder_headers(<target> <PUBLIC|PRIVATE|INTERFACE> <folder>...): gives <target> the view
# of each folder (a top-level folder of the source tree: pack, tests, bench, ...).
function(loom_folder_headers target scope)
  foreach(folder ${ARGN})
    set(view ${LOOM_LAYER_VIEWS}/${folder})
    if(NOT IS_SYMLINK ${view}/${folder})
      file(MAKE_DIRECTORY ${view})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${view}/${folder} SYMBOLIC)
    endif()
    target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${view}>)
  endforeach()
endfunction()

# loom_own_headers(<target> <scope>): the view of the folder <target> is defined in.
function(loom_own_headers target scope)
  get_target_property(dir ${target} SOURCE_DIR)
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${dir})
  string(REGEX REPLACE "/.*" "" folder "${relative}")
  loom_folder_headers(${target} ${scope} ${folder})
endfunction()

# What every folder may include: base/ and the public headers (include/loom/).
add_library(loom_base INTERFACE)
loom_folder_headers(loom_base INTERFACE base)
target_include_directories(loom_base INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)

# loom_write_layer_table(<file>): one line per target of the build (tab-separated): its name, the
# folder it is defined in, its include directories (its own and those its links bring) and the
# targets it links (tests/layering/check_layers.py --targets).
function(loom_write_layer_table file)
  loom_targets_in(${PROJECT_SOURCE_DIR} targets)
  set(lines "")
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(dir ${target} SOURCE_DIR)
    file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${dir})
    string(APPEND lines "${target}\t${folder}\t$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>\t"
                        "$<TARGET_PROPERTY:${target},LINK_LIBRARIES>\n")
  endforeach()
  file(GENERATE OUTPUT ${file} CONTENT "${lines}")
endfunction()

function(loom_targets_in dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    loom_targets_in(${subdir} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()
