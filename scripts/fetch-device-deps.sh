#!/usr/bin/env bash
# Unpacks the Debian packages simkit builds against into .deps/root, for the lent GPU machine,
# which reaches no package registry. Run here (Debian, x86-64), then carry `.deps`.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 \
  libquadmath0 libcli11-dev libgtest-dev libgmock-dev)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
# Keep the carry under the tool's 64 MiB: no docs, no static or LAPACK libraries.
rm -rf .deps/debs .deps/root/usr/share/doc .deps/root/usr/src
find .deps/root -path '*openblas*' \( -name '*.a' -o -name 'liblapack*' \) -delete
# The tests' real data: ../shared does not travel to the device machine, so a copy does.
# (digits only: the tests read nothing else, and wordnet alone exceeds the carry.)
mkdir -p .deps/shared/data && cp -r ../shared/data/digits ../shared/data/README.md .deps/shared/data/
du -sh .deps
