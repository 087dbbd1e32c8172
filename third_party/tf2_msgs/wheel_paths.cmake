# Loaded with -DCMAKE_PROJECT_INCLUDE by scripts/build_tf2_msgs.sh (not part of upstream
# tf2_msgs). The ros-<distro>-*-msgs PyPI wheels export their rosidl_generator_py targets with
# the include directories of the machine that built them (/opt/python/cp3XX-cp3XX/include/
# python3.X and its numpy), which CMake rejects as non-existent; at the end of the
# configure step this points them at this Python's headers and numpy (G4H_PYTHON_INCLUDE,
# G4H_NUMPY_INCLUDE, passed by the script). A system ROS 2 install never needs it.
function(_g4h_fix_wheel_include_dirs)
  get_directory_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" IMPORTED_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_inc ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(_inc AND _inc MATCHES "/opt/python/")
      set(_new "")
      foreach(_d IN LISTS _inc)
        if(_d MATCHES "^/opt/python/.*/numpy/")
          set(_d "${G4H_NUMPY_INCLUDE}")
        elseif(_d MATCHES "^/opt/python/[^/]+/include/python")
          set(_d "${G4H_PYTHON_INCLUDE}")
        endif()
        list(APPEND _new "${_d}")
      endforeach()
      set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new}")
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _g4h_fix_wheel_include_dirs)
