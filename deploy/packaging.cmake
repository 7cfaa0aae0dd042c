# Debian packages, built with CPack from the build tree:
#
#   cmake -S . -B build -G Ninja -DCMAKE_INSTALL_PREFIX=/usr && ninja -C build
#   (cd build && cpack -G DEB)        # or: cpack --config build/CPackConfig.cmake -B OUTDIR
#
#   mdcast-common       the mdcast user (postinst), socket-buffer sysctls, operations guide
#   mdcast-server       /usr/bin/mdcast-server, mdcast-server@.service, /etc/mdcast/server.yaml
#   mdcast-distributor  /usr/bin/mdcast-distributor, its unit, /etc/mdcast/distributor.yaml
#   mdcast-tools        mdcast-source, mdcast-client, mdcast-capture, mdcast-replay, the
#                       Wireshark dissector, /etc/mdcast/fields.dict (where they look)
#   libmdcast-dev       the client SDK: libmdcast.so, headers, CMake package, mdcast.pc, and
#                       the examples with their CMakeLists.txt (/usr/share/mdcast/examples)
#
# Each package takes what its source folder installs: the folders' own install() rules
# (without a component) are replayed here under the package's component, so a binary or
# header added there is packaged without touching this file. The files only packages have
# (units, /etc, sysctl) are EXCLUDE_FROM_ALL: a plain `cmake --install --prefix DIR` never
# writes outside DIR. Included once, at the end of the top-level CMakeLists.txt.
include(GNUInstallDirs)

set(MDCAST_DEPLOY_DIR ${PROJECT_SOURCE_DIR}/deploy)
set(MDCAST_CONFIG_DIR /etc/mdcast)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_get_variable(MDCAST_SYSTEMD_UNIT_DIR systemd systemdsystemunitdir)
endif()
if(NOT MDCAST_SYSTEMD_UNIT_DIR)
  set(MDCAST_SYSTEMD_UNIT_DIR /lib/systemd/system)  # Debian 12
endif()

# Installs everything the folder `subdir` installs without a component, as `component`.
function(mdcast_package_folder component subdir)
  set(script ${CMAKE_BINARY_DIR}/${subdir}/cmake_install.cmake)
  install(CODE "
    set(mdcast_component \"\${CMAKE_INSTALL_COMPONENT}\")
    set(CMAKE_INSTALL_COMPONENT Unspecified)
    include(\"${script}\")
    set(CMAKE_INSTALL_COMPONENT \"\${mdcast_component}\")"
    COMPONENT ${component} EXCLUDE_FROM_ALL)
endfunction()

# Installs `file` into /etc/mdcast for `component` and lists it as a conffile: an upgrade
# keeps the operator's edits (dpkg asks when both sides changed).
function(mdcast_package_config component file)
  install(FILES ${file} DESTINATION ${MDCAST_CONFIG_DIR} COMPONENT ${component} EXCLUDE_FROM_ALL)
  get_filename_component(name ${file} NAME)
  set_property(GLOBAL APPEND PROPERTY MDCAST_CONFFILES_${component} ${MDCAST_CONFIG_DIR}/${name})
endfunction()

function(mdcast_doc_dir out package)
  set(${out} ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} PARENT_SCOPE)
endfunction()

# ---- mdcast-common ---------------------------------------------------------------------
mdcast_doc_dir(common_doc mdcast-common)
install(FILES ${MDCAST_DEPLOY_DIR}/sysctl.d/60-mdcast.conf
        DESTINATION lib/sysctl.d COMPONENT common EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/README.md
        ${PROJECT_SOURCE_DIR}/docs/access-control.md
        DESTINATION ${common_doc} COMPONENT common EXCLUDE_FROM_ALL)
# The monitoring pack: Grafana dashboard, Prometheus alert rules and the scrape jobs for
# the packaged admin ports (docs/operations.md).
install(FILES ${MDCAST_DEPLOY_DIR}/monitoring/mdcast-dashboard.json
        ${MDCAST_DEPLOY_DIR}/monitoring/mdcast-alerts.yml
        ${MDCAST_DEPLOY_DIR}/monitoring/prometheus-scrape.yml
        DESTINATION share/mdcast/monitoring COMPONENT common EXCLUDE_FROM_ALL)
# Both daemons read a users file (auth.users_file); the example sits beside their configs.
mdcast_package_config(common ${PROJECT_SOURCE_DIR}/etc/users.yaml.example)

# ---- the daemons -----------------------------------------------------------------------
# Both: binary, unit, example config under /etc/mdcast, real-time drop-in and the seed's
# latency/throughput profiles as examples.
function(mdcast_package_daemon component daemon unit)
  mdcast_package_folder(${component} ${component})
  install(FILES ${MDCAST_DEPLOY_DIR}/${unit} DESTINATION ${MDCAST_SYSTEMD_UNIT_DIR}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  mdcast_package_config(${component} ${PROJECT_SOURCE_DIR}/etc/${component}.yaml)
  mdcast_doc_dir(doc ${daemon})
  install(FILES ${MDCAST_DEPLOY_DIR}/${unit}.d/10-realtime.conf.example
          DESTINATION ${doc}/examples COMPONENT ${component} EXCLUDE_FROM_ALL)
  foreach(profile latency throughput)
    install(FILES ${PROJECT_SOURCE_DIR}/etc/profiles/${profile}/${component}.yaml
            DESTINATION ${doc}/examples/profiles/${profile} COMPONENT ${component} EXCLUDE_FROM_ALL)
  endforeach()
endfunction()
mdcast_package_daemon(server mdcast-server mdcast-server@.service)
mdcast_package_daemon(distributor mdcast-distributor mdcast-distributor.service)

# ---- tools and SDK ---------------------------------------------------------------------
mdcast_package_folder(tools tools)
mdcast_package_config(tools ${PROJECT_SOURCE_DIR}/etc/fields.dict)
mdcast_doc_dir(tools_doc mdcast-tools)
install(FILES ${PROJECT_SOURCE_DIR}/docs/tools.md ${PROJECT_SOURCE_DIR}/etc/samples/items.yaml
        DESTINATION ${tools_doc} COMPONENT tools EXCLUDE_FROM_ALL)
mdcast_package_folder(dev client-sdk)

# ---- CPack -----------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mdcast)
set(CPACK_PACKAGE_VENDOR mdcast)
set(CPACK_PACKAGE_CONTACT "mdcast maintainers <maintainers@users.noreply.a-seed-b97be14e.example>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL common server distributor tools dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: from the ELF files (dpkg-shlibdeps, in dpkg-dev) plus the component
# dependencies below, pinned to this exact version.
find_program(MDCAST_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(MDCAST_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "dpkg-shlibdeps not found (dpkg-dev): .deb files will lack library Depends")
endif()
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_COMMON_PACKAGE_NAME mdcast-common)
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME mdcast-server)
set(CPACK_DEBIAN_DISTRIBUTOR_PACKAGE_NAME mdcast-distributor)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME mdcast-tools)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmdcast-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_COMMON_PACKAGE_ARCHITECTURE all)
# adduser for the mdcast user; procps for /usr/bin/kill, the units' ExecReload=.
set(CPACK_DEBIAN_COMMON_PACKAGE_DEPENDS "adduser, procps")
# The WebSocket port's framing library; dpkg-shlibdeps finds it too, this keeps the
# version floor when dpkg-dev is missing.
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "libwslay1 (>= 1.1.1)")
# mdcastctl is a Python 3 script (standard library only); shlibdeps cannot see that.
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3")
# A shlibs file for libmdcast.so (packages built against it then depend on this version
# or later); CPack has no per-component switch, and only libmdcast-dev has a library.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_COMPONENT_COMMON_DESCRIPTION
  "mdcast market-data distribution: shared host set-up\n The mdcast system user the daemons run as, socket buffer limits for the\n multicast backbone (/usr/lib/sysctl.d/60-mdcast.conf) and the operations guide.")
