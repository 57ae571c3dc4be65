#!/bin/bash
# A/B of the app corpus: old = 8dc6efc's libloom.so (copied to /tmp/fa-o, /tmp/fa-m), new = 8dc6efc
# with kNoPredictionWait 80 (not kept: docs/app-mode.md), through far-ahead/run.sh.
# Usage: run.sh o|m N (pairs); summary: python3 docs/results/2026-11-29-s50/compare.py DIR -v
OUT=$(dirname "$0") OLD_O=/tmp/fa-o OLD_M=/tmp/fa-m exec "$(dirname "$0")/../far-ahead/run.sh" "$@"
