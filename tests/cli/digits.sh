#!/usr/bin/env bash
# Acceptance on real data: exact k-NN over the UCI digits (1,697 base rows, 100 queries, d = 64,
# integer pixels, so many exact ties) must reproduce the float64 ground truth row for row, ties
# to the lower id, byte for byte in .ivecs, and print recall@100 = 1.000.
#
#   digits.sh SIMKIT_BINARY DATA_DIR WORK_DIR DEVICE      (DEVICE: cpu or gpu)
# DATA_DIR is the repository's tests/data, which ships the digits: a missing file is a failure.
# Exits 77 (CTest: skipped) for gpu when no usable GPU is visible.
set -u
simkit=$1
data=$2/digits
work=$3
device=$4
for f in digits_base.fvecs digits_query.fvecs digits_groundtruth_sqeuclidean.ivecs; do
  if [ ! -f "$data/$f" ]; then
    echo "FAIL: $data/$f not found (it ships in the repository; scripts/make-data.sh digits remakes it)"
    exit 1
  fi
done
if [ "$device" = gpu ] && ! "$simkit" info | grep -q "^    gpu 0:"; then
  echo "skipped: no usable GPU ($("$simkit" info | grep GPUs))"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
status=0

for metric in sqeuclidean l2; do
  # l2 is the square root of sqeuclidean: same order, same ties, so the same ids.
  "$simkit" knn --base "$data/digits_base.fvecs" --queries "$data/digits_query.fvecs" -k 100 --metric $metric \
    --truth "$data/digits_groundtruth_sqeuclidean.ivecs" --ids ids_$metric.ivecs --distances d_$metric.npy \
    --device "$device" >stdout.txt 2>stderr.txt
  rc=$?
  cat stdout.txt stderr.txt
  [ $rc -eq 0 ] || { echo "FAIL: $metric: exit status $rc"; status=1; continue; }
  grep -q "^recall@100 = 1.000 " stdout.txt || { echo "FAIL: $metric: recall@100 is not 1.000"; status=1; }
  if cmp ids_$metric.ivecs "$data/digits_groundtruth_sqeuclidean.ivecs"; then
    echo "ok: $metric ids equal the ground truth byte for byte"
  else
    echo "FAIL: $metric ids differ from the ground truth"
    status=1
  fi
done

# k = 10 against the 100-wide truth: recall uses the truth's first k columns.
"$simkit" knn --base "$data/digits_base.fvecs" --queries "$data/digits_query.fvecs" -k 10 --metric sqeuclidean \
  --truth "$data/digits_groundtruth_sqeuclidean.ivecs" --ids ids10.npy --device "$device" >stdout.txt 2>&1
grep -q "^recall@10 = 1.000 " stdout.txt || { echo "FAIL: recall@10: $(cat stdout.txt)"; status=1; }
[ $status -eq 0 ] && echo "digits acceptance on $device: passed"
exit $status
