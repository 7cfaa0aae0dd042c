# The mdcast Python package's tests (pytest, against the real daemons), one CTest
# test per file; included from tests/client-sdk/tests.cmake when the package is built.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pytest"
                RESULT_VARIABLE MDCAST_NO_PYTEST OUTPUT_QUIET ERROR_QUIET)
if(MDCAST_NO_PYTEST)
  message(WARNING "pytest is not installed for ${Python3_EXECUTABLE} (python3-pytest): "
                  "the Python package's tests are not registered")
  return()
endif()
set(MDCAST_PYTHON_ENV ${MDCAST_BIN_ENV} ${MDCAST_SDK_ENV}
    "PYTHONPATH=${PROJECT_BINARY_DIR}/client-sdk/python"
    "MDCAST_PYTHON_EXAMPLES=${PROJECT_SOURCE_DIR}/client-sdk/python/examples"
    # test_pip_install.py: the wheel's CMake build, kept between runs (incremental)
    "MDCAST_PYTHON_BUILD_DIR=${PROJECT_BINARY_DIR}/python-wheel")
foreach(name consumer failover errors receive_modes publisher examples exit large_messages
             dropped sdk_log snapshot reasons pip_install posting trades dual_home books
             frame_limit)
  add_test(NAME python_${name}
           COMMAND ${Python3_EXECUTABLE} -B -m pytest -q -p no:cacheprovider -rs
                   ${CMAKE_CURRENT_SOURCE_DIR}/client-sdk/python/test_${name}.py)
  set_tests_properties(python_${name} PROPERTIES ENVIRONMENT "${MDCAST_PYTHON_ENV}"
                       TIMEOUT 240 LABELS "integration;sdk;python")
endforeach()
# pip install builds libmdcast and the extension once more (Release, in python-wheel/): from
# scratch on a clean clone, ~80 compilations (20 min on a loaded 2-core machine); then incremental.
set_tests_properties(python_pip_install PROPERTIES TIMEOUT 3600)
