#!/bin/sh
# Copies the minified browser libraries the view embeds from node_modules
# into static/, from the versions package-lock.json pins. Run by
# `go generate ./webview`; the result is committed, so building Baton needs
# neither node nor npm.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --ignore-scripts
cp node_modules/htmx.org/dist/htmx.min.js static/htmx.min.js
cp node_modules/htmx-ext-sse/dist/sse.min.js static/sse.min.js
cp node_modules/mermaid/dist/mermaid.min.js static/mermaid.min.js
{
	echo "The browser libraries in this directory, copied by vendor.sh from npm:"
	for p in htmx.org htmx-ext-sse mermaid; do
		v=$(node -p "const p = require('./node_modules/$p/package.json'); p.version + ' ' + (p.license || 'see its LICENSE file')")
		echo "$p $v"
	done
} > static/VENDORED.txt
for p in htmx.org htmx-ext-sse mermaid; do
	cp "node_modules/$p/LICENSE" "static/LICENSE.$p.txt"
done
