#!/usr/bin/env bash
# Installs this build into a fresh prefix, then configures, builds and runs tests/consumer
# against it: the package (headers, library, simkitConfig.cmake, simkit::simkit) must be enough
# for an outside project, and the installed `simkit` must run from the prefix.
#
#   consumer.sh CMAKE BUILD_DIR CONSUMER_SOURCE WORK_DIR CXX_COMPILER CONFIG
set -eu
cmake=$1
build=$2
source=$3
work=$4
cxx=$5
config=${6:-Release}
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix

"$cmake" --install "$build" --prefix "$prefix" --config "$config" >"$work/install.log"
for f in include/simkit/simkit.hpp include/simkit/knn.hpp bin/simkit; do
  [ -e "$prefix/$f" ] || { echo "FAIL: the install has no $f"; exit 1; }
done
ls "$prefix"/lib*/cmake/simkit/simkitConfig.cmake >/dev/null

# Only the prefix may provide simkit: no package registry, no build tree.
"$cmake" -S "$source" -B "$work/build" -DCMAKE_BUILD_TYPE="$config" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
grep "simkit_DIR=" "$work/configure.log"
grep -q "simkit_DIR=$prefix/" "$work/configure.log" || { echo "FAIL: simkit was not found in the prefix"; exit 1; }
"$cmake" --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/simkit_consumer"
"$prefix/bin/simkit" info | head -1
