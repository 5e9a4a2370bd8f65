#!/usr/bin/env bash
# One device call: unpack the carry, gpu-fused.sh (checks + speed, one round), then the
# Nsight Compute profile of one rank's step kernels; everything archived into $OUT.
set -uo pipefail
t0=$SECONDS
c=/tmp/c; mkdir -p $c && tar xJf carry/x/pack.tar.xz -C $c || exit 3
echo "unpacked in $((SECONDS-t0)) s"; ls $c
export ROUNDS=${ROUNDS:-1}
timeout 470 bash bench/gpu-fused.sh $c $OUT/fused ${PARTS:-all} > $OUT/fused.txt 2>&1
echo "gpu-fused exit $? after $((SECONDS-t0)) s"
grep -E '^=== |^--- |verified|PASS|FAIL|SUMMARY|step median|compute alone' $OUT/fused.txt | tail -n 120
sed -n '/=== summary/,$p' $OUT/fused.txt
if [ $((SECONDS-t0)) -lt ${PROFILE_BEFORE:-430} ]; then
  timeout $((560-(SECONDS-t0))) bash bench/gpu-fused-profile.sh $c $OUT/prof > $OUT/prof.txt 2>&1
  echo "profile exit $? after $((SECONDS-t0)) s"; cat $OUT/prof.txt | tail -n 80
fi
rm -f $OUT/fused.tar.gz $OUT/prof.tar.gz
tar czf $OUT/all.tar.gz -C $OUT fused prof fused.txt prof.txt 2>/dev/null
rm -rf $OUT/fused $OUT/prof
ls -la $OUT
