# Include roots: a target sees the public headers of the targets it links and its own
# private headers, nothing else (DESIGN.md, "Layers"). The repository root is on no
# include path of any library or executable; includes keep their repository spelling
# ("core/algo/pca.hpp") and resolve through symbolic links made at configure time:
#
#   ${PROJECT_BINARY_DIR}/include/<target>/<dir>/<header>          public root
#   ${PROJECT_BINARY_DIR}/include-private/<target>/<dir>/<header>  private root
#
# fathom_include_roots(<target> [PUBLIC <dir>...] [PRIVATE <dir>...])
#
#   PUBLIC <dir>   folder relative to the repository root (core/algo, gpu, ui/vtk). Its
#                  headers (*.hpp, *.h, directly in the folder) go to the public root, a
#                  PUBLIC include directory of <target> (INTERFACE for an interface
#                  library). Its detail/ folder (any depth) and nvcc-only *.cuh headers go
#                  to the private root, a PRIVATE include directory: the target's own
#                  sources see them, the targets that link it do not. Other sub-folders
#                  are not included: name them as their own <dir>.
#   PRIVATE <dir>  every header under the folder goes to the private root (executables'
#                  own headers: app/cli, bench).
#
# Headers are globbed with CONFIGURE_DEPENDS: a header added to a folder gets its link at
# the next build. Both roots are rebuilt from scratch at every configure, so the link of a
# removed or moved header goes too.
function(fathom_include_roots target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PUBLIC;PRIVATE")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fathom_include_roots(${target}): unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(public_root ${PROJECT_BINARY_DIR}/include/${target})
  set(private_root ${PROJECT_BINARY_DIR}/include-private/${target})
  file(REMOVE_RECURSE ${public_root} ${private_root})

  set(public_headers)
  set(private_headers)
  foreach(dir IN LISTS arg_PUBLIC)
    set(folder ${PROJECT_SOURCE_DIR}/${dir})
    if(NOT IS_DIRECTORY ${folder})
      message(FATAL_ERROR "fathom_include_roots(${target}): no folder ${dir}")
    endif()
    file(GLOB found CONFIGURE_DEPENDS ${folder}/*.hpp ${folder}/*.h)
    list(APPEND public_headers ${found})
    file(GLOB found CONFIGURE_DEPENDS ${folder}/*.cuh)
    list(APPEND private_headers ${found})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${folder}/detail/*.hpp ${folder}/detail/*.h ${folder}/detail/*.cuh)
    list(APPEND private_headers ${found})
  endforeach()
  foreach(dir IN LISTS arg_PRIVATE)
    set(folder ${PROJECT_SOURCE_DIR}/${dir})
    if(NOT IS_DIRECTORY ${folder})
      message(FATAL_ERROR "fathom_include_roots(${target}): no folder ${dir}")
    endif()
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${folder}/*.hpp ${folder}/*.h ${folder}/*.cuh)
    list(APPEND private_headers ${found})
  endforeach()

  foreach(kind IN ITEMS public private)
    foreach(header IN LISTS ${kind}_headers)
      file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${header})
      get_filename_component(parent ${${kind}_root}/${relative} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${header} ${${kind}_root}/${relative} SYMBOLIC)
    endforeach()
  endforeach()

  get_target_property(type ${target} TYPE)
  if(arg_PUBLIC)
    file(MAKE_DIRECTORY ${public_root})
    if(type STREQUAL "INTERFACE_LIBRARY")
      target_include_directories(${target} INTERFACE ${public_root})
    else()
      target_include_directories(${target} PUBLIC ${public_root})
    endif()
    # Where the public root is, for the rare source that needs one library's headers
    # without its other usage requirements (app/CMakeLists.txt).
    set_property(TARGET ${target} PROPERTY FATHOM_PUBLIC_INCLUDE_ROOT ${public_root})
  endif()
  if(private_headers)
    if(type STREQUAL "INTERFACE_LIBRARY")
      message(FATAL_ERROR "fathom_include_roots(${target}): an interface library has no private headers")
    endif()
    target_include_directories(${target} PRIVATE ${private_root})
  endif()
endfunction()