set(CPACK_COMPONENT_SERVER_DESCRIPTION
  "mdcast fanout server (mdcast-server)\n Joins the mdcast multicast backbone, caches every item and serves subscribers\n over TCP. Runs as the systemd template unit mdcast-server@N, one instance per core.")
set(CPACK_COMPONENT_DISTRIBUTOR_DESCRIPTION
  "mdcast source distributor (mdcast-distributor)\n Accepts publisher connections and multicasts their updates onto the reliable\n mdcast backbone. Runs as the systemd unit mdcast-distributor.")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "mdcast load and test tools\n mdcast-source (paced load publisher) and mdcast-client (test client with\n latency statistics), with the field dictionary in /etc/mdcast, mdcast-passwd\n (password hashes for the users file), mdcast-capture and mdcast-replay (backbone\n captures as pcap files, published again) and a Wireshark dissector\n (/usr/share/mdcast/wireshark/mdcast.lua).")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "mdcast client SDK (libmdcast) and its development files\n Consumer and publisher C++20 APIs: shared library, headers, CMake package\n (find_package(mdcast)), pkg-config file (mdcast.pc), and a consumer and a\n publisher example with their CMakeLists.txt in /usr/share/mdcast/examples.")
set(CPACK_COMPONENT_SERVER_DEPENDS common)
set(CPACK_COMPONENT_DISTRIBUTOR_DEPENDS common)

# Control files: maintainer scripts (POSIX sh) from deploy/debian/<component>.<script>,
# and conffiles from mdcast_package_config().
foreach(component common server distributor tools)
  string(TOUPPER ${component} upper)
  set(control_dir ${CMAKE_BINARY_DIR}/deploy/debian/${component})
  set(extra)
  foreach(script postinst prerm postrm)
    if(EXISTS ${MDCAST_DEPLOY_DIR}/debian/${component}.${script})
      configure_file(${MDCAST_DEPLOY_DIR}/debian/${component}.${script} ${control_dir}/${script}
                     COPYONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                     GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
      list(APPEND extra ${control_dir}/${script})
    endif()
  endforeach()
  get_property(conffiles GLOBAL PROPERTY MDCAST_CONFFILES_${component})
  if(conffiles)
    list(JOIN conffiles "\n" text)
    file(WRITE ${control_dir}/conffiles "${text}\n")
    list(APPEND extra ${control_dir}/conffiles)
  endif()
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA ${extra})
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
