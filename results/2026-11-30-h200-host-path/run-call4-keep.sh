#!/usr/bin/env bash
# Before call 4, on the same warm machine: leaves the head's build (A, f9a1324) in /tmp/keep.
#   carry/haloport-A.xz.
mkdir -p /tmp/keep && xz -dc carry/haloport-A.xz > /tmp/keep/haloport-A && chmod +x /tmp/keep/haloport-A
