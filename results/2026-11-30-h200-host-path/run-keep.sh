#!/usr/bin/env bash
# Leaves carry/haloport-NAME.xz's binary in /tmp/keep for a later call on the same warm machine
# (one call's carry holds only one build beside the tree).
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-keep.sh NAME
mkdir -p /tmp/keep && xz -dc "carry/haloport-$1.xz" > "/tmp/keep/haloport-$1" &&
    chmod +x "/tmp/keep/haloport-$1" && ls -la /tmp/keep
