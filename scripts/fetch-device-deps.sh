#!/usr/bin/env bash
# Unpacks the Debian packages simkit builds against into .deps/root, for the lent GPU machine,
# which reaches no package registry. Run here (Debian, x86-64), then carry `.deps`.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
# The OpenCL headers (C and C++) and the ICD loader's libOpenCL.so, for the merge sort study's
# OpenCL port (cmake/SimkitOpenCL.cmake): the machine has NVIDIA's OpenCL driver but no -dev
# packages. ocl-icd-libopencl1 comes too, since the -dev package's libOpenCL.so is a link to its
# libOpenCL.so.1.0.0, which find_library needs beside it; at run time that loader (on
# LD_LIBRARY_PATH in scripts/device-check.sh) finds NVIDIA's driver by /etc/OpenCL/vendors.
(cd .deps/debs && apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 \
  libquadmath0 libcli11-dev libgtest-dev libgmock-dev \
  ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
# The server's libraries (apps/server/): SQLite, prometheus-cpp's core, nlohmann-json, simdjson,
# yaml-cpp (serve --config), and of
# Boost (about 180 MB of headers) only the ones the server and loadgen include, as g++ lists them.
# (prometheus-cpp's CMake package wants civetweb, zlib and curl for pull and push, which the
# server does not use: cmake/SimkitServer.cmake then finds the core library by itself.)
mkdir -p .deps/server-debs .deps/server
(cd .deps/server-debs && apt-get download libboost1.81-dev libsqlite3-dev libsqlite3-0 libprometheus-cpp-core1.0 \
  prometheus-cpp-dev nlohmann-json3-dev libsimdjson-dev libsimdjson14 libyaml-cpp-dev libyaml-cpp0.7)
for f in .deps/server-debs/*.deb; do dpkg -x "$f" .deps/server; done
srv=.deps/server/usr
for f in $(g++ -std=c++20 -MM -DBOOST_ASIO_NO_DEPRECATED -DBOOST_BEAST_USE_STD_STRING_VIEW -I"$srv/include" -Iinclude -Iapps/server -I/usr/include apps/server/*.cpp apps/cli/loadgen_*.cpp \
             2>/dev/null | tr ' \\' '\n\n' | grep -o "$srv/include/boost/.*"); do
  install -D -m 644 "$f" ".deps/root/usr/${f#$srv/}"
done
rm -rf "$srv/include/boost" "$srv/share/doc" "$srv/lib/x86_64-linux-gnu/cmake/prometheus-cpp"
cp -a "$srv/." .deps/root/usr/
rm -rf .deps/server-debs .deps/server
# Keep the carry under the tool's 64 MiB: no docs, no static or LAPACK libraries.
rm -rf .deps/debs .deps/root/usr/share/doc .deps/root/usr/src
find .deps/root \( -path '*openblas*' -a \( -name '*.a' -o -name 'liblapack*' \) \) -o -name 'libsqlite3.a' \
  -o -name 'libyaml-cpp.a' -o -name 'libsimdjson.a' | xargs rm -f
# Packed: unpacked it is 58 MiB (OpenBLAS alone 35), which with the working tree passes the
# carry's 64 MiB; xz makes it about 12. scripts/device-check.sh unpacks it on the machine.
tar -C .deps -cJf .deps/root.tar.xz root && rm -rf .deps/root
# ../shared does not travel to the device machine, so a copy of what is needed does. (The digits
# travel with the working tree, in tests/data; of wordnet only the queries: its base alone
# exceeds the carry.)
mkdir -p .deps/shared/data/wordnet && cp ../shared/data/README.md .deps/shared/data/
# The WordNet queries (7.7 MB) drive `simkit loadgen` against the server (device-check.sh serve).
cp ../shared/data/wordnet/queries_minilm_f16.npy .deps/shared/data/wordnet/
du -sh .deps
