#!/usr/bin/env bash
# Regenerate docs/demo-report.png — the README's picture of the HTML report — from a
# fresh `stalemate demo` run, rendered by headless Chromium. Never edit the image by hand.
#
#   bash docs/screenshot.sh
set -euo pipefail
cd "$(dirname "$0")/.."
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "screenshot.sh: needs chromium (apt-get install chromium)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo build --release --bin stalemate >&2
target/release/stalemate demo --settle 3s --report-html "$tmp/report.html" >/dev/null
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size=1140,560 --screenshot="$tmp/report.png" "file://$tmp/report.html" >/dev/null 2>&1
cp "$tmp/report.png" docs/demo-report.png
echo "docs/demo-report.png updated" >&2
